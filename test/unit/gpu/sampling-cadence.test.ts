// The budget's cadence: the running interval while a server of ours runs, the idle one
// (IDLE_BUDGET_INTERVAL_MS, or the config's budget.idleSample, read at each sample) while none
// does, and back to the running one at once when a server starts.
import { describe, expect, it } from 'vitest';
import { IDLE_BUDGET_INTERVAL_MS, sampleAtCadence } from '../../../core/gpu/sampling-cadence.js';

/** A budget that records what start() was given; `next()` is the wait after a sample. */
function recordingBudget() {
  let next: (() => number) | null = null;
  let starts = 0;
  return {
    budget: {
      start: (interval: number | (() => number)) => {
        starts += 1;
        next = typeof interval === 'number' ? () => interval : interval;
      },
      stop: () => {
        next = null;
      },
    },
    waitAfterSample: (): number => {
      if (next === null) throw new Error('the budget is not sampling');
      return next();
    },
    starts: () => starts,
  };
}

describe('the budget sampling cadence', () => {
  it('waits the running interval while a server runs and the idle one while none does', () => {
    const rec = recordingBudget();
    let busy = true;
    sampleAtCadence(rec.budget, 2000, () => busy);
    expect(rec.waitAfterSample()).toBe(2000);
    busy = false;
    expect(rec.waitAfterSample()).toBe(IDLE_BUDGET_INTERVAL_MS);
  });

  it("takes the config's idle interval at each sample, so a reloaded one applies from the next, and never samples faster than the running interval", () => {
    const rec = recordingBudget();
    let idleSample: number | undefined = 3000;
    sampleAtCadence(rec.budget, 2000, () => false, () => idleSample);
    expect(rec.waitAfterSample()).toBe(3000);
    idleSample = 60_000;
    expect(rec.waitAfterSample()).toBe(60_000);
    idleSample = 1000;
    expect(rec.waitAfterSample()).toBe(2000);
    idleSample = undefined;
    expect(rec.waitAfterSample()).toBe(IDLE_BUDGET_INTERVAL_MS);
  });

  it('restarts at once on a server start while idle, and not while already at the running cadence', () => {
    const rec = recordingBudget();
    let busy = false;
    const cadence = sampleAtCadence(rec.budget, 2000, () => busy);
    rec.waitAfterSample(); // the first sample found nothing running
    cadence.serverStarted();
    expect(rec.starts()).toBe(2);
    busy = true;
    rec.waitAfterSample();
    cadence.serverStarted();
    expect(rec.starts()).toBe(2);
    cadence.stop();
    expect(() => rec.waitAfterSample()).toThrow('not sampling');
  });
});
