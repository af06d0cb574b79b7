// The hang watch on a fake clock: a busy server with no progress for its limit is judged hung
// once; progress or the end of the busy turn prevents it; and busy turns that come and go with
// every request keep at most one look pending, never a chain per turn.
import { describe, expect, it } from 'vitest';
import { HangWatch, lookIntervalMs, type EngineLook } from '../../../core/engine/supervisor/hang/hang-watch.js';
import { FakeClock, settle } from '../../support/fake-clock.js';

const LIMIT_MS = 4_000;
const INTERVAL_MS = lookIntervalMs(LIMIT_MS);

function watchWith(look: () => EngineLook) {
  const clock = new FakeClock();
  let mark = 0;
  let looks = 0;
  const hung: string[] = [];
  const watch = new HangWatch({
    clock,
    limitMs: LIMIT_MS,
    progressMark: () => mark,
    inFlight: () => 1,
    look: async () => {
      looks++;
      return look();
    },
    onHung: (reason) => hung.push(reason),
  });
  return { clock, watch, hung, progress: () => mark++, looks: () => looks };
}

const silent: EngineLook = { healthAnswered: false, slots: null };

describe('HangWatch', () => {
  it('judges a busy server that makes no progress hung once, after its limit, saying why', async () => {
    const { clock, watch, hung } = watchWith(() => silent);
    watch.start();
    await clock.advance(LIMIT_MS - INTERVAL_MS);
    expect(hung).toEqual([]);
    await clock.advance(INTERVAL_MS);
    await settle();
    expect(hung).toHaveLength(1);
    expect(hung[0]).toContain('its health probe did not answer');
    await clock.advance(LIMIT_MS * 3);
    expect(hung).toHaveLength(1);
    expect(clock.pendingDelays()).toEqual([]);
  });

  it('a wall-clock step forward is no time without progress: the limit still runs from the start', async () => {
    const { clock, watch, hung } = watchWith(() => silent);
    watch.start();
    clock.jumpWall(3_600_000);
    await clock.advance(LIMIT_MS - INTERVAL_MS);
    await settle();
    expect(hung).toEqual([]);
    await clock.advance(INTERVAL_MS);
    await settle();
    expect(hung).toHaveLength(1);
  });

  it('bytes to a client are progress: a server that keeps sending is never hung', async () => {
    const { clock, watch, hung, progress } = watchWith(() => silent);
    watch.start();
    for (let t = 0; t < LIMIT_MS * 5; t += INTERVAL_MS) {
      progress();
      await clock.advance(INTERVAL_MS);
    }
    expect(hung).toEqual([]);
  });

  it('busy turns that start and stop with every request keep one look pending, and a turn that lasts is still judged', async () => {
    const { clock, watch, hung } = watchWith(() => silent);
    const setTimeout = clock.setTimeout.bind(clock);
    let timersSet = 0;
    clock.setTimeout = (fn, ms) => {
      timersSet++;
      return setTimeout(fn, ms);
    };
    for (let i = 0; i < 1_000; i++) {
      watch.start();
      watch.stop();
    }
    expect(timersSet).toBe(1);
    expect(clock.pendingDelays()).toEqual([INTERVAL_MS]);
    // Idle: the pending look finds nothing to watch and schedules no other.
    await clock.advance(INTERVAL_MS);
    await settle();
    expect(clock.pendingDelays()).toEqual([]);
    expect(hung).toEqual([]);

    watch.start();
    await clock.advance(LIMIT_MS);
    await settle();
    expect(hung).toHaveLength(1);
  });

  it('judges from the start of the current turn, not from a pending look set by an earlier one', async () => {
    const { clock, watch, hung, looks } = watchWith(() => silent);
    watch.start();
    watch.stop();
    await clock.advance(INTERVAL_MS - 1);
    watch.start();
    // The earlier turn's look comes 1 ms into this one: it looks, and finds no hang yet.
    await clock.advance(1);
    await settle();
    expect(looks()).toBe(1);
    expect(hung).toEqual([]);
    await clock.advance(LIMIT_MS - INTERVAL_MS);
    expect(hung).toEqual([]);
    await clock.advance(INTERVAL_MS);
    await settle();
    expect(hung).toHaveLength(1);
  });

  it('close() drops the pending look: a server that ended is never judged', async () => {
    const { clock, watch, hung } = watchWith(() => silent);
    watch.start();
    watch.close();
    expect(clock.pendingDelays()).toEqual([]);
    await clock.advance(LIMIT_MS * 2);
    expect(hung).toEqual([]);
  });
});
