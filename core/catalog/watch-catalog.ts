// Notices edits to config.yaml and new or removed models, so the daemon reloads the catalog.
//
// Why the config file's folder and not the file: editors save by writing a new file and
// renaming it over the old one, and a watch on the old inode goes quiet after the first save.
// Why a debounce: one save is several events, one download is thousands; the callback should
// run once per burst, after it settles, because the reload it triggers rescans everything
// (level-triggered: the event only says "look again").
// Why one debounce for the config and another for the model dirs, each with a bounded wait: a
// .gguf being written (a browser download, `curl -o`, a copy from a USB disk) sends an event
// every few milliseconds for minutes. With one timer re-armed by every event, a config edit (a
// new model, a revoked client key) waited for the download to end. A file still being written
// is not offered as a model (the catalog's settling.ts), so reloading during one is harmless.
// A folder that does not exist yet (no ~/models on a new machine) is watched through its
// nearest existing parent, and the watches are re-armed once it appears.
// Why each folder is watched on its own on Linux: Linux has no recursive watch, Node emulates
// `recursive` in JavaScript, and its emulation (Node 20 and 22) also watches each file's inode
// and reports a file renamed over a watched one once and never again: the watch stays on the
// old inode, and the folder's events for the name count as already known. A re-download or a
// new quantisation renamed over a model went unseen from the second time on. A folder's own
// watch sees every name in it, whatever inode the name points to now.
import { existsSync, readdirSync, realpathSync, statSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { isSearchedFolder, MAX_DEPTH } from './discovery.js';

export interface CatalogWatchOptions {
  configPath: string;
  modelDirs: readonly string[];
  /**
   * The config's own model files: a file named there that is missing (its drive unplugged, not
   * downloaded yet) is read again once it appears, however its folder comes back; without a
   * watch the catalog kept saying "cannot read the model file" after it was there.
   */
  modelFiles?: readonly string[];
  /** Called once per settled burst with the paths that changed (best effort; null names dropped). */
  onChange: (change: { paths: string[] }) => void;
  /** Quiet time before onChange, ms. */
  debounceMs?: number;
  /** The longest a stream of events defers onChange, ms (at least debounceMs). */
  maxWaitMs?: number;
  /** A watch that failed (inotify limit reached, folder deleted); the others keep working. */
  onError?: (error: Error) => void;
}

export interface CatalogWatcher {
  /** Stops every watch and a pending callback. Idempotent; non-blocking. */
  close(): void;
}

const DEFAULT_DEBOUNCE_MS = 300;
/**
 * While a download writes, the model dirs are rescanned this often at most, and a finished file
 * beside it is listed this soon at the latest. A config save is a short burst: it applies after
 * its own quiet time, whatever the model dirs do.
 */
const DEFAULT_MAX_WAIT_MS = 2000;

/**
 * Which model-dir events matter: a .gguf file, or a name without an extension (a folder, or a
 * Hugging Face blob landing). Download temporaries (`.part`, `.incomplete`, `.partial-123`)
 * change every few milliseconds and would keep the debounce from ever settling.
 */
export function isModelDirEvent(name: string | null): boolean {
  if (name === null) return true;
  const last = name.split(/[\\/]/).pop() ?? name;
  return /\.gguf$/i.test(last) || !last.includes('.');
}

interface Target {
  path: string;
  /** For the config and a configured model file: only events about this file name matter. */
  fileName?: string;
  recursive: boolean;
  /** Which debounce it feeds: a config edit is not held up by a download (see the top of the file). */
  burst: 'config' | 'models';
}

/** Linux: Node's `recursive` loses files renamed over (see the top of the file). */
const WATCH_EACH_FOLDER = process.platform === 'linux';

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** `root` and the folders below it that discovery searches, as they are now. Blocks on directory reads. */
function foldersUnder(root: string): string[] {
  const out: string[] = [];
  const visited = new Set<string>();
  const visit = (dir: string, depth: number): void => {
    let entries: Dirent[];
    try {
      const real = realpathSync(dir);
      if (visited.has(real) || depth > MAX_DEPTH) return;
      visited.add(real);
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // gone or unreadable: discovery reports it; the next burst looks again
    }
    out.push(dir);
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (isSearchedFolder(entry.name) && (entry.isDirectory() || (entry.isSymbolicLink() && isFolder(path)))) visit(path, depth + 1);
    }
  };
  visit(root, 0);
  return out;
}

function nearestExisting(path: string): string {
  let current = path;
  while (!existsSync(current)) {
    const parent = dirname(current);
    if (parent === current) return current;
    current = parent;
  }
  return current;
}

/**
 * Calls `fire` with the paths noted, once they have been quiet for `quietMs`, or `maxWaitMs`
 * after the first of them at the latest, so a burst that never ends still gets through.
 */
class Burst {
  private pending = new Set<string>();
  private quietTimer: NodeJS.Timeout | undefined;
  private maxTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly quietMs: number,
    private readonly maxWaitMs: number,
    private readonly fire: (paths: string[]) => void,
  ) {}

  note(path: string): void {
    this.pending.add(path);
    clearTimeout(this.quietTimer);
    this.quietTimer = setTimeout(() => this.flush(), this.quietMs);
    this.maxTimer ??= setTimeout(() => this.flush(), this.maxWaitMs);
  }

  cancel(): void {
    clearTimeout(this.quietTimer);
    clearTimeout(this.maxTimer);
    this.quietTimer = this.maxTimer = undefined;
    this.pending = new Set();
  }

  private flush(): void {
    const paths = [...this.pending];
    this.cancel();
    this.fire(paths);
  }
}

/** Starts watching. Non-blocking; returns at once with the watches armed. */
export function watchCatalog(options: CatalogWatchOptions): CatalogWatcher {
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const maxWaitMs = Math.max(debounceMs, options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
  const targets: Target[] = [
    { path: dirname(options.configPath), fileName: basename(options.configPath), recursive: false, burst: 'config' },
    ...options.modelDirs.map((path): Target => ({ path, recursive: true, burst: 'models' })),
    ...(options.modelFiles ?? []).map((path): Target => ({ path: dirname(path), fileName: basename(path), recursive: false, burst: 'models' })),
  ];
  let watchers: FSWatcher[] = [];
  /** Linux: one watch per folder of the existing model dirs, kept in step with the folders at every burst. */
  const folderWatches = new Map<string, FSWatcher>();
  let armedExistence = '';
  let closed = false;

  const existence = () => targets.map((t) => (existsSync(t.path) ? '1' : '0')).join('');

  const fire = (paths: string[]) => {
    if (closed) return;
    if (existence() !== armedExistence) arm();
    else followFolders();
    options.onChange({ paths });
  };
  const configBurst = new Burst(debounceMs, maxWaitMs, fire);
  const modelDirBurst = new Burst(debounceMs, maxWaitMs, fire);

  function watchFolder(folder: string): void {
    try {
      const watcher = watch(folder, { persistent: false }, (event, name) => {
        const file = name === null ? null : name.toString();
        const path = file === null ? folder : join(folder, file);
        // A new folder (whatever its name) must be watched too: the burst follows the folders.
        if (isModelDirEvent(file) || (event === 'rename' && isFolder(path))) modelDirBurst.note(path);
      });
      watcher.on('error', (error) => {
        watcher.close();
        folderWatches.delete(folder);
        options.onError?.(new Error(`Stopped watching ${folder}: ${error.message}`));
      });
      folderWatches.set(folder, watcher);
    } catch (error) {
      options.onError?.(new Error(`Cannot watch ${folder}: ${(error as Error).message}`));
    }
  }

  /** Watches the model dirs' folders that appeared since the last look, and stops watching those gone. */
  function followFolders(): void {
    if (!WATCH_EACH_FOLDER) return;
    const wanted = new Set(targets.filter((t) => t.recursive && existsSync(t.path)).flatMap((t) => foldersUnder(t.path)));
    for (const [folder, watcher] of folderWatches) {
      if (wanted.has(folder)) continue;
      watcher.close();
      folderWatches.delete(folder);
    }
    for (const folder of wanted) if (!folderWatches.has(folder)) watchFolder(folder);
  }

  function watchOne(target: Target): void {
    const exists = existsSync(target.path);
    if (exists && target.recursive && WATCH_EACH_FOLDER) return; // followFolders watches it
    const watched = exists ? target.path : nearestExisting(target.path);
    // Watching a missing folder's ancestor: only the next path component toward it matters.
    const awaited = exists ? undefined : relative(watched, target.path).split(sep)[0];
    try {
      const burst = target.burst === 'config' ? configBurst : modelDirBurst;
      const watcher = watch(watched, { recursive: exists && target.recursive, persistent: false }, (_event, name) => {
        const file = name === null ? null : name.toString();
        if (awaited !== undefined) {
          if (file === null || file.split(/[\\/]/)[0] === awaited) burst.note(target.path);
        } else if (target.fileName !== undefined) {
          if (file === null || file === target.fileName) burst.note(`${watched}${sep}${file ?? target.fileName}`);
        } else if (isModelDirEvent(file)) {
          burst.note(file === null ? watched : `${watched}${sep}${file}`);
        }
      });
      watcher.on('error', (error) => {
        watcher.close();
        options.onError?.(new Error(`Stopped watching ${watched}: ${error.message}`));
      });
      watchers.push(watcher);
    } catch (error) {
      options.onError?.(new Error(`Cannot watch ${watched}: ${(error as Error).message}`));
    }
  }

  function arm(): void {
    closeAll();
    armedExistence = existence();
    for (const target of targets) watchOne(target);
    followFolders();
  }

  function closeAll(): void {
    for (const watcher of [...watchers, ...folderWatches.values()]) watcher.close();
    watchers = [];
    folderWatches.clear();
  }

  arm();
  return {
    close() {
      closed = true;
      configBurst.cancel();
      modelDirBurst.cancel();
      closeAll();
    },
  };
}
