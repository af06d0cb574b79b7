// Counts request-driven swaps from the daemon's log: every "evicting X" (a server stopped to
// make room for another model's requests) except the ones the soak itself asked for with an
// admin unload, which are bookkeeping, not swaps.
import type { DaemonLogRecorder } from './daemon-log.js';

export class SwapCounter {
  swaps = 0;
  /** Evictions the soak asked for (admin unloads). */
  unloads = 0;
  launches = 0;
  private readonly expectedUnloads = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  constructor(log: DaemonLogRecorder) {
    log.onEvent(({ event }) => {
      if (event.type === 'launching') this.launches++;
      if (event.type !== 'evicting') return;
      const pending = this.expectedUnloads.get(event.modelId) ?? 0;
      if (pending > 0) {
        this.expectedUnloads.set(event.modelId, pending - 1);
        this.unloads++;
      } else {
        this.swaps++;
      }
      for (const wake of [...this.waiters]) wake();
    });
  }

  /** The next eviction of `modelId` is the soak's own unload; `cancel()` when it turned out not to happen. */
  expectUnload(modelId: string): { cancel(): void } {
    this.expectedUnloads.set(modelId, (this.expectedUnloads.get(modelId) ?? 0) + 1);
    const before = this.unloads;
    return {
      cancel: () => {
        if (this.unloads === before && (this.expectedUnloads.get(modelId) ?? 0) > 0) this.expectedUnloads.set(modelId, (this.expectedUnloads.get(modelId) ?? 1) - 1);
      },
    };
  }

  /** Resolves once `swaps` reaches `count`, or when `deadline` (epoch ms) passes; true if reached. */
  until(count: number, deadline: number): Promise<boolean> {
    if (this.swaps >= count) return Promise.resolve(true);
    return new Promise((done) => {
      const finish = (reached: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(check);
        done(reached);
      };
      const check = () => this.swaps >= count && finish(true);
      const timer = setTimeout(() => finish(this.swaps >= count), Math.max(0, deadline - Date.now()));
      this.waiters.add(check);
    });
  }
}
