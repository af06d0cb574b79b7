// Waiting until an evicted server's device memory is really free.
//
// The incident (Ollama, llama-swap): the process has exited, the next model launches, and it
// OOMs — the driver had not yet released the dead process's memory. Ollama waits until free
// memory has grown by 75 % of the unloaded model's footprint, at most a few seconds; 75 %
// rather than 100 % because other programs allocate and free meanwhile and the estimate is not
// exact, and a bound because a probe that never shows the memory must not stall the controller.
import type { Clock } from '../../../common/clock.js';

export interface MemoryWaitOptions {
  /** Free device memory now, bytes. */
  probe: () => Promise<number>;
  clock: Clock;
  /** Free bytes measured just before the server was stopped. */
  freeBefore: number;
  /** The stopped server's device footprint, bytes. */
  footprintBytes: number;
  /** Share of the footprint that must come back (0.75). */
  fraction: number;
  maxMs: number;
  pollMs: number;
}

/**
 * Resolves true once free memory is back to `freeBefore + fraction × footprintBytes`, or false
 * when `maxMs` ran out first. A probe that throws counts as "not yet". Never rejects.
 */
export async function waitForMemoryBack(options: MemoryWaitOptions): Promise<boolean> {
  const target = options.freeBefore + options.fraction * Math.max(0, options.footprintBytes);
  const deadline = options.clock.elapsed() + options.maxMs;
  for (;;) {
    const free = await options.probe().catch(() => Number.NEGATIVE_INFINITY);
    if (free >= target) return true;
    if (options.clock.elapsed() >= deadline) return false;
    await new Promise<void>((resolve) => options.clock.setTimeout(resolve, options.pollMs));
  }
}
