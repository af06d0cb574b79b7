// What keeps a model wanted because of use, and what does not: the difference between a
// request served (the idle TTL runs) and a request refused (a short grace, then nothing); and
// the order in which waiting requests arrived, which decides whose turn it is.
import { describe, expect, it } from 'vitest';
import { DEMAND_GRACE_MS, ModelActivity } from '../../../core/demand/activity.js';
import { FakeClock } from '../../support/fake-clock.js';

/** The activity on a fake clock whose monotonic reading starts at `start`; `jumpWall` steps the wall clock alone, as NTP or a resume does. */
function activityAt(start = 1_000_000) {
  const clock = new FakeClock(undefined, start);
  return { clock, activity: new ModelActivity(clock) };
}

const TTL = 600_000;

describe('ModelActivity', () => {
  it('stamps the last use at each use (a claim and its release)', async () => {
    const { clock, activity } = activityAt();
    expect(activity.lastUsed('m')).toBeUndefined();
    activity.use('m');
    const claimedAt = clock.elapsed();
    expect(activity.lastUsed('m')).toBe(claimedAt);
    await clock.advance(5_000);
    activity.use('m');
    expect(activity.lastUsed('m')).toBe(claimedAt + 5_000);
    expect(activity.lastUsed('other')).toBeUndefined();
  });

  it('keeps a served model wanted for its idle TTL and no longer', async () => {
    const { clock, activity } = activityAt();
    activity.use('m');
    await clock.advance(TTL - 1);
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    await clock.advance(1);
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it("takes an app's keep_alive as the model's idle TTL until an Unload, 0 ending even the demand's grace", async () => {
    const { clock, activity } = activityAt();
    activity.use('m');
    activity.keepFor('m', 5_000);
    expect(activity.idleTtl('m', TTL)).toBe(5_000);
    await clock.advance(5_000);
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
    activity.keepFor('m', Infinity);
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    activity.demand('cold');
    activity.use('cold');
    activity.keepFor('cold', 0);
    expect(activity.recentlyUsed('cold', TTL)).toBe(false);
    activity.forget('m');
    expect(activity.idleTtl('m', TTL)).toBe(TTL);
  });

  it('a wall-clock step neither ends the idle TTL (forward: nothing unloads) nor stretches it (back)', async () => {
    const { clock, activity } = activityAt();
    activity.use('m');
    clock.jumpWall(24 * 3_600_000);
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    clock.jumpWall(-48 * 3_600_000);
    await clock.advance(TTL);
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('a wall-clock step forward does not end a refused demand’s grace', () => {
    const { clock, activity } = activityAt();
    activity.demand('m');
    clock.jumpWall(3_600_000);
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
  });

  it('shows the last use in wall time and orders by the monotonic one', async () => {
    const { clock, activity } = activityAt();
    activity.use('a');
    const shownA = clock.now();
    await clock.advance(1_000);
    clock.jumpWall(-3_600_000); // the wall clock stepped back an hour: b is still the more recent
    activity.demand('b');
    expect(activity.lastUsedAt('a')).toBe(shownA);
    expect(activity.lastUsedAt('b')).toBe(clock.now());
    expect(activity.lastUsed('b')).toBeGreaterThan(activity.lastUsed('a') ?? Infinity);
    activity.forget('b');
    expect(activity.lastUsedAt('b')).toBeUndefined();
  });

  it('keeps a refused demand wanted only for the short grace, however long the TTL', async () => {
    const { clock, activity } = activityAt();
    activity.demand('m');
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    expect(activity.lastUsed('m')).toBe(clock.elapsed());
    await clock.advance(DEMAND_GRACE_MS);
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('keeps a model wanted while a request waits for it, past the grace', async () => {
    const { clock, activity } = activityAt();
    activity.demand('m');
    const done = activity.wait('m');
    await clock.advance(DEMAND_GRACE_MS * 3);
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    done();
    done();
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('a person’s Load keeps it for the TTL; Unload forgets every use', async () => {
    const { clock, activity } = activityAt();
    activity.use('m');
    await clock.advance(TTL / 2);
    expect(activity.recentlyUsed('m', TTL)).toBe(true);
    activity.forget('m');
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
    expect(activity.lastUsed('m')).toBeUndefined();
  });

  it('Unload forgets a model that was both served and just demanded', () => {
    const { activity } = activityAt();
    activity.use('m');
    activity.demand('m');
    activity.forget('m');
    expect(activity.recentlyUsed('m', TTL)).toBe(false);
  });

  it('tells its listeners about every change', () => {
    const { activity } = activityAt();
    let changes = 0;
    const unsubscribe = activity.onDidChange(() => changes++);
    const other = activity.wait('m');
    const done = activity.wait('m');
    done();
    done(); // no second change: the wait had already ended (while another still waits)
    other();
    activity.use('m');
    activity.demand('m');
    unsubscribe();
    activity.demand('m');
    expect(changes).toBe(6);
  });
});

describe('ModelActivity waiting order', () => {
  it('gives the oldest arrival still waiting, moving on in arrival order as waits end out of order', async () => {
    const { clock, activity } = activityAt(1_000);
    expect(activity.waitingSince('m')).toBeUndefined();
    const first = activity.wait('m');
    await clock.advance(1_000);
    const second = activity.wait('m');
    await clock.advance(1_000);
    const third = activity.wait('m');
    await clock.advance(1_000);
    expect(activity.waitingSince('m')).toBe(1_000);

    second(); // a later arrival leaving changes nothing: the oldest still waits
    expect(activity.waitingSince('m')).toBe(1_000);
    first();
    expect(activity.waitingSince('m')).toBe(3_000); // not 2 000: that one has gone
    third();
    expect(activity.waitingSince('m')).toBeUndefined();
    expect(activity.recentlyUsed('m', 0)).toBe(false);
  });

  it('keeps each model’s waiters apart', async () => {
    const { clock, activity } = activityAt(1_000);
    const a = activity.wait('a');
    await clock.advance(1_000);
    activity.wait('b');
    expect(activity.waitingSince('a')).toBe(1_000);
    expect(activity.waitingSince('b')).toBe(2_000);
    a();
    expect(activity.waitingSince('a')).toBeUndefined();
    expect(activity.waitingSince('b')).toBe(2_000);
  });

  it('ends a wait once however often its callback runs, never someone else’s', async () => {
    const { clock, activity } = activityAt(1_000);
    const first = activity.wait('m');
    await clock.advance(1_000);
    const second = activity.wait('m');
    first();
    first();
    first();
    expect(activity.waitingSince('m')).toBe(2_000);
    expect(activity.recentlyUsed('m', 0)).toBe(true);
    second();
    // A stale callback after the model's waiters are all gone, and a new arrival after it.
    first();
    await clock.advance(1_000);
    const third = activity.wait('m');
    second();
    expect(activity.waitingSince('m')).toBe(3_000);
    third();
    expect(activity.waitingSince('m')).toBeUndefined();
  });
});
