// Snapshots for the Electron adapter tests: one model in any state, and a snapshot around them,
// built with the renderer's builders so a field added to the contract is filled in one place.
import { phaseOfState, type ModelStatus } from '../../../core/contracts/model-status.js';
import type { ModelView, Snapshot } from '../../../core/contracts/snapshot.js';
import { budget, GiB, snapshot as buildSnapshot } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import { fixtureModel } from '../../support/fixture-snapshot.js';

export { GiB };
export const NOW = 1_700_000_100_000;

export function model(id: string, status: Partial<ModelStatus> = {}, view: Partial<ModelView> = {}): ModelView {
  const base = fixtureModel(id, view);
  // A case names the summary word; the phase and busy it implies follow unless the case gives them.
  const state = status.state ?? base.status.state;
  const implied = { phase: phaseOfState(state), busy: state === 'active' };
  return { ...base, status: { ...base.status, modelId: id, since: NOW - 60_000, ...implied, ...status } };
}

/** No GPUs listed; 17.2 GiB of a 24 GiB budget in use. */
export function snapshot(models: ModelView[], overrides: Partial<Snapshot> = {}): Snapshot {
  return buildSnapshot({
    startedAt: NOW - 3_600_000,
    endpoint: 'http://127.0.0.1:8080/v1',
    models,
    budget: budget([], { mode: 'gpu', budgetBytes: 24 * GiB, usedBytes: 17.2 * GiB, sampledAt: NOW }),
    ...overrides,
  });
}
