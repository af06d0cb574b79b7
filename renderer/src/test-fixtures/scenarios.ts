// The situations the dashboard must show right, as snapshots. Shared by the component tests
// and by the screenshot fixture (renderer/dev/), so what is tested is what is looked at.
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { budget, GiB, gpu, holder, MiB, model, NOW, plan, snapshot } from './snapshot-builder.js';

/** llama.cpp's own cause line for a model whose tensor data is cut short. */
export const CORRUPT_MODEL_ERROR =
  "llama_model_load: error loading model: tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete";

export const CUDA_OOM_ERROR =
  'ggml_backend_cuda_buffer_type_alloc_buffer: allocating 6144.00 MiB on device 0: cudaMalloc failed: out of memory';

/** A CUDA build's whole complaint about a file it cannot use: several lines, far more than a card shows. */
export const UNKNOWN_ARCH_ERROR = [
  "llama_model_load: error loading model: error loading model architecture: unknown model architecture: 'kev'",
  'llama_model_load_from_file_impl: failed to load model',
  'common_init_from_params: failed to load model \'/home/ada/models/kev-0.5b.gguf\'',
  'srv    load_model: failed to load model, \'/home/ada/models/kev-0.5b.gguf\'',
].join('\n');

export const UNFIT_REASON =
  'needs 38.2 GiB; 20.9 GiB budget, 14.1 GiB held by pinned demo-chat (12 GiB) and active coder-7b (2.1 GiB)';

/**
 * What place() says for a model too big for two GPUs of different classes with one pinned model
 * (its own words, from a run with these figures; a strict reason counts only pinned holders).
 */
export const UNFIT_TWO_GPUS_REASON =
  'needs 40 GiB; GPU 0 NVIDIA GeForce RTX 4090: 23 GiB budget, 12 GiB held by pinned qwen-14b (12 GiB), 11 GiB free; ' +
  'GPU 1 NVIDIA GeForce RTX 3060: 8 GiB budget, all free; ' +
  'a split across mixed GPUs is off for this model (mixedSplit); part on the CPU needs host RAM, 24 GiB free: it fits only if a pinned model is unpinned';

/** demo-broken's file is cut short: its first load failed as `invalid`, and it waits for a person. */
export function quarantined(): Snapshot {
  return snapshot({
    models: [
      model('demo-broken', {
        status: {
          state: 'quarantined',
          next: 'waiting for a retry or a changed definition',
          recovery: { kind: 'invalid', attempts: 1, nextAction: 'quarantine', nextAttemptAt: null, lastError: CORRUPT_MODEL_ERROR },
        },
      }, 0.01),
    ],
  });
}

/**
 * Two GPUs of different classes: qwen-14b split over both, mixtral partly in RAM, big-70b left
 * out with a reason that names each GPU.
 */
export function placedOnTwoGpus(): Snapshot {
  return snapshot({
    models: [
      model('qwen-14b', {
        pinned: true, desired: true, draftId: 'qwen-0.5b', layerCount: 48,
        placement: { kind: 'split', devices: [{ index: 0, layers: 30, bytes: 7.4 * GiB }, { index: 1, layers: 18, bytes: 4.6 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
        status: { state: 'ready', level: 'full' },
      }, 12),
      model('qwen-0.5b', {}, 0.6),
      model('mixtral', {
        desired: true, layerCount: 32,
        placement: { kind: 'partial', devices: [{ index: 0, layers: 20, bytes: 3.6 * GiB }], cpuMoeLayers: 0, hostBytes: 6.2 * GiB },
        status: { state: 'degraded', level: 'partial', recovery: { kind: 'oom', attempts: 2, nextAction: 'degrade', lastError: CUDA_OOM_ERROR } },
      }, 9.8),
      model('big-70b', { desired: true, status: { state: 'queued', unschedulableReason: UNFIT_TWO_GPUS_REASON } }, 40),
    ],
    budget: budget([
      gpu(0, { totalGiB: 24, holders: [holder('model', 'qwen-14b', 7 * GiB), holder('draft', 'qwen-0.5b', 400 * MiB), holder('model', 'mixtral', 3.6 * GiB)] }),
      gpu(1, { name: 'NVIDIA GeForce RTX 3060', totalGiB: 12, othersGiB: 3, holders: [holder('model', 'qwen-14b', 4.6 * GiB)] }),
    ]),
    plan: plan({ unschedulable: [{ modelId: 'big-70b', reason: UNFIT_TWO_GPUS_REASON, strict: true }] }),
  });
}

/** demo-broken crashed twice and retries in 4 seconds. */
export function retrying(): Snapshot {
  return snapshot({
    models: [
      model('demo-broken', {
        desired: true,
        status: {
          state: 'queued',
          level: 'full',
          next: 'retrying in 4 s',
          recovery: { kind: 'crash', attempts: 2, nextAction: 'retry', nextAttemptAt: NOW + 4_000, lastError: CORRUPT_MODEL_ERROR },
        },
      }),
    ],
  });
}

/** demo-chat ran out of GPU memory twice and now runs with half its layers on the CPU. */
export function partlyOnCpu(): Snapshot {
  return snapshot({
    models: [
      model('demo-chat', {
        desired: true,
        pinned: true,
        status: {
          state: 'degraded',
          level: 'partial',
          next: 'running partly on the CPU after 2 out-of-memory failures; retry to try the GPU alone again',
          recovery: { kind: 'oom', attempts: 2, nextAction: 'degrade', lastError: CUDA_OOM_ERROR },
        },
      }, 6),
    ],
  });
}

/** demo-chat ran out of GPU memory three times and now runs on the CPU. */
export function degradedToCpu(): Snapshot {
  return snapshot({
    models: [
      model('demo-chat', {
        desired: true,
        pinned: true,
        measuredBytes: 5.1 * GiB,
        status: {
          state: 'degraded',
          level: 'minimal',
          next: 'running on the CPU after 3 out-of-memory failures; retry to try the GPU again',
          recovery: { kind: 'oom', attempts: 3, nextAction: 'fallback', lastError: CUDA_OOM_ERROR },
        },
      }, 6),
    ],
  });
}

/** demo-chat cannot launch; demo-tiny answers in its place. */
export function fallbackServing(): Snapshot {
  return snapshot({
    models: [
      model('demo-chat', {
        desired: true,
        fallbackId: 'demo-tiny',
        status: {
          state: 'fallback',
          level: null,
          servedBy: 'demo-tiny',
          next: 'demo-tiny answers until you retry demo-chat',
          recovery: { kind: 'oom', attempts: 3, nextAction: 'quarantine', lastError: CUDA_OOM_ERROR },
        },
      }, 6),
      model('demo-tiny', { inFlight: 1, lastUsed: NOW - 2_000, status: { state: 'active', level: 'full' } }, 0.2),
    ],
    budget: budget([gpu(0, { totalGiB: 8, holders: [holder('model', 'demo-tiny', 0.2 * GiB)] })]),
  });
}

/** big-70b does not fit next to what is pinned and active; the plan says why. */
export function unschedulable(): Snapshot {
  return snapshot({
    models: [
      model('demo-chat', { pinned: true, desired: true, status: { state: 'ready', level: 'full' } }, 12),
      model('coder-7b', { inFlight: 2, lastUsed: NOW - 1_000, status: { state: 'active', level: 'full' } }, 2.1),
      model('big-70b', { desired: true, status: { state: 'queued', unschedulableReason: UNFIT_REASON } }, 38.2),
    ],
    plan: plan({ launch: ['coder-7b'], evict: ['demo-tiny'], unschedulable: [{ modelId: 'big-70b', reason: UNFIT_REASON, strict: true }] }),
  });
}

/** Two GPUs; a game holds 3 GiB of the second. */
export function twoGpusWithOtherProgram(): Snapshot {
  return snapshot({
    models: [
      model('qwen-14b', { pinned: true, draftId: 'qwen-0.5b', measuredBytes: 9.6 * GiB, status: { state: 'ready', level: 'full' } }, 9.2),
      model('qwen-0.5b', {}, 0.6),
      model('llama-8b', { lastUsed: NOW - 95_000, status: { state: 'ready', level: 'full' } }, 5.5),
    ],
    budget: budget([
      gpu(0, { totalGiB: 24, holders: [holder('model', 'qwen-14b', 9.6 * GiB), holder('draft', 'qwen-0.5b', 600 * MiB)] }),
      gpu(1, { name: 'NVIDIA GeForce RTX 3060', totalGiB: 12, othersGiB: 3, holders: [holder('model', 'llama-8b', 5.5 * GiB)] }),
    ]),
  });
}

/** Nothing found yet: the empty state shows where models come from. */
export function emptyCatalog(): Snapshot {
  return snapshot({
    models: [],
    modelDirs: ['/home/ada/models', '/home/ada/.cache/lm-studio/models'],
    configPath: '/home/ada/.config/llmtray/config.yaml',
  });
}

/** demo-chat is 42% loaded, 12 s in. */
export function loading(): Snapshot {
  return snapshot({
    models: [
      model('demo-chat', {
        desired: true,
        loading: { fraction: 0.42, startedAt: NOW - 12_000, expectedMs: null },
        status: { state: 'loading', level: 'full', next: 'loading weights' },
      }, 6),
    ],
  });
}

/** Everything at once, for the screenshots: a busy machine with a few troubles. */
export function showcase(): Snapshot {
  return snapshot({
    models: [
      model('qwen-14b', {
        pinned: true, desired: true, draftId: 'qwen-0.5b', inFlight: 2, lastUsed: NOW - 3_000, measuredBytes: 9.6 * GiB,
        contextTokens: 16384, layerCount: 48,
        placement: { kind: 'gpu', devices: [{ index: 0, layers: 48, bytes: 10.2 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
        status: { state: 'active', level: 'full' },
      }, 9.2),
      model('llama-8b', {
        desired: true, lastUsed: NOW - 95_000,
        placement: { kind: 'gpu', devices: [{ index: 1, layers: 32, bytes: 5.5 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
        status: { state: 'ready', level: 'full' },
      }, 5.5),
      model('demo-chat', {
        desired: true, loading: { fraction: 0.42, startedAt: NOW - 12_000, expectedMs: null },
        placement: { kind: 'gpu', devices: [{ index: 0, layers: 28, bytes: 2.4 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
        status: { state: 'loading', level: 'smaller-context', next: 'loading weights' },
      }, 3),
      model('qwen-0.5b', { lastUsed: NOW - 3_000 }, 0.6),
      model('big-70b', { desired: true, status: { state: 'queued', unschedulableReason: UNFIT_TWO_GPUS_REASON } }, 38.2),
      model('demo-broken', {
        status: {
          state: 'quarantined', next: 'waiting for a retry or a changed definition',
          recovery: { kind: 'invalid', attempts: 1, nextAction: 'quarantine', lastError: CORRUPT_MODEL_ERROR },
        },
      }, 0.01),
    ],
    budget: budget([
      gpu(0, {
        totalGiB: 24,
        holders: [holder('model', 'qwen-14b', 9.6 * GiB), holder('draft', 'qwen-0.5b', 600 * MiB), holder('model', 'demo-chat', 2.4 * GiB)],
      }),
      gpu(1, { name: 'NVIDIA GeForce RTX 3060', totalGiB: 12, othersGiB: 3, holders: [holder('model', 'llama-8b', 5.5 * GiB)] }),
    ]),
    plan: plan({ launch: ['demo-chat'], evict: ['mistral-7b'], unschedulable: [{ modelId: 'big-70b', reason: UNFIT_TWO_GPUS_REASON, strict: true }] }),
  });
}
