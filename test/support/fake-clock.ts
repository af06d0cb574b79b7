// A clock that only moves when a test steps it, so timing behaviour (backoff, resync, retry
// delays) is tested exactly and without sleeping. It satisfies the controller's `Clock`.
//
// It keeps the two readings apart (core/common/clock.ts): `advance` moves both, `jumpWall` steps
// only the wall clock, as NTP or a resume does, so a test shows a step neither fires nor freezes
// a duration.
//
// Why `advance` is async: a fired timer usually starts promise work (a reconcile pass). The
// fake drains pending promise callbacks after each timer so that, when `advance` resolves,
// everything the elapsed time caused has happened. Draining uses one `setImmediate` turn: the
// event loop runs every queued microtask before it, and nothing here waits on real time.

interface PendingTimer {
  id: number;
  at: number;
  fn: () => void;
}

/** Lets every promise callback already queued (and those they queue) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class FakeClock {
  /** Monotonic ms: what timers and `elapsed()` run on. */
  private nowMs: number;
  /** Wall clock minus monotonic clock; `jumpWall` changes it. */
  private wallOffsetMs: number;
  private nextId = 1;
  private timers: PendingTimer[] = [];

  /**
   * `startMs`: the wall clock's first reading. `elapsedMs`: the monotonic one's, for a test
   * whose expectations are written in monotonic stamps (a waiter's arrival at 1 000).
   */
  constructor(startMs = 1_700_000_000_000, elapsedMs = 5_000) {
    // A monotonic origin unlike the epoch, so a reading taken from the wrong one shows.
    this.nowMs = elapsedMs;
    this.wallOffsetMs = startMs - this.nowMs;
  }

  now(): number {
    return this.nowMs + this.wallOffsetMs;
  }

  elapsed(): number {
    return this.nowMs;
  }

  /** Steps the wall clock alone by `ms` (negative: back), as NTP or a resume does; fires nothing. */
  jumpWall(ms: number): void {
    this.wallOffsetMs += ms;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.nextId++, at: this.nowMs + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** Delays (ms from now) of the timers still pending, soonest first. */
  pendingDelays(): number[] {
    return this.timers.map((t) => t.at - this.nowMs).sort((a, b) => a - b);
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due in order of its due time
   * (timers a callback sets within the window fire too), settling promise work after each.
   */
  async advance(ms: number): Promise<void> {
    const until = this.nowMs + ms;
    await settle();
    for (;;) {
      const due = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.nowMs = due.at;
      due.fn();
      await settle();
    }
    this.nowMs = until;
    await settle();
  }
}
