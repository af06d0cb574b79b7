// One exponential backoff for both things that retry on a timer: a model whose launch the
// ladder says to retry, and a pass that failed to apply. Why capped doubling and not a fixed
// delay: a transient fault (a port race, a probe hiccup) should clear within a second, while
// a persistent one must not spin the loop or flood the log.

export interface BackoffOptions {
  /** Delay after the first failure, ms. */
  initialMs: number;
  /** Upper bound, ms. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 60_000 };

/** The delay before try `failures + 1`: initialMs, doubling per failure, at most maxMs. Pure. */
export function backoffDelay(failures: number, options: BackoffOptions): number {
  const exponent = Math.max(0, Math.floor(failures) - 1);
  return Math.min(options.maxMs, options.initialMs * 2 ** Math.min(exponent, 30));
}
