// Assembles the admin snapshot from the daemon's parts. Synchronous and cheap (map lookups
// and a few sums): the admin service calls it on every change, throttled.
import type { Catalog, CatalogModel } from '../catalog/catalog.js';
import type { Controller } from '../controller/controller.js';
import type { MemoryHolder, ModelView, Snapshot, BudgetView, GpuView, LostOutput } from '../contracts/snapshot.js';
import type { ModelStatus } from '../contracts/model-status.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { BudgetSample } from '../gpu/live-budget.js';
import { engineDeviceName } from '../gpu/engine-identity.js';
import { goneWords } from '../gpu/compute-budget.js';
import { footprintAt, type FootprintEstimate } from '../policy/levels.js';
import type { ModelActivity } from '../demand/activity.js';
import { LAUNCH_LEVELS, type LaunchLevel } from '../contracts/launch-level.js';
import { pricedEstimate } from '../demand/desired-state.js';
import type { EngineKind } from '../contracts/snapshot.js';
import type { SavedConversationsView } from './saved-conversations-view.js';

export interface SnapshotParts {
  startedAt: number;
  endpoint: () => string;
  /** Other machines' base URLs (Snapshot.networkEndpoints); empty on a loopback listener. */
  networkEndpoints: () => string[];
  /** listen.host is a network address: /v1 then needs a key even while none is configured (the router's RouterAccess.keysRequired). */
  networkListener: boolean;
  catalog: Pick<Catalog, 'models' | 'problems' | 'config' | 'configInForce'>;
  controller: Pick<Controller, 'status' | 'lastPlan' | 'placement' | 'held'>;
  supervisor: Pick<Supervisor, 'status' | 'endpointFor' | 'inFlight'>;
  activity: ModelActivity;
  isPinned(model: CatalogModel): boolean;
  wanted(modelId: string): boolean;
  engineOf(model: CatalogModel): EngineKind;
  measuredBytes(modelId: string): number | null;
  /** Its engine's own cost where it counts against the budget (see DesiredSources.runtimeBytes); default 0. */
  runtimeBytes?(model: CatalogModel): number;
  /** Whether the weights run on the CPU, with its extra buffers (see DesiredSources.weightsOnCpu); default false. */
  weightsOnCpu?(): boolean;
  /** What the warm spare holds (core/controller/spare-verdict.ts), or null while none runs; default none. */
  spareBytes?(): number | null;
  budget(): BudgetSample | null;
  /** The config's budget limit now (a reload may change it). */
  limitBytes(): number | null;
  configPath: string;
  /** The daemon's own outputs that failed (core/common/guarded-output.ts). */
  lostOutputs: () => LostOutput[];
  /** What is saved on disk for a model file, and for all (core/daemon/saved-conversations-view.ts); default none. */
  savedConversations?: Pick<SavedConversationsView, 'forModel' | 'totalBytes'>;
}

function idleStatus(modelId: string, since: number): ModelStatus {
  return {
    modelId,
    state: 'idle',
    phase: 'idle',
    level: null,
    busy: false,
    recovery: { kind: 'none', attempts: 0, nextAction: null, nextAttemptAt: null, lastError: null },
    servedBy: null,
    unschedulableReason: null,
    next: null,
    since,
  };
}

function estimatesOf(estimate: FootprintEstimate | null): Record<LaunchLevel, number> {
  const out = { full: 0, 'smaller-context': 0, partial: 0, minimal: 0 } as Record<LaunchLevel, number>;
  if (estimate === null) return out;
  for (const level of LAUNCH_LEVELS) out[level] = footprintAt(level, estimate).deviceBytes;
  return out;
}

/**
 * The draft's share of a pair's bytes at a level: the pair less the primary alone, not the
 * draft's own footprintAt (in a pair the draft runs at the primary's context and stays on the
 * device at 'partial', neither of which its own estimate knows). 0 without a draft.
 */
function draftShareOf(model: CatalogModel, level: LaunchLevel): number {
  if (model.estimate === null || model.estimate.draft === undefined) return 0;
  const { draft: _, ...primary } = model.estimate;
  const held = (estimate: FootprintEstimate): number => {
    const footprint = footprintAt(level, estimate);
    return level === 'minimal' ? footprint.hostBytes : footprint.deviceBytes;
  };
  const pair = held(model.estimate);
  return pair > 0 ? (pair - held(primary)) / pair : 0;
}

/** The block count a placement's layers are counted against; null when the metadata did not say. */
function layerCountOf(estimate: FootprintEstimate | null): number | null {
  const layers = estimate?.layers;
  return layers !== undefined && Number.isFinite(layers) && layers > 0 ? layers : null;
}

/** `bytes` of one process as the model and its draft, the draft by its share. */
function holdersOf(model: CatalogModel, bytes: number, draftShare: number): MemoryHolder[] {
  const draftBytes = Math.round(bytes * draftShare);
  const holders: MemoryHolder[] = [{ kind: 'model', modelId: model.id, bytes: bytes - draftBytes }];
  if (draftBytes > 0) holders.push({ kind: 'draft', modelId: model.draftId ?? null, bytes: draftBytes });
  return holders;
}

export function buildSnapshot(parts: SnapshotParts): Omit<Snapshot, 'revision'> {
  const models: ModelView[] = [];
  const residentHolders: MemoryHolder[] = [];
  const perDevice = new Map<number, MemoryHolder[]>();
  for (const model of parts.catalog.models()) {
    const server = parts.supervisor.status(model.id);
    const endpoint = parts.supervisor.endpointFor(model.id);
    const measured = parts.measuredBytes(model.id);
    // The figures the controller's last plan counted, where it counted them: the picture and
    // the plan's reasons cannot disagree.
    const held = parts.controller.held(model.id);
    if (held !== null) {
      const share = draftShareOf(model, parts.controller.status(model.id)?.level ?? 'full');
      residentHolders.push(...holdersOf(model, held.bytes, share));
      for (const part of held.placement?.devices ?? []) {
        perDevice.set(part.index, [...(perDevice.get(part.index) ?? []), ...holdersOf(model, part.bytes, share)]);
      }
    }
    const lastUsed = parts.activity.lastUsedAt(model.id);
    models.push({
      id: model.id,
      aliases: model.aliases,
      path: model.path,
      engine: parts.engineOf(model),
      priority: model.priority,
      pinned: parts.isPinned(model),
      desired: parts.wanted(model.id),
      draftId: model.draftId ?? null,
      fallbackId: model.fallbackId ?? null,
      contextTokens: model.ctx,
      limits: model.limits,
      layerCount: layerCountOf(model.estimate),
      // Priced as the plan prices it (its engine's own cost included on the CPU), so the footprint a
      // person reads and the measurement beside it are the same kind of figure.
      estimateBytes: estimatesOf(pricedEstimate(model, parts.runtimeBytes?.(model) ?? 0, true, parts.weightsOnCpu?.() ?? false)),
      measuredBytes: measured,
      inFlight: parts.supervisor.inFlight(model.id),
      waiting: parts.activity.waitingCount(model.id),
      lastUsed: lastUsed ?? null,
      status: parts.controller.status(model.id) ?? idleStatus(model.id, parts.startedAt),
      loading: server !== null && server.phase === 'loading' ? { fraction: server.loadProgress, startedAt: server.startedAt, expectedMs: server.lastLoadMs } : null,
      placement: parts.controller.placement(model.id),
      upstream: endpoint === null ? null : { baseUrl: `http://127.0.0.1:${endpoint.port}`, pid: endpoint.pid },
      catalogError: model.metadataError,
      savedConversations: { ...(parts.savedConversations?.forModel(model.path) ?? { count: 0, bytes: 0 }) },
    });
  }
  residentHolders.sort((a, b) => b.bytes - a.bytes);
  // After the models: it holds free room only, and is the first thing given back.
  const spare = parts.spareBytes?.() ?? null;
  if (spare !== null) residentHolders.push({ kind: 'spare', modelId: null, bytes: spare });
  const config = parts.catalog.config();
  const clientKeyNames = config.listen.clientKeys.map((k) => k.name);
  return {
    startedAt: parts.startedAt,
    endpoint: parts.endpoint(),
    networkEndpoints: parts.networkEndpoints(),
    // The router's rule (core/router/http/client-keys.ts): any configured key is asked of every client.
    keysRequired: parts.networkListener || clientKeyNames.length > 0,
    clientKeyNames,
    models,
    budget: budgetView(parts.budget(), residentHolders, perDevice, parts.limitBytes(), parts.savedConversations?.totalBytes() ?? 0),
    plan: parts.controller.lastPlan(),
    configErrors: parts.catalog.problems(),
    configInForce: parts.catalog.configInForce(),
    configPath: parts.configPath,
    modelDirs: config.modelDirs,
    lostOutputs: parts.lostOutputs(),
  };
}

/** Per GPU, each model's bytes where its placement put them (a split shows on every card it uses). */
function budgetView(sample: BudgetSample | null, holders: MemoryHolder[], perDevice: ReadonlyMap<number, MemoryHolder[]>, limitBytes: number | null, savedConversationsBytes: number): BudgetView {
  const usedBytes = holders.reduce((sum, h) => sum + h.bytes, 0);
  if (sample === null) {
    return { mode: 'cpu', budgetBytes: 0, usedBytes, limitBytes, gpus: [], holders, hostTotalBytes: 0, hostAvailableBytes: 0, savedConversationsBytes, sampledAt: 0 };
  }
  const gpus: GpuView[] = sample.perGpu.map((gpu) => {
    const own = [...(perDevice.get(gpu.index) ?? [])].sort((a, b) => b.bytes - a.bytes);
    const engineDevice = engineDeviceName(gpu);
    return {
      index: gpu.index,
      name: gpu.name,
      ...(engineDevice === undefined ? {} : { engineDevice }),
      ...(gpu.warning === undefined ? {} : { warning: gpu.warning }),
      totalBytes: gpu.totalBytes,
      usedByOthersBytes: gpu.usedByOthersBytes,
      usedByUsBytes: gpu.usedByUsBytes,
      reserveBytes: gpu.reserveBytes,
      budgetBytes: gpu.budgetBytes,
      holders: [
        ...own,
        { kind: 'other-programs', modelId: null, bytes: gpu.usedByOthersBytes },
        { kind: 'reserve', modelId: null, bytes: gpu.reserveBytes },
      ],
    };
  });
  return {
    mode: sample.mode,
    budgetBytes: sample.totalBytes,
    usedBytes,
    limitBytes,
    gpus,
    ...(sample.displays === undefined ? {} : { displays: sample.displays.map((d) => ({ name: d.name, busAddress: d.busAddress })) }),
    ...(sample.gone === undefined ? {} : { goneGpus: sample.gone.map((g) => ({ index: g.index, name: g.name, busAddress: g.busAddress, reason: goneWords(g) })) }),
    holders,
    hostTotalBytes: sample.hostTotalBytes,
    hostAvailableBytes: sample.hostAvailableBytes,
    savedConversationsBytes,
    sampledAt: sample.sampledAt,
  };
}
