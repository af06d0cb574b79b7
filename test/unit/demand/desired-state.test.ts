// What the daemon's desired state tells the controller: the warm spare's ask, present only where
// the models' memory is host RAM (a spare starts a CPU backend) and the config allows one (whether
// it fits is the controller's); and each model's engine: node-llama-cpp 3.21 takes no
// tensorSplit, so a model on the embedded engine is planned on one GPU at most (issue 23, item 5).
import { describe, expect, it } from 'vitest';
import { DaemonDesiredState, demandOf } from '../../../core/demand/desired-state.js';
import { ModelActivity } from '../../../core/demand/activity.js';
import type { BudgetSample } from '../../../core/gpu/live-budget.js';
import { oneGpuBudget } from '../../bench/one-gpu-budget.js';
import { FakeClock } from '../../support/fake-clock.js';
import { catalogModel } from '../../support/catalog-model.js';

const MiB = 1024 ** 2;
const onCpu: BudgetSample = { mode: 'cpu', totalBytes: 400 * MiB, perGpu: [], hostTotalBytes: 800 * MiB, hostAvailableBytes: 400 * MiB, sampledAt: 0 };

function read(budget: BudgetSample, warmSpareBytes: () => number | null) {
  const desired = new DaemonDesiredState({
    models: () => [catalogModel('tiny')],
    isPinned: () => false,
    activity: new ModelActivity(new FakeClock()),
    inFlight: () => 0,
    warmSpareBytes,
    budget: async () => budget,
  });
  return desired.read();
}

describe('the desired state\'s warm spare', () => {
  it('asks for one on the CPU, with what it holds', async () => {
    expect((await read(onCpu, () => 75 * MiB)).warmSpare).toEqual({ bytes: 75 * MiB });
  });

  it.each([
    ['turned off in the config', onCpu, () => null],
    ['models on a GPU: a spare starts a CPU backend only', oneGpuBudget(400 * MiB, 800 * MiB, 0), () => 75 * MiB],
    ['unified memory', { ...onCpu, mode: 'unified' as const }, () => 75 * MiB],
  ])('asks for none: %s', async (_, budget, bytes) => {
    expect((await read(budget, bytes)).warmSpare).toBeUndefined();
  });
});

const sources = (splitsOverGpus: (id: string) => boolean) => ({
  isPinned: () => false,
  activity: new ModelActivity(new FakeClock()),
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
