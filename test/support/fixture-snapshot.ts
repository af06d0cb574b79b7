// A small, realistic admin snapshot for the admin tests: one model ready on the GPU, one
// quarantined with no server (the seed's case: its series must still exist), one idle whose
// id needs escaping in a Prometheus label and encoding in a URL.
import type { ModelView, Snapshot } from '../../core/contracts/snapshot.js';
import { GiB, model } from '../../renderer/src/test-fixtures/snapshot-builder.js';

/** The renderer's model builder, with this fixture's path, context, estimates and clock. */
export function fixtureModel(id: string, overrides: Partial<ModelView> = {}): ModelView {
  return model(id, {
    path: `/models/${id}.gguf`,
    contextTokens: 4096,
    estimateBytes: { full: 6 * GiB, 'smaller-context': 4 * GiB, partial: 2 * GiB, minimal: 0 },
    ...overrides,
    status: { since: 1_700_000_000_000, ...overrides.status },
  });
}

export function fixtureSnapshot(): Omit<Snapshot, 'revision'> {
  const ready = fixtureModel('llama-3.1-8b', {
    aliases: ['llama'],
    pinned: true,
    desired: true,
    inFlight: 2,
    measuredBytes: 5.5 * GiB,
    status: { ...fixtureModel('x').status, modelId: 'llama-3.1-8b', state: 'ready', phase: 'serving', level: 'full' },
    upstream: { baseUrl: 'http://127.0.0.1:40001', pid: 4242 },
  });
  const quarantined = fixtureModel('kev-0.5b', {
    desired: true,
    status: {
      ...fixtureModel('x').status,
      modelId: 'kev-0.5b',
      state: 'quarantined',
      phase: 'quarantined',
      recovery: { kind: 'crash', attempts: 5, nextAction: 'quarantine', nextAttemptAt: null, lastError: "unknown model architecture: 'kev'" },
      unschedulableReason: null,
      next: 'waiting for a retry',
    },
  });
  const odd = fixtureModel('odd"name\\v1\nx');
  return {
    startedAt: 1_700_000_000_000,
    endpoint: 'http://127.0.0.1:8080/v1',
    networkEndpoints: [],
    keysRequired: false,
    clientKeyNames: [],
    models: [ready, quarantined, odd],
    budget: {
      mode: 'gpu',
      budgetBytes: 20 * GiB,
      usedBytes: 6 * GiB,
      limitBytes: null,
      holders: [{ kind: 'model', modelId: 'qwen-7b', bytes: 6 * GiB }],
      gpus: [
        {
          index: 0,
          name: 'NVIDIA GeForce RTX 4090',
          totalBytes: 24 * GiB,
          usedByOthersBytes: 3 * GiB,
          usedByUsBytes: 6 * GiB,
          reserveBytes: 1 * GiB,
          budgetBytes: 20 * GiB,
          holders: [{ kind: 'model', modelId: 'llama-3.1-8b', bytes: 6 * GiB }],
        },
      ],
      hostTotalBytes: 64 * GiB,
      hostAvailableBytes: 40 * GiB,
      savedConversationsBytes: 0,
      sampledAt: 1_700_000_000_000,
    },
    plan: null,
    configErrors: [],
    configInForce: 'file',
    configPath: '/home/me/.config/llmtray/config.yaml',
    modelDirs: ['/models'],
    lostOutputs: [],
  };
}

/**
 * The fixture while a second model loads: one ready, one loading (its server started, its
 * memory being taken), one quarantined and one idle. For the surfaces that count what is
 * resident: each once counted the loading model its own way.
 */
export function fixtureSnapshotDuringLoad(): Snapshot {
  const base = fixtureSnapshot();
  const loading = fixtureModel('qwen-7b', {
    desired: true,
    status: { ...fixtureModel('x').status, modelId: 'qwen-7b', state: 'loading', phase: 'loading', level: 'full' },
    loading: { startedAt: 1_700_000_000_000, fraction: 0.4, expectedMs: null },
    upstream: { baseUrl: 'http://127.0.0.1:40002', pid: 4343 },
  });
  return { ...base, revision: 1, models: [...base.models, loading] };
}
