// The ids discovered files were given, remembered in DATA_DIR/model-ids.json.
//
// Why: the id of a discovered file depends on which other files want it (a contested name goes to
// the earliest model dir, the others get a suffix). Worked out afresh at every scan, deleting
// `~/models/same.gguf` turned the other folder's `same-1a2b3c` into `same` under the clients
// that use it, who then got 404. Remembered, an id stays with its file (its resolved path) while
// the daemon runs and across restarts; only a configured id or alias taking it moves it.
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';

export const MODEL_IDS_FILE_NAME = 'model-ids.json';

interface ModelIdsFile {
  version: 1;
  /** Resolved file path → the id it was given. */
  ids: Record<string, string>;
}

export class ModelIdStore {
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly ids: Map<string, string>,
  ) {}

  /**
   * Loads the store. Blocks on one read. A missing or corrupt file is an empty store: ids are
   * then worked out from the files as on a first start, never a reason not to start.
   */
  static async open(file: string): Promise<ModelIdStore> {
    const ids = new Map<string, string>();
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<ModelIdsFile>;
      for (const [path, id] of Object.entries(parsed.ids ?? {})) if (typeof id === 'string' && id !== '') ids.set(path, id);
    } catch {
      // missing or corrupt: start empty
    }
    return new ModelIdStore(file, ids);
  }

  /** Resolved file path → the id it was given. Non-blocking. */
  remembered(): ReadonlyMap<string, string> {
    return this.ids;
  }

  /**
   * Remembers the ids of the files listed now. A file that is gone keeps its id on record (a
   * drive unplugged and plugged back finds its name again) until another file is given that
   * id. Persists atomically when anything changed; resolves when written, rejects with the I/O
   * error (the ids in memory hold for this run either way).
   */
  record(current: ReadonlyMap<string, string>): Promise<void> {
    const given = new Set(current.values());
    let changed = false;
    for (const [path, id] of this.ids) {
      if (given.has(id) && current.get(path) !== id) {
        this.ids.delete(path);
        changed = true;
      }
    }
    for (const [path, id] of current) {
      if (this.ids.get(path) === id) continue;
      this.ids.set(path, id);
      changed = true;
    }
    if (!changed) return this.writes;
    const snapshot: ModelIdsFile = { version: 1, ids: Object.fromEntries(this.ids) };
    // Serialised so two quick reloads cannot interleave their renames.
    this.writes = this.writes.catch(() => undefined).then(async () => {
      await mkdir(dirname(this.file), { recursive: true });
      await writeFileAtomic(this.file, `${JSON.stringify(snapshot, null, 2)}\n`);
    });
    return this.writes;
  }
}
