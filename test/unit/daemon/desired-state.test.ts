// What the daemon tells the controller about each model's engine: node-llama-cpp 3.21 takes no
// tensorSplit, so a model on the embedded engine is planned on one GPU at most (issue 23, item 5).
import { describe, expect, it } from 'vitest';
import { demandOf } from '../../../core/daemon/desired-state.js';
import { ModelActivity } from '../../../core/daemon/activity.js';
import { catalogModel } from './catalog-model.js';

const sources = (splitsOverGpus: (id: string) => boolean) => ({
  isPinned: () => false,
  activity: new ModelActivity({ now: () => 0, elapsed: () => 0 }),
  inFlight: () => 0,
  splitsOverGpus: (model: { id: string }) => splitsOverGpus(model.id),
});

describe('demandOf', () => {
  it('marks a model whose engine cannot split by shares as one-GPU, and leaves a llama-server model free to split', () => {
    const engineOf = (id: string) => id === 'served';
    expect(demandOf(catalogModel('embedded'), sources(engineOf)).oneGpu).toBe(true);
    expect(demandOf(catalogModel('served'), sources(engineOf)).oneGpu).toBeUndefined();
  });
});
