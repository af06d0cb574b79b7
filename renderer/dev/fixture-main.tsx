// The dashboard on a fake bridge with a fixed clock, for screenshots and for looking at the
// design without a daemon. Built only by renderer/dev/screenshot.mjs; never part of
// dist/renderer. `?scenario=` picks the snapshot, `&tab=` the view, `&lost=1` drops the stream.
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { startDashboard } from '../src/start.js';
import type { Tab } from '../src/store/dashboard-store.js';
import { RecordingBridge } from '../src/test-fixtures/recording-bridge.js';
import * as scenarios from '../src/test-fixtures/scenarios.js';
import { GiB, NOW } from '../src/test-fixtures/snapshot-builder.js';

const SCENARIOS: Record<string, () => Snapshot> = {
  showcase: scenarios.showcase,
  empty: () => ({ ...scenarios.emptyCatalog(), configErrors: [] }),
  'config-error': () => ({
    ...scenarios.twoGpusWithOtherProgram(),
    configErrors: ["/home/ada/.config/llmtray/config.yaml: models[2].ctx: expected a whole number of tokens, got '16k'"],
  }),
  'two-gpus': scenarios.twoGpusWithOtherProgram,
  placed: scenarios.placedOnTwoGpus,
  fallback: scenarios.fallbackServing,
  partial: scenarios.partlyOnCpu,
  cpu: scenarios.degradedToCpu,
};

const params = new URLSearchParams(window.location.search);
const current = (SCENARIOS[params.get('scenario') ?? 'showcase'] ?? scenarios.showcase)();
const bridge = new RecordingBridge();
bridge.logs = Object.fromEntries(current.models.map((m) => [m.id, sampleLog(m.id)]));

const container = document.getElementById('root');
if (container === null) throw new Error('fixture.html has no #root element.');
const store = startDashboard(bridge, container, { now: () => NOW });

// For the showcase, ten minutes of history: models loaded, another program gave memory back.
const used = params.get('scenario') === null || params.get('scenario') === 'showcase' ? [9.8, 9.8, 10.4, 15.3, 15.3, 15.9, 15.9, 17.1, 17.1, 18.1] : [];
used.forEach((gib, i) => {
  const at = NOW - (used.length - i) * 60_000;
  const budgetBytes = current.budget.budgetBytes - (i > 5 ? 0 : 3 * GiB);
  bridge.emit({ type: 'SnapshotUpdated', snapshot: { ...current, budget: { ...current.budget, sampledAt: at, usedBytes: gib * GiB, budgetBytes } } });
});
bridge.emit({ type: 'SnapshotUpdated', snapshot: current });

const tab = params.get('tab') as Tab | null;
if (tab !== null) store.getState().selectTab(tab);
if (params.get('lost') === '1') bridge.setConnected(false);

function sampleLog(id: string): string[] {
  return [
    `build: 6188 (a1b2c3d4) with cc (Debian 12.2.0-14) 12.2.0 for x86_64-linux-gnu`,
    `llama_model_loader: loaded meta data with 29 key-value pairs and 579 tensors from /home/ada/models/${id}.gguf`,
    `load_tensors: offloading 48 repeating layers to GPU`,
    `load_tensors: offloaded 49/49 layers to GPU`,
    `load_tensors:        CUDA0 model buffer size =  8148.38 MiB`,
    `llama_context: n_ctx = 16384`,
    `llama_kv_cache:      CUDA0 KV buffer size =  1536.00 MiB`,
    `llama_context:      CUDA0 compute buffer size =   307.00 MiB`,
    `srv          init: initializing slots, n_slots = 1`,
    `main: server is listening on http://127.0.0.1:41735 - starting the main loop`,
    `srv  update_slots: all slots are idle`,
    `slot launch_slot_: id  0 | task 0 | processing task`,
    `slot      release: id  0 | task 0 | stop processing: n_past = 412, truncated = 0`,
  ];
}
