// The person's pins, kept in DATA_DIR/pins.json so that a model pinned yesterday is loaded
// again after a restart or a reboot.
//
// The file is the person's choice, not a cache: it is written atomically (atomic-file.ts) so a
// crash never leaves it half-written, and a file that cannot be read is moved aside to
// pins.json.corrupt and reported, rather than overwritten by the next pin or allowed to stop
// the daemon from starting (the models still run; only the pins are missing, and the person
// is told where the old file is).
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { isCode, removeStaleTemps, writeFileAtomic, type AtomicWriteFs } from '../common/atomic-file.js';
import { SerialQueue } from '../common/serial-queue.js';
import { errorMessage } from '../contracts/error-message.js';

export const PINS_FILE = 'pins.json';

/** The file's shape; `version` lets a later format be told apart from a corrupt one. */
interface PinsFile {
  version: 1;
  pinned: string[];
}

export interface PinStoreOptions {
  /** Injected file operations for the write path (tests simulate a crash mid-write). */
  fs?: AtomicWriteFs;
}

export class PinStore {
  private pinned: ReadonlySet<string>;
  /** Serialises writes, so the file always ends with the last change made. */
  private readonly writes = new SerialQueue();

  private constructor(
    readonly path: string,
    initial: ReadonlySet<string>,
    /** What was wrong with the file when it was opened, as a sentence; null when it was fine or absent. */
    readonly problem: string | null,
    private readonly fs: AtomicWriteFs | undefined,
  ) {
    this.pinned = initial;
  }

  /**
   * Reads DATA_DIR/pins.json, creating DATA_DIR (mode 0700) when missing. Blocks on the
   * disk. Never rejects for a bad file: an unreadable one is renamed to pins.json.corrupt and
   * the store opens empty with `problem` saying so. Rejects only when DATA_DIR itself cannot
   * be created or read.
   */
  static async open(dataDir: string, options: PinStoreOptions = {}): Promise<PinStore> {
    await fsp.mkdir(dataDir, { recursive: true, mode: 0o700 });
    const path = join(dataDir, PINS_FILE);
    await removeStaleTemps(path);
    let text: string;
    try {
      text = await fsp.readFile(path, 'utf8');
    } catch (error) {
      if (isCode(error, 'ENOENT')) return new PinStore(path, new Set(), null, options.fs);
      throw error;
    }
    const parsed = parsePins(text);
    if (typeof parsed !== 'string') return new PinStore(path, new Set(parsed), null, options.fs);
    const aside = `${path}.corrupt`;
    const kept = await fsp.rename(path, aside).then(
      () => `moved the file to ${aside}. Pin the models again, or fix that file and move it back while llmtray is stopped.`,
      (error: unknown) =>
        `could not move it aside (${errorMessage(error)}); the next pin or unpin replaces it.`,
    );
    return new PinStore(path, new Set(), `${path} could not be read (${parsed}); llmtray started with no pins and ${kept}`, options.fs);
  }

  /** Whether the model is pinned. Never blocks. */
  isPinned(modelId: string): boolean {
    return this.pinned.has(modelId);
  }

  /** The pinned ids, sorted. Never blocks. */
  list(): string[] {
    return [...this.pinned].sort();
  }

  /**
   * Pins or unpins a model and resolves once the change is on disk; resolves whether anything
   * changed. Idempotent: pinning a pinned model writes nothing. On a failed write the pin is
   * not changed (memory and file stay equal) and the promise rejects with the I/O error.
   */
  setPinned(modelId: string, pinned: boolean): Promise<boolean> {
    return this.writes.run(async () => {
      if (this.pinned.has(modelId) === pinned) return false;
      const next = new Set(this.pinned);
      if (pinned) next.add(modelId);
      else next.delete(modelId);
      const file: PinsFile = { version: 1, pinned: [...next].sort() };
      await writeFileAtomic(this.path, `${JSON.stringify(file, null, 2)}\n`, { fs: this.fs });
      this.pinned = next;
      return true;
    });
  }
}

/** The pinned ids in a pins.json text, or a phrase saying what is wrong with it. */
function parsePins(text: string): string[] | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return `not valid JSON: ${errorMessage(error)}`;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'expected an object { "version": 1, "pinned": [...] }';
  const { version, pinned } = value as Record<string, unknown>;
  if (version !== 1) return `unknown version ${JSON.stringify(version)}, expected 1`;
  if (!Array.isArray(pinned) || !pinned.every((id): id is string => typeof id === 'string')) {
    return '"pinned" must be a list of model ids (strings)';
  }
  return pinned;
}
