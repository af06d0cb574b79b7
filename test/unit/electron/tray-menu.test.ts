import { describe, expect, it } from 'vitest';
import type { ModelCommand } from '../../../core/contracts/commands.js';
import { MODEL_STATE_NAMES, type ModelStatus } from '../../../core/contracts/model-status.js';
import type { ModelView } from '../../../core/contracts/snapshot.js';
import type { PullView } from '../../../core/contracts/hub/pulls.js';
import { buildTrayMenu, modelStateWords, primaryCommand, trayStatus, type TrayActions, type TrayMenuItem } from '../../../electron/tray-menu.js';
import { budget, gpu, holder, MiB } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { GiB, NOW, model, snapshot } from './snapshot-fixture.js';

function recordingActions() {
  const calls: string[] = [];
  const actions: TrayActions = {
    copyText: (text) => calls.push(`copy ${text}`),
    runCommand: (command: ModelCommand, modelId) => calls.push(`${command} ${modelId}`),
    openDashboard: () => calls.push('open dashboard'),
    cancelPull: (id) => calls.push(`cancel pull ${id}`),
    setStartAtLogin: (enabled) => calls.push(`start at login ${enabled}`),
    quit: () => calls.push('quit'),
  };
  return { calls, actions };
}

const labelOf = (item: TrayMenuItem): string => (item.type === 'separator' ? '---' : item.label);

function find(items: readonly TrayMenuItem[], label: string | RegExp): TrayMenuItem {
  const found = items.find((item) => item.type !== 'separator' && (typeof label === 'string' ? item.label === label : label.test(item.label)));
  if (found === undefined) throw new Error(`no item ${String(label)} in: ${items.map(labelOf).join(' | ')}`);
  return found;
}

function click(item: TrayMenuItem): void {
  if (item.type !== 'normal' && item.type !== 'checkbox') throw new Error(`${labelOf(item)} is not clickable`);
  if (!item.click) throw new Error(`${item.label} has no click`);
  item.click();
}

function submenuOf(items: readonly TrayMenuItem[], modelId: string): TrayMenuItem[] {
  const item = find(items, new RegExp(`^${modelId} — `));
  if (item.type !== 'submenu') throw new Error(`${modelId} is not a submenu`);
  return item.submenu;
}

const failure = (kind: ModelStatus['recovery']['kind'], extra: Partial<ModelStatus['recovery']> = {}): ModelStatus['recovery'] => ({
  kind,
  attempts: 1,
  nextAction: null,
  nextAttemptAt: null,
  lastError: null,
  ...extra,
});

const LONG_ERROR =
  "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'kev' (the file may need a newer llama.cpp)";

describe('modelStateWords: every state in words a person reads', () => {
  const cases: Array<[string, ModelView, string]> = [
    ['idle', model('m'), 'idle'],
    ['queued', model('m', { state: 'queued' }), 'queued'],
    ['queued, left out by the plan', model('m', { state: 'queued', unschedulableReason: 'needs 9.1 GiB; 24 GiB budget' }), 'queued, does not fit now'],
    ['loading with progress', model('m', { state: 'loading', level: 'full' }, { loading: { fraction: 0.42, startedAt: NOW - 1_234, expectedMs: null } }), 'loading 42 %, 1.2 s'],
    ['loading without progress', model('m', { state: 'loading' }, { loading: { fraction: null, startedAt: NOW - 12_500, expectedMs: null } }), 'loading, 12 s'],
    ['loading, no detail yet', model('m', { state: 'loading' }), 'loading'],
    ['ready', model('m', { state: 'ready', level: 'full' }), 'ready'],
    // Serving below full is degraded, busy or not: the phase, level and busy say both at once.
    ['degraded and answering', model('m', { state: 'active', level: 'partial' }, { inFlight: 1 }), 'answering 1 request, degraded: part on CPU'],
    ['degraded to the CPU and answering', model('m', { state: 'active', level: 'minimal' }, { inFlight: 2 }), 'answering 2 requests, degraded: CPU only'],
    ['active', model('m', { state: 'active', level: 'full' }, { inFlight: 2 }), 'answering 2 requests'],
    ['active, one request', model('m', { state: 'active', level: 'full' }, { inFlight: 1 }), 'answering 1 request'],
    ['evicting', model('m', { state: 'evicting' }), 'unloading'],
    [
      'failed with a countdown',
      model('m', { state: 'failed', recovery: failure('oom', { nextAction: 'degrade', nextAttemptAt: NOW + 3200 }) }),
      'failed: out of memory, retrying smaller in 4 s',
    ],
    ['failed, waiting without a timer', model('m', { state: 'failed', recovery: failure('crash'), next: 'waiting for memory' }), 'failed: crashed, waiting for memory'],
    ['degraded to a smaller context', model('m', { state: 'degraded', level: 'smaller-context' }), 'degraded: smaller context'],
    ['degraded to part on the CPU', model('m', { state: 'degraded', level: 'partial' }), 'degraded: part on CPU'],
    ['degraded to the CPU', model('m', { state: 'degraded', level: 'minimal' }), 'degraded: CPU only'],
    ['fallback', model('m', { state: 'fallback', servedBy: 'demo-tiny' }), 'answered by demo-tiny'],
    [
      'quarantined, reason shortened',
      model('m', { state: 'quarantined', recovery: failure('crash', { attempts: 5, nextAction: 'quarantine', lastError: LONG_ERROR }) }),
      'quarantined: llama_model_load: error loading model: error…',
    ],
  ];
  it.each(cases)('%s', (_name, view, words) => {
    expect(modelStateWords(view, NOW)).toBe(words);
  });

  it('every state has words, and the label carries the model id', () => {
    const { actions } = recordingActions();
    for (const state of MODEL_STATE_NAMES) {
      const items = buildTrayMenu(snapshot([model('demo-chat', { state })]), actions, { startAtLogin: false, now: NOW });
      expect(labelOf(find(items, /^demo-chat — /))).toBe(`demo-chat — ${modelStateWords(model('demo-chat', { state }), NOW)}`);
    }
  });
});

describe('buildTrayMenu', () => {
  it('starts with the endpoint, which copies itself, and the memory in use', () => {
    const { calls, actions } = recordingActions();
    const items = buildTrayMenu(snapshot([model('a')]), actions, { startAtLogin: false, now: NOW });
    expect(labelOf(items[0]!)).toBe('Endpoint: http://127.0.0.1:8080/v1 (click to copy)');
    click(items[0]!);
    expect(calls).toEqual(['copy http://127.0.0.1:8080/v1']);
    expect(items[1]).toMatchObject({ label: 'GPU memory: 17.2 GiB of 24 GiB in use', enabled: false });
  });

  it('offers the network endpoints after this machine’s in LAN mode, each copying itself, and says apps need a key', () => {
    const { calls, actions } = recordingActions();
    const lan = ['http://192.168.1.20:8080/v1', 'http://workstation.lan:8080/v1'];
    const items = buildTrayMenu(snapshot([model('a')], { networkEndpoints: lan, keysRequired: true, clientKeyNames: ['laptop'] }), actions, { startAtLogin: false, now: NOW });
    expect(items.slice(0, 5).map(labelOf)).toEqual([
      'Endpoint: http://127.0.0.1:8080/v1 (click to copy)',
      `Network endpoint: ${lan[0]} (click to copy)`,
      `Network endpoint: ${lan[1]} (click to copy)`,
      'Apps need a client key (listen.clientKeys)',
      'GPU memory: 17.2 GiB of 24 GiB in use',
    ]);
    for (const item of items.slice(0, 3)) click(item);
    expect(calls).toEqual(['copy http://127.0.0.1:8080/v1', ...lan.map((url) => `copy ${url}`)]);
    expect(items[3]).toMatchObject({ enabled: false });
  });

  it('says a key is needed on loopback once one is configured, and that a network endpoint with none left serves nobody', () => {
    const onLoopback = buildTrayMenu(snapshot([], { keysRequired: true, clientKeyNames: ['laptop'] }), recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(onLoopback.slice(0, 2).map(labelOf)).toEqual(['Endpoint: http://127.0.0.1:8080/v1 (click to copy)', 'Apps need a client key (listen.clientKeys)']);
    const emptied = buildTrayMenu(snapshot([], { networkEndpoints: ['http://192.168.1.20:8080/v1'], keysRequired: true, clientKeyNames: [] }), recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(labelOf(emptied[2]!)).toBe('No client key in listen.clientKeys: the endpoint serves nobody');
  });

  it('says so when there is no GPU', () => {
    const base = snapshot([]);
    const items = buildTrayMenu({ ...base, budget: { ...base.budget, mode: 'cpu', usedBytes: 2 * GiB, budgetBytes: 40 * GiB } }, recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(labelOf(items[1]!)).toBe('Memory (no GPU): 2 GiB of 40 GiB in use');
  });

  it('pins an unpinned model and unpins a pinned one, whatever the checkbox shows by then', () => {
    const { calls, actions } = recordingActions();
    const items = buildTrayMenu(snapshot([model('free', { state: 'ready', level: 'full' }), model('held', { state: 'ready', level: 'full' }, { pinned: true })]), actions, {
      startAtLogin: false,
      now: NOW,
    });
    const freePin = find(submenuOf(items, 'free'), 'Pinned');
    const heldPin = find(submenuOf(items, 'held'), 'Pinned');
    expect(freePin).toMatchObject({ type: 'checkbox', checked: false });
    expect(heldPin).toMatchObject({ type: 'checkbox', checked: true });
    click(freePin);
    click(heldPin);
    expect(calls).toEqual(['pin free', 'unpin held']);
  });

  it.each([
    ['idle', 'Load', 'load'],
    ['evicting', 'Load', 'load'],
    ['ready', 'Unload', 'unload'],
    ['loading', 'Unload', 'unload'],
    ['failed', 'Unload', 'unload'],
    ['quarantined', 'Retry', 'retry'],
  ] as const)('a %s model offers %s, which runs %s', (state, label, command) => {
    const { calls, actions } = recordingActions();
    const items = buildTrayMenu(snapshot([model('demo-chat', { state })]), actions, { startAtLogin: false, now: NOW });
    const submenu = submenuOf(items, 'demo-chat');
    click(find(submenu, label));
    expect(calls).toEqual([`${command} demo-chat`]);
    for (const other of ['Load', 'Unload', 'Retry'].filter((l) => l !== label)) {
      expect(submenu.some((item) => item.type !== 'separator' && item.label === other)).toBe(false);
    }
  });

  it('offers exactly one of Load, Unload and Retry in every state, Retry only when quarantined', () => {
    for (const state of MODEL_STATE_NAMES) {
      expect(primaryCommand(state) === 'retry').toBe(state === 'quarantined');
    }
  });

  it('shows a quarantined model\'s reason next to Retry', () => {
    const quarantined = model('kev', { state: 'quarantined', recovery: failure('crash', { attempts: 5, nextAction: 'quarantine', lastError: LONG_ERROR }) });
    const submenu = submenuOf(buildTrayMenu(snapshot([quarantined]), recordingActions().actions, { startAtLogin: false, now: NOW }), 'kev');
    const reason = labelOf(find(submenu, /^Reason: /));
    expect(reason.startsWith('Reason: llama_model_load: error loading model')).toBe(true);
    expect(reason.length).toBeLessThanOrEqual(100);
    expect(reason.endsWith('…')).toBe(true);
    expect(find(submenu, 'Retry')).toMatchObject({ enabled: true });
  });

  it('names the level of a degraded model, of one partly and of one wholly on the CPU', () => {
    const items = buildTrayMenu(
      snapshot([
        model('smaller', { state: 'degraded', level: 'smaller-context' }),
        model('split', { state: 'degraded', level: 'partial' }),
        model('cpu', { state: 'ready', level: 'minimal' }),
        model('full', { state: 'ready', level: 'full' }),
      ]),
      recordingActions().actions,
      { startAtLogin: false, now: NOW },
    );
    expect(find(submenuOf(items, 'smaller'), /^Level: /)).toMatchObject({ label: 'Level: smaller context', enabled: false });
    expect(labelOf(find(submenuOf(items, 'split'), /^Level: /))).toBe('Level: part on CPU (partial)');
    expect(labelOf(find(submenuOf(items, 'cpu'), /^Level: /))).toBe('Level: CPU only (minimal)');
    expect(submenuOf(items, 'full').some((item) => item.type !== 'separator' && item.label.startsWith('Level'))).toBe(false);
  });

  it('says who answers for a model that fell back, on both models', () => {
    const items = buildTrayMenu(
      snapshot([model('big', { state: 'fallback', servedBy: 'demo-tiny' }), model('demo-tiny', { state: 'ready', level: 'full' })]),
      recordingActions().actions,
      { startAtLogin: false, now: NOW },
    );
    expect(labelOf(find(submenuOf(items, 'big'), /answered by/))).toBe('Requests for big are answered by demo-tiny');
    expect(labelOf(find(submenuOf(items, 'demo-tiny'), /^Answers for/))).toBe('Answers for big, which is in fallback');
  });

  it("gives a left-out model's reason one line per GPU, cut to fit, with the whole reason a click from the clipboard", () => {
    const reason =
      'needs 9 GiB; GPU 0 RTX 4090: 22 GiB budget, 18 GiB held by pinned qwen-32b (18 GiB), 4 GiB free; ' +
      'GPU 1 RTX 3060: 11 GiB budget, 7 GiB held by pinned llama-8b (7 GiB), 4 GiB free; ' +
      'it cannot be split (its layers are unknown): it fits only if a pinned model is unpinned';
    const { calls, actions } = recordingActions();
    const submenu = submenuOf(buildTrayMenu(snapshot([model('opaque-13b', { state: 'queued', unschedulableReason: reason })]), actions, { startAtLogin: false, now: NOW }), 'opaque-13b');
    const lines = submenu.filter((item) => item.type === 'normal' && !item.enabled).map(labelOf);
    expect(lines).toEqual([
      'Left out: needs 9 GiB',
      'GPU 0 RTX 4090: 22 GiB budget, 18 GiB held by pinned qwen-32b (18 GiB), 4 GiB free',
      'GPU 1 RTX 3060: 11 GiB budget, 7 GiB held by pinned llama-8b (7 GiB), 4 GiB free',
      'it cannot be split (its layers are unknown)',
      'it fits only if a pinned model is unpinned',
    ]);
    // Every line fits, so nothing needs copying.
    expect(submenu.some((item) => item.type === 'normal' && item.label === 'Copy the full reason')).toBe(false);

    const long = `${reason.replace('qwen-32b', 'a-model-with-a-name-long-enough-to-push-the-line-past-a-hundred-characters')}`;
    const cut = submenuOf(buildTrayMenu(snapshot([model('opaque-13b', { state: 'queued', unschedulableReason: long })]), actions, { startAtLogin: false, now: NOW }), 'opaque-13b');
    const gpu0 = find(cut, /^GPU 0 /);
    expect(labelOf(gpu0).length).toBeLessThanOrEqual(100);
    expect(labelOf(gpu0).endsWith('…')).toBe(true);
    expect(gpu0).toMatchObject({ toolTip: long });
    click(find(cut, 'Copy the full reason'));
    expect(calls).toEqual([`copy ${long}`]);
  });

  it("names each GPU as the engine does and puts a held GPU's warning first in its submenu", () => {
    const warning = 'Not measured for 3 samples in a row (4 s): nvidia-smi answered before and gives no figures now.';
    const gpus = [{ ...gpu(0, { totalGiB: 24 }), engineDevice: 'CUDA0', warning }];
    const items = buildTrayMenu(snapshot([], { budget: budget(gpus) }), recordingActions().actions, { startAtLogin: false, now: NOW });
    const card = find(items, /^GPU 0 NVIDIA GeForce RTX 4090 \(CUDA0\): /);
    if (card.type !== 'submenu') throw new Error('the GPU is not a submenu');
    expect(labelOf(card.submenu[0] as TrayMenuItem)).toBe(warning);
  });

  it('copies the whole of a quarantine reason that a menu line cuts', () => {
    const { calls, actions } = recordingActions();
    const quarantined = model('kev', { state: 'quarantined', recovery: failure('invalid', { nextAction: 'quarantine', lastError: LONG_ERROR }) });
    click(find(submenuOf(buildTrayMenu(snapshot([quarantined]), actions, { startAtLogin: false, now: NOW }), 'kev'), 'Copy the full reason'));
    expect(calls).toEqual([`copy ${LONG_ERROR}`]);
  });

  it('shows a load in the label with the same words as the dashboard, and where the model is being placed', () => {
    const loading = model(
      'qwen-14b',
      { state: 'loading', level: 'full' },
      {
        loading: { fraction: 0.4, startedAt: NOW - 1_200, expectedMs: null },
        placement: { kind: 'split', devices: [{ index: 0, layers: 20, bytes: 6 * GiB }, { index: 1, layers: 12, bytes: 4 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
      },
    );
    const items = buildTrayMenu(snapshot([loading], { budget: budget([gpu(0, { totalGiB: 24 }), gpu(1, { totalGiB: 12 })]) }), recordingActions().actions, {
      startAtLogin: false,
      now: NOW,
    });
    expect(labelOf(find(items, /^qwen-14b — /))).toBe('qwen-14b — loading 40 %, 1.2 s');
    expect(labelOf(find(submenuOf(items, 'qwen-14b'), /^Placement/))).toBe('Placement: split over GPU 0 + 1, 20/12 layers');
  });

  it('says how much of a partly offloaded model is on the GPU and how much in RAM', () => {
    const partial = model(
      'mixtral',
      { state: 'degraded', level: 'partial' },
      { layerCount: 48, placement: { kind: 'partial', devices: [{ index: 0, layers: 30, bytes: 14 * GiB }], cpuMoeLayers: 0, hostBytes: 6.2 * GiB } },
    );
    const items = buildTrayMenu(snapshot([partial], { budget: budget([gpu(0, { totalGiB: 24 })]) }), recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(labelOf(find(submenuOf(items, 'mixtral'), /^Placement/))).toBe('Placement: partial: 30 of 48 layers on GPU 0, 6.2 GiB in RAM');
  });

  it('names no GPU placement without a GPU', () => {
    const onCpu = model('demo-chat', { state: 'ready', level: 'full' }, { placement: { kind: 'gpu', devices: [{ index: 0, layers: 0, bytes: 200 * MiB }], cpuMoeLayers: 0, hostBytes: 0 } });
    const base = snapshot([onCpu]);
    const items = buildTrayMenu({ ...base, budget: { ...base.budget, mode: 'cpu' } }, recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(submenuOf(items, 'demo-chat').some((item) => item.type !== 'separator' && item.label.startsWith('Placement'))).toBe(false);
  });

  it('shows per GPU which model and draft hold what, then other programs and the reserve', () => {
    const models = [model('qwen-14b', { state: 'ready', level: 'full' }, { draftId: 'qwen-0.5b' }), model('qwen-0.5b'), model('llama-8b', { state: 'ready', level: 'full' })];
    const gpus = [
      gpu(0, { totalGiB: 24, holders: [holder('model', 'qwen-14b', 9.6 * GiB), holder('draft', 'qwen-0.5b', 600 * MiB)] }),
      gpu(1, { name: 'NVIDIA GeForce RTX 3060', totalGiB: 12, othersGiB: 3, holders: [] }),
    ];
    const items = buildTrayMenu(snapshot(models, { budget: budget(gpus) }), recordingActions().actions, { startAtLogin: false, now: NOW });
    const first = find(items, /^GPU 0 /);
    expect(first).toMatchObject({ type: 'submenu', label: 'GPU 0 NVIDIA GeForce RTX 4090: 10.2 GiB of its 23 GiB budget held, 12.8 GiB free' });
    expect(first.type === 'submenu' && first.submenu.map(labelOf)).toEqual(['qwen-14b 9.6 GiB', 'qwen-0.5b 600 MiB (draft of qwen-14b)', '---', 'Reserve 1 GiB']);
    const second = find(items, /^GPU 1 /);
    expect(second.type === 'submenu' && second.submenu.map(labelOf)).toEqual(['No model on it', '---', 'Other programs 3 GiB', 'Reserve 1 GiB']);
    // Right under the total, before the models.
    expect(items.slice(1, 4).map(labelOf)).toEqual([labelOf(items[1]!), labelOf(first), labelOf(second)]);
  });

  it('labels a draft in its target\'s engine "drafting for" its target, not idle; idle again once its target is gone', () => {
    const holders = [holder('model', 'qwen-14b', 9.6 * GiB), holder('draft', 'qwen-0.5b', 600 * MiB)];
    const drafting = [model('qwen-14b', { state: 'ready', level: 'full' }, { draftId: 'qwen-0.5b' }), model('qwen-0.5b')];
    const items = buildTrayMenu(snapshot(drafting, { budget: budget([gpu(0, { totalGiB: 24, holders })]) }), recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(labelOf(find(items, /^qwen-0\.5b — /))).toBe('qwen-0.5b — drafting for qwen-14b');
    const alone = [model('qwen-14b', {}, { draftId: 'qwen-0.5b' }), model('qwen-0.5b')];
    const idle = buildTrayMenu(snapshot(alone, { budget: budget([gpu(0, { totalGiB: 24 })]) }), recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(labelOf(find(idle, /^qwen-0\.5b — /))).toBe('qwen-0.5b — idle');
  });

  it('tells how to add models when the catalog is empty', () => {
    const items = buildTrayMenu(snapshot([]), recordingActions().actions, { startAtLogin: false, now: NOW });
    expect(find(items, 'No models yet')).toMatchObject({ enabled: false });
    expect(labelOf(find(items, /^Put \.gguf files in /))).toBe('Put .gguf files in /home/ada/models');
    expect(labelOf(find(items, /^or list models in/))).toBe('or list models in /home/ada/.config/llmtray/config.yaml');
    expect(items.some((item) => item.type === 'submenu')).toBe(false);
  });

  it('shows config problems', () => {
    const items = buildTrayMenu(snapshot([], { configErrors: ['config.yaml: models[0].context: must be a positive number, got -1'] }), recordingActions().actions, {
      startAtLogin: false,
      now: NOW,
    });
    expect(labelOf(find(items, /^Config problem/))).toBe('Config problem: config.yaml: models[0].context: must be a positive number, got -1');
  });

  it('ends with Open Dashboard, Start at Login and Quit, each doing what it says', () => {
    for (const startAtLogin of [false, true]) {
      const { calls, actions } = recordingActions();
      const items = buildTrayMenu(snapshot([model('a')]), actions, { startAtLogin, now: NOW });
      expect(items.slice(-5).map(labelOf)).toEqual(['---', 'Open Dashboard', 'Start at Login', '---', 'Quit llmtray']);
      expect(find(items, 'Start at Login')).toMatchObject({ type: 'checkbox', checked: startAtLogin });
      click(find(items, 'Open Dashboard'));
      click(find(items, 'Start at Login'));
      click(find(items, 'Quit llmtray'));
      expect(calls).toEqual(['open dashboard', `start at login ${!startAtLogin}`, 'quit']);
    }
  });
});

describe('pulls in the tray', () => {
  const pull = (over: Partial<PullView>): PullView => ({
    id: 'hf.co/o/r:Q4_K_M', repo: 'o/r', state: 'downloading', files: [], receivedBytes: 45, totalBytes: 100, bytesPerSecond: 10, secondsLeft: 6, message: '', startedAt: 0, ...over,
  });

  it('says each running pull in the tooltip with its share and time left, and not one that ended', () => {
    const status = trayStatus(snapshot([model('a', { state: 'ready', level: 'full' })]), [pull({}), pull({ id: 'hf.co/o/s:Q8_0', state: 'resolving' }), pull({ id: 'hf.co/o/t:F16', state: 'done' })]);
    expect(status).toEqual({ health: 'ok', tooltip: 'llmtray — 1 model resident · 17.2 GiB of 24 GiB · pulling o/r:Q4_K_M 45 %, 6 s left, o/s:Q8_0 resolving' });
  });

  it('gives each running pull a menu line whose click cancels it', () => {
    const { calls, actions } = recordingActions();
    const items = buildTrayMenu(snapshot([model('a')]), actions, { startAtLogin: false, now: NOW, pulls: [pull({}), pull({ id: 'hf.co/o/t:F16', state: 'failed' })] });
    click(find(items, 'Pulling hf.co/o/r:Q4_K_M: 45 %, 6 s left (click to cancel)'));
    expect(calls).toEqual(['cancel pull hf.co/o/r:Q4_K_M']);
    expect(items.some((item) => item.type !== 'separator' && item.label.includes('o/t:F16'))).toBe(false);
  });
});

describe('trayStatus', () => {
  it('is ok with everything resident, and counts resident models and memory', () => {
    const status = trayStatus(snapshot([model('a', { state: 'ready', level: 'full' }), model('b', { state: 'active', level: 'full' }), model('c')]));
    expect(status).toEqual({ health: 'ok', tooltip: 'llmtray — 2 models resident · 17.2 GiB of 24 GiB' });
  });

  it('is loading while a model loads, queues or unloads; a loading or unloading one holds memory, so it counts as resident', () => {
    for (const [state, resident] of [['loading', '2 models'], ['queued', '1 model'], ['evicting', '2 models']] as const) {
      const status = trayStatus(snapshot([model('a', { state: 'ready', level: 'full' }), model('b', { state })]));
      expect(status).toEqual({ health: 'loading', tooltip: `llmtray — ${resident} resident · 17.2 GiB of 24 GiB · 1 loading` });
    }
  });

  it('is a problem when anything needs attention, and says what, even while others load', () => {
    for (const state of ['quarantined', 'failed', 'fallback', 'degraded'] as const) {
      const status = trayStatus(snapshot([model('a', { state: 'loading' }), model('b', { state, level: state === 'degraded' ? 'smaller-context' : null })]));
      expect(status.health).toBe('problem');
      expect(status.tooltip.endsWith(`1 loading · 1 ${state}`)).toBe(true);
    }
    expect(trayStatus(snapshot([], { configErrors: ['bad'] })).health).toBe('problem');
    expect(trayStatus(snapshot([model('a', {}, { catalogError: 'not a GGUF file' })])).tooltip).toContain('1 unreadable');
  });

  it('counts what the dashboard lists under Recovery: a degraded model while it answers, and a load after a failure', () => {
    const answering = model('a', { state: 'active', level: 'partial' }, { inFlight: 1 });
    expect(trayStatus(snapshot([answering]))).toMatchObject({ health: 'problem', tooltip: expect.stringMatching(/· 1 degraded$/) });
    const retrying = model('b', { state: 'loading', level: 'smaller-context', recovery: failure('oom') });
    expect(trayStatus(snapshot([retrying]))).toMatchObject({ health: 'problem', tooltip: expect.stringMatching(/· 1 loading · 1 recovering$/) });
  });

  it('keeps the tooltip within what Windows shows', () => {
    const many = Array.from({ length: 40 }, (_, i) => model(`model-${i}`, { state: (['quarantined', 'failed', 'fallback', 'degraded', 'loading'] as const)[i % 5] }));
    expect(trayStatus(snapshot(many, { configErrors: ['x'] })).tooltip.length).toBeLessThanOrEqual(127);
  });
});

describe('the tray: requests per busy model', () => {
  it('has a line per model with requests in flight or waiting, and none for an idle model', () => {
    const models = [
      model('answering', { state: 'active', level: 'full' }, { inFlight: 2, waiting: 1 }),
      model('coming', { state: 'loading' }, { inFlight: 0, waiting: 3 }),
      model('idle', { state: 'ready', level: 'full' }),
    ];
    const labels = buildTrayMenu(snapshot(models), recordingActions().actions, { startAtLogin: false, now: NOW }).map(labelOf);
    expect(labels).toContain('answering: 2 in flight, 1 waiting');
    expect(labels).toContain('coming: 0 in flight, 3 waiting');
    expect(labels.some((label) => label.startsWith('idle: '))).toBe(false);
    // Above the models' own submenus, where a glance at the menu finds them.
    expect(labels.indexOf('coming: 0 in flight, 3 waiting')).toBeLessThan(labels.findIndex((label) => label.startsWith('answering — ')));
  });
});
