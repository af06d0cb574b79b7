// How often the live budget is sampled: the running cadence while a model server of ours runs or
// loads, a slower one while none does.
import type { LiveBudget } from './live-budget.js';

/**
 * How often the budget is sampled while no model server runs or loads. Nothing of ours is at
 * stake then, so the picture may lag this much behind other programs; what a decision needs is
 * read fresh instead (a pass never plans on a sample older than the running cadence). Why it
 * matters: the 2 s sample was most of what an idle daemon cost (issue 14: at most 0.2 % CPU).
 * The config's `budget.idleSample` sets another.
 */
export const IDLE_BUDGET_INTERVAL_MS = 10_000;

export interface SamplingCadence {
  /** A server of ours started: back to the running cadence at once when sampling idly, not after the idle interval. Never blocks. */
  serverStarted(): void;
  /** Stops sampling. Idempotent. */
  stop(): void;
}

/**
 * Starts sampling `budget` at once, every `intervalMs` while `busy()` (read after each sample),
 * else every `idleIntervalMs()` (read then too, so a reloaded config applies from the next
 * sample; undefined: IDLE_BUDGET_INTERVAL_MS), never more often than `intervalMs`.
 */
export function sampleAtCadence(
  budget: Pick<LiveBudget, 'start' | 'stop'>,
  intervalMs: number,
  busy: () => boolean,
  idleIntervalMs: () => number | undefined = () => undefined,
): SamplingCadence {
  /** Whether the sampler waits out the idle interval now (nothing of ours ran at its last sample). */
  let idle = false;
  const start = (): void =>
    budget.start(() => {
      idle = !busy();
      return idle ? Math.max(intervalMs, idleIntervalMs() ?? IDLE_BUDGET_INTERVAL_MS) : intervalMs;
    });
  start();
  return {
    serverStarted: () => {
      if (idle) start();
    },
    stop: () => budget.stop(),
  };
}
