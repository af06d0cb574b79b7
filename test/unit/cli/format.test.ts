// `llmtray status`: the LEVEL column in words, one per launch level; per GPU who holds what,
// each model's placement, and each left-out model's reason a line per GPU; requests in flight
// against a model's slots. `llmtray models`: each model's limits on requests.
import { describe, expect, it } from 'vitest';
import { modelsText, statusText } from '../../../core/cli/format.js';
import type { MemoryHolder, ModelView } from '../../../core/contracts/snapshot.js';
import { budget, GiB, gpu, holder, MiB, model, NOW, plan, snapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';

/** One column of a table the CLI prints, by the first cell of each row (columns are two spaces apart). */
function column(text: string, name: string, next: string): Record<string, string> {
  const lines = text.split('\n');
  const header = lines.findIndex((line) => line.startsWith('MODEL'));
  const start = lines[header]!.indexOf(name);
  const end = lines[header]!.indexOf(next);
  return Object.fromEntries(lines.slice(header + 1).map((line) => [line.split(' ')[0], line.slice(start, end).trim()]));
}

describe('statusText', () => {
  it('names every level in words, partial as part on the CPU', () => {
    const text = statusText(
      snapshot({
        models: [
          model('a-full', { status: { state: 'ready', level: 'full' } }),
          model('b-smaller', { status: { state: 'degraded', level: 'smaller-context' } }),
          model('c-split', { status: { state: 'degraded', level: 'partial' } }),
          model('d-cpu', { status: { state: 'degraded', level: 'minimal' } }),
          model('e-idle'),
        ],
      }),
    );
    expect(column(text, 'LEVEL', 'PINNED')).toEqual({
      'a-full': 'full',
      'b-smaller': 'smaller context',
      'c-split': 'part on CPU',
      'd-cpu': 'CPU only',
      'e-idle': '',
    });
  });
});

describe('limits on requests', () => {
  const models = [
    model('chat', { inFlight: 1, limits: { parallel: 2, queueLimit: 4 }, status: { state: 'active', level: 'full' } }),
    model('queue-only', { inFlight: 3, limits: { queueLimit: 0 }, status: { state: 'active', level: 'full' } }),
    model('free'),
  ];

  it('llmtray status counts requests in flight against the slots of a model with parallel', () => {
    expect(column(statusText(snapshot({ models }), NOW), 'IN FLIGHT', 'MEMORY')).toEqual({ chat: '1 of 2', 'queue-only': '3', free: '' });
  });

  it('llmtray models names each limit set, in the config’s words', () => {
    expect(column(modelsText(snapshot({ models })), 'LIMITS', 'ESTIMATE')).toEqual({ chat: 'parallel 2, queueLimit 4', 'queue-only': 'queueLimit 0', free: '' });
  });
});

describe('statusText: who needs attention', () => {
  it('names each model the tray counts and the dashboard lists, a degraded one even while it answers', () => {
    const text = statusText(
      snapshot({
        models: [
          model('fine', { status: { state: 'ready', level: 'full' } }),
          model('stuck', { status: { state: 'quarantined', recovery: { kind: 'invalid', attempts: 1 } } }),
          model('smaller', { inFlight: 1, status: { state: 'active', level: 'partial' } }),
          model('again', { status: { state: 'loading', level: 'smaller-context', recovery: { kind: 'oom', attempts: 1 } } }),
        ],
      }),
      NOW,
    );
    expect(text).toMatch(/^needs attention: stuck \(quarantined\), smaller \(degraded\), again \(recovering\)$/m);
  });

  it('says nothing of attention when every model is well', () => {
    const text = statusText(snapshot({ models: [model('fine', { status: { state: 'ready', level: 'full' } }), model('busy', { inFlight: 2, status: { state: 'active', level: 'full' } })] }), NOW);
    expect(text).not.toMatch(/needs attention/);
  });
});

describe('statusText: where apps connect', () => {
  it('lists each network endpoint and says a key is needed, naming the keys but never their values', () => {
    const text = statusText(
      snapshot({ endpoint: 'http://127.0.0.1:8080/v1', networkEndpoints: ['http://192.168.1.7:8080/v1'], keysRequired: true, clientKeyNames: ['laptop', 'phone'] }),
    );
    expect(text.split('\n').slice(0, 3)).toEqual([
      'endpoint  http://127.0.0.1:8080/v1',
      'network   http://192.168.1.7:8080/v1',
      'keys      apps send one of listen.clientKeys (laptop, phone)',
    ]);
  });

  it('says nothing of keys on loopback without any', () => {
    const text = statusText(snapshot({ endpoint: 'http://127.0.0.1:8080/v1', networkEndpoints: [], keysRequired: false, clientKeyNames: [] }));
    expect(text).not.toMatch(/^network|^keys/m);
  });
});

describe('statusText on GPUs', () => {
  const reason =
    'needs 9 GiB; GPU 0 RTX 4090: 22 GiB budget, 18 GiB held by pinned qwen-14b (18 GiB), 4 GiB free; ' +
    'GPU 1 RTX 3060: 11 GiB budget, 5.5 GiB held by llama-8b (5.5 GiB, priority 0), 5.5 GiB free; ' +
    'it cannot be split (its layers are unknown)';
  const text = statusText(
    snapshot({
      models: [
        model('qwen-14b', {
          pinned: true,
          draftId: 'qwen-0.5b',
          status: { state: 'ready', level: 'full' },
          placement: { kind: 'split', devices: [{ index: 0, layers: 20, bytes: 6 * GiB }, { index: 1, layers: 12, bytes: 4 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
        }),
        model('qwen-0.5b'),
        model('llama-8b', {
          status: { state: 'loading', level: 'full' },
          loading: { fraction: 0.4, startedAt: NOW - 1_200, expectedMs: null },
          placement: { kind: 'gpu', devices: [{ index: 1, layers: 32, bytes: 5.5 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
        }),
        model('opaque-13b', { status: { state: 'queued', unschedulableReason: reason } }),
      ],
      budget: budget(
        [
          gpu(0, { name: 'RTX 4090', totalGiB: 24, holders: [holder('model', 'qwen-14b', 5.6 * GiB), holder('draft', 'qwen-0.5b', 400 * MiB)] }),
          gpu(1, { name: 'RTX 3060', totalGiB: 12, othersGiB: 2, holders: [holder('model', 'llama-8b', 5.5 * GiB), holder('model', 'qwen-14b', 4 * GiB)] }),
        ],
        { limitBytes: 32 * GiB },
      ),
      plan: plan({ unschedulable: [{ modelId: 'opaque-13b', reason, strict: false }] }),
    }),
    NOW,
  );
  const lines = text.split('\n');

  it('lists a warm spare on GPUs too, a line of its own under the memory line', () => {
    const withSpare = statusText(snapshot({ budget: budget([gpu(0, { totalGiB: 24 })], { usedBytes: 90 * MiB, holders: [{ kind: 'spare', modelId: null, bytes: 90 * MiB }] }) }));
    expect(withSpare.split('\n')[2]).toBe('          warm spare  90 MiB  an engine with no model yet; the next launch adopts it');
  });

  it('says per GPU what our models hold and who holds it, each draft after its model', () => {
    expect(lines.slice(1, 6)).toEqual([
      "memory    15.5 GiB of 32 GiB budget (2 GPUs; set by the config's limit)",
      '          GPU 0 RTX 4090: 6 GiB of its 23 GiB budget held, 17 GiB free',
      '            qwen-14b 5.6 GiB, qwen-0.5b 400 MiB (draft of qwen-14b)',
      '          GPU 1 RTX 3060: 9.5 GiB of its 9 GiB budget held, 512 MiB over it',
      '            llama-8b 5.5 GiB, qwen-14b 4 GiB, other programs 2 GiB',
    ]);
  });

  it("shows each model's placement, and a load's progress in the tray's words", () => {
    const row = (id: string) => lines.find((line) => line.startsWith(`${id} `)) ?? '';
    expect(row('qwen-14b')).toContain('split over GPU 0 + 1, 20/12 layers');
    expect(row('llama-8b')).toMatch(/on GPU 1\s+loading 40 %, 1\.2 s$/);
    expect(row('opaque-13b')).toMatch(/left out: see below$/);
  });

  it("gives each left-out model's reason a line per GPU, under the table", () => {
    const at = lines.indexOf('left out by the last plan:');
    expect(lines.slice(at)).toEqual([
      'left out by the last plan:',
      '  - opaque-13b (waits for room)',
      '    needs 9 GiB',
      '    GPU 0 RTX 4090: 22 GiB budget, 18 GiB held by pinned qwen-14b (18 GiB), 4 GiB free',
      '    GPU 1 RTX 3060: 11 GiB budget, 5.5 GiB held by llama-8b (5.5 GiB, priority 0), 5.5 GiB free',
      '    it cannot be split (its layers are unknown)',
    ]);
  });

  it('has no placement column without a GPU, and names a limit only once', () => {
    const cpu = statusText(
      snapshot({ models: [model('demo-chat', { status: { state: 'ready', level: 'full' } })], budget: budget([], { budgetBytes: 260 * MiB, limitBytes: 260 * MiB, usedBytes: 205 * MiB }) }),
      NOW,
    );
    expect(cpu).toContain("memory    205 MiB of 260 MiB budget (host RAM, no GPU; set by the config's limit)\n");
    expect(cpu).not.toContain('PLACEMENT');
  });
});

describe('statusText: the memory adds up', () => {
  // The demo as a person saw it (issue 35): "0 of 5 resident" beside 93.9 MiB used, the warm
  // spare named nowhere; 257 MiB of 241 MiB with no word; the draft in demo-chat's engine "idle".
  const cpu = (models: ModelView[], holders: MemoryHolder[], budgetBytes = 260 * MiB) =>
    statusText(
      snapshot({
        models,
        budget: budget([], { budgetBytes, limitBytes: budgetBytes, usedBytes: holders.reduce((sum, h) => sum + h.bytes, 0), holders }),
      }),
      NOW,
    );
  const spare: MemoryHolder = { kind: 'spare', modelId: null, bytes: 93.9 * MiB };
  const row = (text: string, id: string) => text.split('\n').find((line) => line.startsWith(`${id} `)) ?? '';

  it('names the warm spare on a line of its own when nothing else holds memory', () => {
    const text = cpu([model('demo-chat'), model('demo-tiny')], [spare]);
    expect(text.split('\n').slice(1, 3)).toEqual([
      "memory    93.9 MiB of 260 MiB budget (host RAM, no GPU; set by the config's limit)",
      '          warm spare  93.9 MiB  an engine with no model yet; the next launch adopts it',
    ]);
    expect(text).toContain('0 of 2 resident');
    expect(row(text, 'demo-tiny')).toMatch(/idle\s+needs 4 GiB$/);
  });

  it('lists each model and its draft with the bytes that make up "used", and shows the draft drafting for its model', () => {
    const models = [
      model('demo-chat', { draftId: 'demo-draft', inFlight: 2, status: { state: 'active', level: 'full' } }),
      model('demo-draft'),
      model('demo-tiny'),
    ];
    const text = cpu(models, [holder('model', 'demo-chat', 155 * MiB), holder('draft', 'demo-draft', 16 * MiB)]);
    expect(text.split('\n').slice(1, 4)).toEqual([
      "memory    171 MiB of 260 MiB budget (host RAM, no GPU; set by the config's limit)",
      '          demo-chat   155 MiB',
      '          demo-draft  16 MiB   draft of demo-chat, in its engine',
    ]);
    expect(text).toContain('1 of 3 resident');
    expect(row(text, 'demo-chat')).toMatch(/^demo-chat\s+active\s+full\s+2\s+155 MiB$/);
    expect(row(text, 'demo-draft')).toMatch(/^demo-draft\s+drafting\s+2\s+16 MiB\s+for demo-chat, in its engine; in use now$/);
    // Its target gone, the draft is idle again: nothing of it is held.
    const alone = cpu([model('demo-chat', { draftId: 'demo-draft' }), model('demo-draft')], [spare]);
    expect(row(alone, 'demo-draft')).toMatch(/^demo-draft\s+idle\s+needs 4 GiB$/);
  });

  it('flags a budget held past its end in the dashboard\'s words, and says nothing of it within', () => {
    const over = cpu([model('demo-chat', { status: { state: 'ready', level: 'full' } })], [holder('model', 'demo-chat', 163 * MiB), spare], 241 * MiB);
    expect(over.split('\n').slice(1, 5)).toEqual([
      "memory    257 MiB of 241 MiB budget (host RAM, no GPU; set by the config's limit)",
      '          Over budget 15.9 MiB',
      '          demo-chat   163 MiB',
      '          warm spare  93.9 MiB  an engine with no model yet; the next launch adopts it',
    ]);
    expect(cpu([], [spare])).not.toContain('Over budget');
  });
});

describe('statusText without models', () => {
  it('says where GGUF files go and how to try the demo', () => {
    const text = statusText(snapshot({ modelDirs: ['/home/ada/models', '/home/ada/.cache/lm-studio/models'] }));
    expect(text.split('\n').slice(-6)).toEqual([
      'No models yet. Put GGUF files in one of these folders (picked up while llmtray runs):',
      '  /home/ada/models',
      '  /home/ada/.cache/lm-studio/models',
      'or list them in /home/ada/.config/llmtray/config.yaml',
      'Or pull one from Hugging Face: llmtray pull hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M',
      'To try llmtray with small generated models: llmtray serve --demo',
    ]);
    expect(statusText(snapshot({ modelDirs: [] }))).toContain('No models yet. List them under models: in /home/ada/.config/llmtray/config.yaml\n');
  });
});
