// Snapshots for the Electron adapter tests: one model in any state, and a snapshot around them.
import type { ModelStatus } from '../../../core/contracts/model-status.js';
import type { ModelView, Snapshot } from '../../../core/contracts/snapshot.js';
import { fixtureModel } from '../../support/fixture-snapshot.js';

export const GiB = 1024 ** 3;
export const NOW = 1_700_000_100_000;

export function model(id: string, status: Partial<ModelStatus> = {}, view: Partial<ModelView> = {}): ModelView {
  const base = fixtureModel(id, view);
  return { ...base, status: { ...base.status, modelId: id, since: NOW - 60_000, ...status } };
}

export function snapshot(models: ModelView[], overrides: Partial<Snapshot> = {}): Snapshot {
  return {
    revision: 7,
    startedAt: NOW - 3_600_000,
    endpoint: 'http://127.0.0.1:8080/v1',
    models,
    budget: {
      mode: 'gpu',
      budgetBytes: 24 * GiB,
      usedBytes: 17.2 * GiB,
      limitBytes: null,
      gpus: [],
      holders: [],
      hostTotalBytes: 64 * GiB,
      hostAvailableBytes: 40 * GiB,
      sampledAt: NOW,
    },
    plan: null,
    configErrors: [],
    configPath: '/home/ada/.config/llmtray/config.yaml',
    modelDirs: ['/home/ada/models'],
    ...overrides,
  };
}
