// The tray's words move while a model loads.
//
// "demo-chat — loading 42 %, 1.2 s" counts its seconds, and an estimated percent grows with them,
// but the menu was rebuilt only when a snapshot came: between two of them (the engine's fraction is
// republished at most twice a second, and an engine that reports none is republished not at all)
// the tray said the same words while the dashboard's card and a waiting stream's comments moved on
// (issue 13). So while the latest snapshot shows a load, the menu is rebuilt once a second with the
// time now; once one shows none, the timer stops, and an idle app wakes for nothing.
//
// Why a chain of timeouts on the injected clock and not setInterval: the tests step a fake clock,
// and each tick decides afresh whether another is due.
import type { Clock } from '../core/common/clock.js';
import type { Snapshot } from '../core/contracts/snapshot.js';

/** How often the menu is rebuilt during a load: its seconds are the smallest unit that moves on it. */
export const LOAD_TICK_MS = 1_000;

/** Whether a model of the snapshot is loading with progress to show, whose words move with the time. */
export function showsLoad(snapshot: Snapshot): boolean {
  return snapshot.models.some((model) => model.loading !== null);
}

export interface LoadTicker {
  /**
   * Follows the latest snapshot: ticks every LOAD_TICK_MS from now on while it shows a load, stops
   * ticking when it shows none. Never blocks; idempotent for the same answer of showsLoad.
   */
  follow(snapshot: Snapshot): void;
  /** Stops for good (on quit): no tick after it, whatever is followed. Idempotent. */
  stop(): void;
}

/** `tick` runs once per LOAD_TICK_MS while the followed snapshot shows a load; it rebuilds the menu. */
export function createLoadTicker(tick: () => void, clock: Clock): LoadTicker {
  let loading = false;
  let stopped = false;
  let timer: unknown = null;
  const schedule = (): void => {
    timer = clock.setTimeout(() => {
      timer = null;
      tick();
      if (loading) schedule();
    }, LOAD_TICK_MS);
  };
  const clear = (): void => {
    if (timer !== null) clock.clearTimeout(timer);
    timer = null;
  };
  return {
    follow(snapshot) {
      if (stopped) return;
      loading = showsLoad(snapshot);
      if (!loading) clear();
      else if (timer === null) schedule();
    },
    stop() {
      stopped = true;
      clear();
    },
  };
}
