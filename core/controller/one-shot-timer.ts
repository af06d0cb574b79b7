// A single pending timer on the injected clock that can be re-armed or cancelled, so the
// controller never leaves two resyncs (or two retries for one model) racing each other.
import type { Clock } from './effects.js';

export class OneShotTimer {
  private handle: unknown = null;

  constructor(private readonly clock: Clock) {}

  /** Replaces any pending call with `fn` after `ms`. */
  set(ms: number, fn: () => void): void {
    this.clear();
    const handle = this.clock.setTimeout(() => {
      if (this.handle === handle) this.handle = null;
      fn();
    }, ms);
    this.handle = handle;
  }

  /** Whether a call is still to come. */
  get pending(): boolean {
    return this.handle !== null;
  }

  clear(): void {
    if (this.handle !== null) this.clock.clearTimeout(this.handle);
    this.handle = null;
  }
}
