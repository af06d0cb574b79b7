// A throttle that collapses bursts: the first request runs at once, later ones within the
// interval become one trailing run that sees the latest state, and nothing is left pending once
// requests stop. Two users: the tray menu (rebuilding a native menu is not free; on Linux it
// re-exports the whole menu over D-Bus) and the daemon's republishing of a load's progress
// (core/daemon/load-progress-feed.ts). Time comes from an injected clock so the behaviour is
// tested without sleeping.

import type { Clock } from './clock.js';

export interface Throttle {
  /** Asks for a run. Never blocks; runs now, or once at the end of the current interval. */
  request(): void;
  /** Drops a pending trailing run. Idempotent. */
  cancel(): void;
}

export function createThrottle(run: () => void, intervalMs: number, clock: Clock): Throttle {
  let lastRunAt = Number.NEGATIVE_INFINITY;
  let pending: unknown = null;
  const fire = (): void => {
    pending = null;
    lastRunAt = clock.elapsed();
    run();
  };
  return {
    request() {
      if (pending !== null) return;
      const wait = lastRunAt + intervalMs - clock.elapsed();
      if (wait <= 0) fire();
      else pending = clock.setTimeout(fire, wait);
    },
    cancel() {
      if (pending !== null) clock.clearTimeout(pending);
      pending = null;
    },
  };
}
