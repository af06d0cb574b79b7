// A load's progress onto the admin snapshot while the load goes on.
//
// Why: the snapshot is republished when something says "changed", and a loading engine's
// fraction moves between the lifecycle events that say so. Without this, the dashboard's card and
// the tray showed the fraction of the last unrelated event while a waiting stream's comments
// (core/router/http/progress-comments.ts, every 500 ms) counted on: issue 13 asks that all three show
// the same progress.
//
// Driven by the supervisor's own notification of a changed fraction, not by a poll: an idle
// daemon (and one serving loaded models) has no timer for this at all, and a load that reports no
// fraction costs nothing either (the dashboard and the tray move its seconds and its estimate
// from the time themselves). Throttled to the comments' cadence: at most one republish per
// LOAD_PROGRESS_REPUBLISH_MS, the latest fraction always sent (the trailing edge), so a burst of
// readiness checks at the start of a load is one snapshot, not ten.
import type { Clock } from '../common/clock.js';
import { createThrottle } from '../common/throttle.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';

/** Least time between two republishes for a fraction alone, ms: the waiting stream's comment cadence. */
export const LOAD_PROGRESS_REPUBLISH_MS = 500;

export interface LoadProgressFeedParts {
  supervisor: Pick<Supervisor, 'onLoadProgress'>;
  /** The admin service's "look again" (AdminService.changed): never blocks. */
  changed(): void;
  clock: Clock;
}

/**
 * Calls `changed` when a loading server's fraction changes, at most once per
 * LOAD_PROGRESS_REPUBLISH_MS. Returns the stop, which unsubscribes and drops a pending republish;
 * idempotent.
 */
export function feedLoadProgress(parts: LoadProgressFeedParts): () => void {
  const republish = createThrottle(() => parts.changed(), LOAD_PROGRESS_REPUBLISH_MS, parts.clock);
  const unsubscribe = parts.supervisor.onLoadProgress(() => republish.request());
  return () => {
    unsubscribe();
    republish.cancel();
  };
}
