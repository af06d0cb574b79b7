// Which discovered model files have stopped growing.
//
// A .gguf still being written (a browser download, `curl -o`, a copy from a USB disk) is not a
// model yet: offered, a client's request would launch an engine on half a file, fail, and climb
// the recovery ladder for a fault that is no one's. The catalog lists a file once its size and
// modification time have stayed the same across checks at least SETTLE_MS apart. A file nobody
// has written to for that long by its mtime (every file already there when the daemon starts, a
// copy whose tool set the original's mtime once it finished) is settled at once, so a start or a
// rescan never hides a library for a moment.
//
// A file renamed over a listed name (a re-download or a new quantisation, written beside it and
// renamed, as downloaders do) keeps its last settled facts until the new one settles: its model
// stays listed as it was, so a running engine serves on from the old file (still open, under no
// name) and a request meanwhile is not told the model does not exist; once settled, the new
// facts change its definition (definition-hash.ts) and the controller relaunches it from the
// new file when idle, as for any edited definition. A file rewritten in place (`cp` over it: the
// same inode) is growing like a new one instead: the engine mapping it must stop, as its pages
// are overwritten under it, and no launch may read it half written.
//
// Why a monotonic clock between checks: a wall-clock step (NTP, resume from sleep) must neither
// settle a growing file early nor hold a finished one back; wall time is only compared with the
// file's mtime, where a clock behind the file's costs one more check.
import type { DiscoveredFile } from './discovery.js';

/** How long a file's size and mtime must stay the same before it is listed, ms. */
export const SETTLE_MS = 1000;

interface Observation {
  sizeBytes: number;
  lastWriteMs: number;
  /** Monotonic ms when this size and mtime were first seen. */
  seenAt: number;
  /** Once settled at this size and mtime, it stays so until either changes. */
  settled: boolean;
  /** The file as it was when it last settled at this path: what stands for it while a replacement settles. */
  lastSettled: DiscoveredFile | undefined;
}

export interface SettlingOptions {
  settleMs?: number;
  /** Monotonic ms; default performance.now. */
  monotonicNow?: () => number;
  /** Epoch ms; default Date.now. */
  wallNow?: () => number;
}

export interface Settled {
  /**
   * The files that stopped growing, in input order; a file being replaced is here as it last
   * settled (its old size and mtime) until the new one settles.
   */
  settled: DiscoveredFile[];
  /** The files still being written that no settled file stands for: new names, not replacements. */
  growing: DiscoveredFile[];
  /** Paths in `settled` listed as they last settled while a replacement settles. */
  standingIn: Set<string>;
  /** When to look again for `growing` to settle, ms from now; null when none is growing. */
  recheckInMs: number | null;
}

export class Settling {
  private readonly observations = new Map<string, Observation>();
  private readonly settleMs: number;
  private readonly monotonicNow: () => number;
  private readonly wallNow: () => number;

  constructor(options: SettlingOptions = {}) {
    this.settleMs = options.settleMs ?? SETTLE_MS;
    this.monotonicNow = options.monotonicNow ?? (() => performance.now());
    this.wallNow = options.wallNow ?? Date.now;
  }

  /**
   * Sorts one scan's files into settled and growing, and remembers what it saw for the next
   * check. Files missing from the scan are forgotten. Synchronous.
   */
  check(files: readonly DiscoveredFile[]): Settled {
    const now = this.monotonicNow();
    const seen = new Set<string>();
    const settled: DiscoveredFile[] = [];
    const growing: DiscoveredFile[] = [];
    const standingIn = new Set<string>();
    let recheckAt: number | null = null;
    for (const file of files) {
      seen.add(file.path);
      const previous = this.observations.get(file.path);
      const unchanged = previous !== undefined && previous.sizeBytes === file.sizeBytes && previous.lastWriteMs === file.lastWriteMs;
      const observation: Observation = unchanged
        ? previous
        : {
            sizeBytes: file.sizeBytes,
            lastWriteMs: file.lastWriteMs,
            seenAt: now,
            settled: this.wallNow() - file.lastWriteMs >= this.settleMs,
            lastSettled: previous?.lastSettled?.fileId === file.fileId ? undefined : previous?.lastSettled,
          };
      if (now - observation.seenAt >= this.settleMs) observation.settled = true;
      if (observation.settled) observation.lastSettled = file;
      this.observations.set(file.path, observation);
      if (observation.settled) {
        settled.push(file);
        continue;
      }
      if (observation.lastSettled === undefined) growing.push(file);
      else {
        settled.push(observation.lastSettled);
        standingIn.add(file.path);
      }
      const due = observation.seenAt + this.settleMs;
      recheckAt = recheckAt === null ? due : Math.min(recheckAt, due);
    }
    for (const path of this.observations.keys()) if (!seen.has(path)) this.observations.delete(path);
    return { settled, growing, standingIn, recheckInMs: recheckAt === null ? null : Math.max(0, recheckAt - now) };
  }
}
