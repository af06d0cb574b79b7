// What keeps a model wanted because of use, and what does not: the difference between a
// request served (the idle TTL runs) and a request refused (a short grace, then nothing).
import { describe, expect, it } from 'vitest';
import { DEMAND_GRACE_MS, ModelActivity } from '../../../core/daemon/activity.js';

function activityAt(start = 1_000_000) {
  const clock = { t: start, now: () => clock.t };
  return { clock, activity: new ModelActivity(clock) };
}

const TTL = 600_000;

describe('ModelActivity', () => {
  it('counts requests in flight and stamps the last use at start and finish', () => {
    const { clock, activity } = activityAt();
    const finishA = activity.begin('m');
    const finishB = activity.begin('m');
    expect(activity.inFlight('m')).toBe(2);
    clock.t += 5_000;
    finishA();
    finishA(); // idempotent: 'close' and 'error' may both call it
    expect(activity.inFlight('m')).toBe(1);
    expect(activity.lastUsed('m')).toBe(clock.t);
    finishB();
    expect(activity.inFlight('m')).toBe(0);
  });

  it('keeps a served model wanted for its idle TTL and no longer', () => {
    const { clock, activity } = activityAt();
    activity.begin('m')();
    clock.t += TTL - 1;
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    clock.t += 1;
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('keeps a refused demand wanted only for the short grace, however long the TTL', () => {
    const { clock, activity } = activityAt();
    activity.demand('m');
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    expect(activity.lastUsed('m')).toBe(clock.t);
    clock.t += DEMAND_GRACE_MS;
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('keeps a model wanted while a request waits for it, past the grace', () => {
    const { clock, activity } = activityAt();
    activity.demand('m');
    const done = activity.wait('m');
    clock.t += DEMAND_GRACE_MS * 3;
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    done();
    done();
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('a person’s Load keeps it for the TTL; Unload forgets every use', () => {
    const { clock, activity } = activityAt();
    activity.use('m');
    clock.t += TTL / 2;
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    activity.forget('m');
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
    expect(activity.lastUsed('m')).toBeUndefined();
  });

  it('Unload forgets a model that was both served and just demanded', () => {
    const { activity } = activityAt();
    activity.begin('m')();
    activity.demand('m');
    activity.forget('m');
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('tells its listeners about every change', () => {
    const { activity } = activityAt();
    let changes = 0;
    const unsubscribe = activity.onChange(() => changes++);
    const finish = activity.begin('m');
    finish();
    activity.demand('m');
    unsubscribe();
    activity.demand('m');
    expect(changes).toBe(3);
  });
});
