// Time, injected. Every part that waits (the controller's backoff and resync, the supervisor's
// load timeout and memory wait, the live budget's sampling, the admin service's throttle and
// heartbeat) takes this clock, so tests step one fake clock instead of sleeping.
//
// Two readings, one rule: every duration and every deadline (a hang limit, an idle TTL, a
// backoff, a turn, a cache's age) is a difference of `elapsed()` readings; `now()`, the wall
// clock, is only for what is shown to people or stored (a status's `since`, an event's `at`,
// the last use a person reads, a measurement's date). The wall clock steps — NTP corrects it, a
// person sets it, a laptop's resume catches it up — and a duration taken across a step would be
// off by the step: an hour back would hold a model's retry for an hour, an hour forward would
// call a healthy engine hung and unload every idle model at once. Where a value is both shown
// and decided on, both readings are kept. Node's timers already run on a monotonic clock.

export interface Clock {
  /** Epoch ms, the wall clock: for what people read and what is stored, never for a duration. */
  now(): number;
  /** Monotonic ms from an arbitrary origin: for every duration and deadline. Never steps back. */
  elapsed(): number;
  /** Calls `fn` once after `ms`; returns a handle for clearTimeout. Never blocks. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a pending timer; unknown or fired handles are ignored. */
  clearTimeout(handle: unknown): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  elapsed: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
