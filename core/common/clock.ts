// Time, injected. Every part that waits (the controller's backoff and resync, the supervisor's
// load timeout and memory wait, the live budget's sampling, the admin service's throttle and
// heartbeat) takes this clock, so tests step one fake clock instead of sleeping.

export interface Clock {
  /** Epoch ms. */
  now(): number;
  /** Calls `fn` once after `ms`; returns a handle for clearTimeout. Never blocks. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a pending timer; unknown or fired handles are ignored. */
  clearTimeout(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
