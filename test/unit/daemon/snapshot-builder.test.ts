// The snapshot the tray, dashboard and CLI read: what holds memory, and where.
import { describe, expect, it } from 'vitest';
import type { CatalogModel } from '../../../core/catalog/catalog.js';
import type { ClientKeyConfig } from '../../../core/catalog/config/load-config.js';
import { ModelActivity } from '../../../core/demand/activity.js';
import { buildSnapshot, type SnapshotParts } from '../../../core/daemon/snapshot-builder.js';
import type { BudgetSample } from '../../../core/gpu/live-budget.js';
import { footprintAt } from '../../../core/policy/levels.js';
import { FakeClock } from '../../support/fake-clock.js';
import { catalogModel } from '../../support/catalog-model.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

const chat = catalogModel('chat', {
  draftId: 'draft',
  estimate: {
    weightsBytes: 6 * GiB,
    kvBytesPerToken: 128 * 1024,
    contextTokens: 8192,
    computeBytes: 300 * MiB,
    draft: { weightsBytes: 500 * MiB, kvBytesPerToken: 16 * 1024, contextTokens: 8192, computeBytes: 50 * MiB },
  },
});
const idle = catalogModel('idle');

function gpu(index: number, budgetBytes: number): BudgetSample['perGpu'][number] {
  return { index, name: `GPU ${index}`, vendor: 'NVIDIA', busAddress: null, deviceClass: 'nvidia:rtx-4090', totalBytes: budgetBytes + GiB, usedBytes: GiB, usedByOthersBytes: 512 * MiB, usedByUsBytes: 0, reserveBytes: 512 * MiB, budgetBytes };
}

/** What the controller's last pass counted for chat: `bytes` on GPU 0, at `level`. */
function counted(bytes: number, level: 'full' | 'partial' = 'full'): SnapshotParts['controller'] {
  return {
    status: (id) => (id === 'chat' ? ({ level } as never) : undefined),
    lastPlan: () => null,
    placement: () => null,
    held: (id) => (id === 'chat' ? { bytes, placement: { kind: 'gpu', devices: [{ index: 0, layers: 0, bytes }], cpuMoeLayers: 0, hostBytes: 0 } } : null),
  };
}

/** The catalog part: `models`, and a config whose listen.clientKeys are `clientKeys`. */
function catalogOf(models: CatalogModel[], clientKeys: ClientKeyConfig[] = []): SnapshotParts['catalog'] {
  const listen = { host: '127.0.0.1', port: 11435, clientKeys, allowedHosts: [], corsOrigins: [], admin: 'loopback' };
  return { models: () => models, problems: () => [], configInForce: () => 'file', config: () => ({ modelDirs: ['/models'], listen }) as never };
}

function parts(overrides: Partial<SnapshotParts> = {}, sample: BudgetSample | null = null): SnapshotParts {
  return {
    startedAt: 1,
    endpoint: () => 'http://127.0.0.1:11435/v1',
    networkEndpoints: () => [],
    networkListener: false,
    catalog: catalogOf([chat, idle]),
    controller: counted(footprintAt('full', chat.estimate!).deviceBytes),
    supervisor: {
      status: () => null,
      endpointFor: (id: string) => (id === 'chat' ? { port: 40001, apiKey: 'engine-secret-77', pid: 77, level: 'full', startedAt: 1, readyAt: 2 } : null),
      inFlight: () => 0,
    },
    activity: new ModelActivity(new FakeClock()),
    isPinned: () => false,
    wanted: (id) => id === 'chat',
    engineOf: () => 'embedded',
    measuredBytes: () => null,
    budget: () => sample,
    limitBytes: () => null,
    configPath: '/cfg/config.yaml',
    lostOutputs: () => [],
    ...overrides,
  };
}

describe('buildSnapshot', () => {
  it('shows a resident pair as the model and its draft, with the bytes the last plan counted', () => {
    const snapshot = buildSnapshot(parts());
    const total = footprintAt('full', chat.estimate!).deviceBytes;
    const draft = footprintAt('full', chat.estimate!.draft!).deviceBytes;
    expect(snapshot.budget.holders).toEqual([
      { kind: 'model', modelId: 'chat', bytes: total - draft },
      { kind: 'draft', modelId: 'draft', bytes: draft },
    ]);
    expect(snapshot.budget.usedBytes).toBe(total);
    const view = snapshot.models.find((m) => m.id === 'chat');
    expect(view?.upstream).toEqual({ baseUrl: 'http://127.0.0.1:40001', pid: 77 });
    // The engine's per-launch key stays with the router: the snapshot goes to every admin client.
    expect(JSON.stringify(snapshot)).not.toContain('engine-secret-77');
    expect(view?.desired).toBe(true);
    expect(snapshot.models.find((m) => m.id === 'idle')?.upstream).toBeNull();
  });

  it('shows the warm spare after the models, counted in what is used, while one runs', () => {
    const total = footprintAt('full', chat.estimate!).deviceBytes;
    const withSpare = buildSnapshot(parts({ spareBytes: () => 100 * MiB }));
    expect(withSpare.budget.holders.at(-1)).toEqual({ kind: 'spare', modelId: null, bytes: 100 * MiB });
    expect(withSpare.budget.usedBytes).toBe(total + 100 * MiB);
    expect(buildSnapshot(parts({ spareBytes: () => null })).budget.holders.map((h) => h.kind)).toEqual(['model', 'draft']);
  });

  it('shows a pair at partial as the primary’s device share and its whole draft, which stays on the device', () => {
    const split = { ...chat.estimate!, layers: 32, draft: { ...chat.estimate!.draft!, layers: 24 } };
    const model = { ...chat, estimate: split };
    const snapshot = buildSnapshot(
      parts({
        catalog: catalogOf([model]),
        supervisor: { status: () => null, endpointFor: () => ({ port: 40001, apiKey: 'k', pid: 77, level: 'partial', startedAt: 1, readyAt: 2 }), inFlight: () => 0 },
        controller: counted(footprintAt('partial', split).deviceBytes, 'partial'),
      }),
    );
    const { draft, ...primary } = split;
    expect(snapshot.budget.holders).toEqual([
      { kind: 'model', modelId: 'chat', bytes: footprintAt('partial', primary).deviceBytes },
      { kind: 'draft', modelId: 'draft', bytes: footprintAt('smaller-context', draft).deviceBytes },
    ]);
    expect(snapshot.budget.usedBytes).toBe(footprintAt('partial', split).deviceBytes);
    expect(snapshot.models[0]?.estimateBytes.partial).toBe(footprintAt('partial', split).deviceBytes);
    // "30 of 32 layers on GPU 0" needs the block count the layers are counted against.
    expect(snapshot.models[0]?.layerCount).toBe(32);
  });

  it('gives no block count where the metadata had none', () => {
    expect(buildSnapshot(parts()).models.map((m) => m.layerCount)).toEqual([null, null]);
  });

  it('shows each model’s requests in flight as the claims on its server, and those waiting for it apart', () => {
    const activity = new ModelActivity(new FakeClock());
    activity.wait('idle');
    const done = activity.wait('idle');
    activity.wait('chat');
    done();
    const base = parts().supervisor;
    const snapshot = buildSnapshot(parts({ activity, supervisor: { ...base, inFlight: (id) => (id === 'chat' ? 3 : 0) } }));
    expect(snapshot.models.map((m) => [m.id, m.inFlight, m.waiting])).toEqual([
      ['chat', 3, 1],
      ['idle', 0, 1],
    ]);
  });

  it('shows what the plan counted, a measurement included, keeping the draft’s share — not a figure of its own', () => {
    const snapshot = buildSnapshot(parts({ controller: counted(10 * GiB), measuredBytes: (id) => (id === 'chat' ? 12 * GiB : null) }));
    expect(snapshot.budget.usedBytes).toBe(10 * GiB);
    const [model, draft] = snapshot.budget.holders;
    expect((model?.bytes ?? 0) + (draft?.bytes ?? 0)).toBe(10 * GiB);
    expect(draft?.bytes).toBeGreaterThan(0);
  });

  it('shows each model on the GPUs its placement uses, with the bytes on each, and adds other programs and the reserve', () => {
    const sample: BudgetSample = {
      mode: 'gpu',
      totalBytes: 30 * GiB,
      perGpu: [gpu(0, 20 * GiB), gpu(1, 10 * GiB)],
      hostTotalBytes: 64 * GiB,
      hostAvailableBytes: 40 * GiB,
      sampledAt: 9,
    };
    const split: SnapshotParts['controller'] = {
      ...counted(9 * GiB),
      held: (id) =>
        id === 'chat'
          ? { bytes: 9 * GiB, placement: { kind: 'split', devices: [{ index: 1, layers: 20, bytes: 6 * GiB }, { index: 0, layers: 12, bytes: 3 * GiB }], cpuMoeLayers: 0, hostBytes: 0 } }
          : null,
    };
    const snapshot = buildSnapshot(parts({ controller: split }, sample));
    const [first, second] = snapshot.budget.gpus;
    const onGpu = (g: typeof first) => (g?.holders ?? []).filter((h) => h.kind === 'model' || h.kind === 'draft').reduce((sum, h) => sum + h.bytes, 0);
    expect(onGpu(first)).toBe(3 * GiB);
    expect(onGpu(second)).toBe(6 * GiB);
    expect(first?.holders.map((h) => h.kind)).toEqual(['model', 'draft', 'other-programs', 'reserve']);
    expect(snapshot.budget.usedBytes).toBe(9 * GiB);
    expect(snapshot.budget.budgetBytes).toBe(30 * GiB);
  });
});

describe('buildSnapshot: how apps reach the models', () => {
  const LAN = ['http://192.168.1.20:11435/v1', 'http://workstation.lan:11435/v1'];
  const keys = [
    { name: 'laptop', key: 'laptop-key-5c2e9a41d07b' },
    { name: 'phone', key: 'phone-key-83fd10a6c2e4' },
  ];

  it.each([
    ['a loopback listener with no key: open, as before LAN mode', false, [], [], { networkEndpoints: [], keysRequired: false, clientKeyNames: [] }],
    ['a loopback listener with keys: the router asks them of local apps too', false, [], keys, { networkEndpoints: [], keysRequired: true, clientKeyNames: ['laptop', 'phone'] }],
    ['a network listener with keys: its endpoints, and a key required', true, LAN, keys, { networkEndpoints: LAN, keysRequired: true, clientKeyNames: ['laptop', 'phone'] }],
    ['a network listener whose keys a reload removed: still required, and no name to offer', true, LAN, [], { networkEndpoints: LAN, keysRequired: true, clientKeyNames: [] }],
  ])('%s', (_case, networkListener, networkEndpoints, clientKeys, expected) => {
    const snapshot = buildSnapshot(parts({ networkListener, networkEndpoints: () => networkEndpoints, catalog: catalogOf([chat], clientKeys) }));
    expect({ networkEndpoints: snapshot.networkEndpoints, keysRequired: snapshot.keysRequired, clientKeyNames: snapshot.clientKeyNames }).toEqual(expected);
    expect(snapshot.endpoint).toBe('http://127.0.0.1:11435/v1');
  });

  it('never carries a client key: the snapshot goes to every admin client', () => {
    const text = JSON.stringify(buildSnapshot(parts({ networkListener: true, networkEndpoints: () => LAN, catalog: catalogOf([chat, idle], keys) })));
    for (const { key } of keys) expect(text).not.toContain(key);
  });
});
