// The tray's words that move with the clock: a load's and a retry's.
//
// "demo-chat — loading 42 %, 1.2 s" counts its seconds, and an estimated percent grows with them;
// "failed: crashed, retrying in 4 s" counts down. But the menu was rebuilt only when a snapshot
// came: between two of them (a load's fraction is republished at most twice a second, one that
// reports none and a retry's wait are republished not at all) the tray said the same words while
// the dashboard's card and a waiting stream's comments moved on (issue 13). So while the latest
// snapshot shows such words, the menu is rebuilt once a second with the time now; once one shows
// none, the timer stops, and an idle app wakes for nothing.
//
// Why a chain of timeouts on the injected clock and not setInterval: the tests step a fake clock,
// and each tick decides afresh whether another is due.
import type { Clock } from '../core/common/clock.js';
import type { Snapshot } from '../core/contracts/snapshot.js';

/** How often the menu is rebuilt while its words move: seconds are the smallest unit that moves on it. */
export const CLOCK_TICK_MS = 1_000;

/**
 * Whether a model of the snapshot has words that move with the time (tray-menu.ts's status words):
 * a load with progress to show, or a failure counting down to its next attempt.
 */
export function showsClockWords(snapshot: Snapshot): boolean {
  return snapshot.models.some((model) => model.loading !== null || (model.status.state === 'failed' && model.status.recovery.nextAttemptAt !== null));
}

export interface ClockWordsTicker {
  /**
   * Follows the latest snapshot: ticks every CLOCK_TICK_MS from now on while it shows words that
   * move with the time, stops ticking when it shows none. Never blocks; idempotent for the same
   * answer of showsClockWords.
   */
  follow(snapshot: Snapshot): void;
  /** Stops for good (on quit): no tick after it, whatever is followed. Idempotent. */
  stop(): void;
}

/** `tick` runs once per CLOCK_TICK_MS while the followed snapshot shows such words; it rebuilds the menu. */
export function createClockWordsTicker(tick: () => void, clock: Clock): ClockWordsTicker {
  let moving = false;
  let stopped = false;
  let timer: unknown = null;
  const schedule = (): void => {
    timer = clock.setTimeout(() => {
      timer = null;
      tick();
      if (moving) schedule();
    }, CLOCK_TICK_MS);
  };
  const clear = (): void => {
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
  };
  return {
    follow(snapshot) {
      if (stopped) return;
      moving = showsClockWords(snapshot);
      if (!moving) clear();
      else if (timer === null) schedule();
    },
    stop() {
      stopped = true;
      clear();
    },
  };
}
