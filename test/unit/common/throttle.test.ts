import { describe, expect, it } from 'vitest';
import { createThrottle } from '../../../core/common/throttle.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('createThrottle', () => {
  it('runs the first request at once', () => {
    const clock = new FakeClock();
    let runs = 0;
    createThrottle(() => runs++, 250, clock).request();
    expect(runs).toBe(1);
    expect(clock.pendingDelays()).toEqual([]);
  });

  it('turns a burst within the interval into one trailing run at the end of it', async () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    let state = 0;
    const throttle = createThrottle(() => seen.push(state), 250, clock);
    throttle.request();
    for (let i = 1; i <= 5; i++) {
      state = i;
      await clock.advance(20);
      throttle.request();
    }
    expect(seen).toEqual([0]);
    expect(clock.pendingDelays()).toEqual([150]);
    await clock.advance(150);
    // The trailing run sees the latest state.
    expect(seen).toEqual([0, 5]);
    await clock.advance(1000);
    expect(seen).toEqual([0, 5]);
  });

  it('a wall-clock step back does not hold the next run, nor a step forward hurry it', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const throttle = createThrottle(() => runs++, 250, clock);
    throttle.request();
    clock.jumpWall(3_600_000);
    throttle.request();
    expect(runs).toBe(1);
    expect(clock.pendingDelays()).toEqual([250]);
    await clock.advance(250);
    expect(runs).toBe(2);
    clock.jumpWall(-7_200_000);
    await clock.advance(250);
    throttle.request();
    expect(runs).toBe(3);
  });

  it('runs at once again after a quiet interval', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const throttle = createThrottle(() => runs++, 250, clock);
    throttle.request();
    await clock.advance(250);
    throttle.request();
    expect(runs).toBe(2);
  });

  it('cancel drops the pending run', async () => {
    const clock = new FakeClock();
    let runs = 0;
    const throttle = createThrottle(() => runs++, 250, clock);
    throttle.request();
    throttle.request();
    throttle.cancel();
    throttle.cancel();
    await clock.advance(1000);
    expect(runs).toBe(1);
  });
});
