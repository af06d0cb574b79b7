// Turns on a fake clock: when a model's turn is over, and when its turn holds it idle for its
// client's next request (so that a waiting model does not evict it in that moment).
import { describe, expect, it } from 'vitest';
import { ModelActivity } from '../../../core/demand/activity.js';
import { ModelTurns, TURN_LINGER_MS } from '../../../core/demand/turns.js';
import { FakeClock } from '../../support/fake-clock.js';

function turnsWith(options: { turnMs?: number; rivals?: Record<string, string[]> } = {}) {
  // Its monotonic reading starts at 50 000; `jumpWall` steps the wall clock alone (NTP, a resume), which the turns must not see.
  const clock = new FakeClock(undefined, 50_000);
  const activity = new ModelActivity(clock);
  const inFlight = new Map<string, number>();
  const rivals = new Map(Object.entries(options.rivals ?? { a: ['b'] }));
  let passes = 0;
  const turns = new ModelTurns({
    rivalsOf: (id) => rivals.get(id) ?? [],
    passSoon: () => passes++,
    activity,
    inFlight: (id) => inFlight.get(id) ?? 0,
    turnMs: options.turnMs ?? 2_000,
    clock,
  });
  return { clock, activity, inFlight, rivals, turns, passes: () => passes };
}

describe('turns: when a model must let another go first', () => {
  it('is over once a model it stands in the way of has waited turnMs, not before, and never for a model nobody waits on', async () => {
    const { clock, activity, turns } = turnsWith({ turnMs: 2_000, rivals: { a: ['b'] } });
    expect(turns.isOver('a')).toBe(false);
    const bWaits = activity.wait('b');
    activity.wait('c'); // a is not in c's way
    await clock.advance(1_999);
    expect(turns.isOver('a')).toBe(false);
    await clock.advance(1);
    expect(turns.isOver('a')).toBe(true);
    expect(turns.isOver('c')).toBe(false);
    bWaits();
    expect(turns.isOver('a')).toBe(false);
  });

  it('is not over early when the wall clock steps forward while a rival waits', async () => {
    const { clock, activity, turns } = turnsWith({ turnMs: 2_000, rivals: { a: ['b'] } });
    activity.wait('b');
    clock.jumpWall(3_600_000);
    expect(turns.isOver('a')).toBe(false);
    await clock.advance(2_000);
    expect(turns.isOver('a')).toBe(true);
  });

  it('with turnMs 0 is over as soon as a rival waits', () => {
    const { activity, turns } = turnsWith({ turnMs: 0 });
    activity.wait('b');
    expect(turns.isOver('a')).toBe(true);
  });
});

describe('turns: holding a model its client just finished with', () => {
  it('holds it for the linger after its last request, while its turn lasts and a rival waits for its memory', async () => {
    const { clock, activity, turns } = turnsWith();
    activity.wait('b');
    turns.idled('a');
    expect(turns.holds('a')).toBe(true);
    await clock.advance(TURN_LINGER_MS - 1);
    expect(turns.holds('a')).toBe(true);
    await clock.advance(1);
    expect(turns.holds('a')).toBe(false);
  });

  it('a wall-clock step forward does not cut the hold short', () => {
    const { clock, activity, turns } = turnsWith();
    activity.wait('b');
    turns.idled('a');
    clock.jumpWall(3_600_000);
    expect(turns.holds('a')).toBe(true);
  });

  it('does not hold it once its turn is over: the rival that waited its turn goes first', async () => {
    const { clock, activity, turns } = turnsWith({ turnMs: 1_000 });
    activity.wait('b');
    await clock.advance(950);
    turns.idled('a');
    expect(turns.holds('a')).toBe(true);
    await clock.advance(50);
    expect(turns.holds('a')).toBe(false);
  });

  it('does not hold a model nobody waits on, nor with turnMs 0 (first come, first served), nor one that never served, nor a busy one (active anyway)', () => {
    const noRival = turnsWith({ rivals: {} });
    noRival.turns.idled('a');
    expect(noRival.turns.holds('a')).toBe(false);

    const fifo = turnsWith({ turnMs: 0 });
    fifo.activity.wait('b');
    fifo.turns.idled('a');
    expect(fifo.turns.holds('a')).toBe(false);

    const fresh = turnsWith();
    fresh.activity.wait('b');
    expect(fresh.turns.holds('a')).toBe(false);

    const busy = turnsWith();
    busy.activity.wait('b');
    busy.turns.idled('a');
    busy.inFlight.set('a', 1);
    expect(busy.turns.holds('a')).toBe(false);
  });

  it('asks for a pass once the linger is over, when something waits: nothing else would come if its client does not', async () => {
    const { clock, activity, turns, passes } = turnsWith();
    turns.idled('a'); // nothing waits: no pass needed, the model simply stays
    await clock.advance(TURN_LINGER_MS + 1);
    expect(passes()).toBe(0);

    activity.wait('b');
    turns.idled('a');
    await clock.advance(TURN_LINGER_MS);
    expect(passes()).toBe(0);
    await clock.advance(1);
    expect(passes()).toBe(1);
    expect(turns.holds('a')).toBe(false);
  });

  it('leaves no pass pending once closed', async () => {
    const { clock, activity, turns, passes } = turnsWith();
    activity.wait('b');
    turns.idled('a');
    turns.close();
    await clock.advance(TURN_LINGER_MS + 1);
    expect(passes()).toBe(0);
  });
});
