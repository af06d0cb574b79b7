// Notices edits to config.yaml and new or removed models, so the daemon reloads the catalog.
//
// Why the config file's folder and not the file: editors save by writing a new file and
// renaming it over the old one, and a watch on the old inode goes quiet after the first save.
// Why a debounce: one save is several events, one download is thousands; the callback should
// run once per burst, after it settles, because the reload it triggers rescans everything
// (level-triggered: the event only says "look again").
// A folder that does not exist yet (no ~/models on a new machine) is watched through its
// nearest existing parent, and the watches are re-armed once it appears.
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname, relative, sep } from 'node:path';

export interface CatalogWatchOptions {
  configPath: string;
  modelDirs: readonly string[];
  /** Called once per settled burst with the paths that changed (best effort; null names dropped). */
  onChange: (change: { paths: string[] }) => void;
  /** Quiet time before onChange, ms. */
  debounceMs?: number;
  /** A watch that failed (inotify limit reached, folder deleted); the others keep working. */
  onError?: (error: Error) => void;
}

export interface CatalogWatcher {
  /** Stops every watch and a pending callback. Idempotent; non-blocking. */
  close(): void;
}

const DEFAULT_DEBOUNCE_MS = 300;

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
  /** For the config: only events about this file name matter. */
  fileName?: string;
  recursive: boolean;
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

/** Starts watching. Non-blocking; returns at once with the watches armed. */
export function watchCatalog(options: CatalogWatchOptions): CatalogWatcher {
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const targets: Target[] = [
    { path: dirname(options.configPath), fileName: basename(options.configPath), recursive: false },
    ...options.modelDirs.map((path) => ({ path, recursive: true })),
  ];
  let watchers: FSWatcher[] = [];
  let armedExistence = '';
  let timer: NodeJS.Timeout | undefined;
  let pending = new Set<string>();
  let closed = false;

  const existence = () => targets.map((t) => (existsSync(t.path) ? '1' : '0')).join('');

  const fire = () => {
    timer = undefined;
    if (closed) return;
    const paths = [...pending];
    pending = new Set();
    if (existence() !== armedExistence) arm();
    options.onChange({ paths });
  };

  const note = (path: string | null) => {
    if (path !== null) pending.add(path);
    if (timer) clearTimeout(timer);
    timer = setTimeout(fire, debounceMs);
  };

  function watchOne(target: Target): void {
    const exists = existsSync(target.path);
    const watched = exists ? target.path : nearestExisting(target.path);
    // Watching a missing folder's ancestor: only the next path component toward it matters.
    const awaited = exists ? undefined : relative(watched, target.path).split(sep)[0];
    try {
      const watcher = watch(watched, { recursive: exists && target.recursive, persistent: false }, (_event, name) => {
        const file = name === null ? null : name.toString();
        if (awaited !== undefined) {
          if (file === null || file.split(/[\\/]/)[0] === awaited) note(target.path);
        } else if (target.fileName !== undefined) {
          if (file === null || file === target.fileName) note(`${watched}${sep}${file ?? target.fileName}`);
        } else if (isModelDirEvent(file)) {
          note(file === null ? watched : `${watched}${sep}${file}`);
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
    for (const watcher of watchers) watcher.close();
    watchers = [];
    armedExistence = existence();
    for (const target of targets) watchOne(target);
  }

  arm();
  return {
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      for (const watcher of watchers) watcher.close();
      watchers = [];
    },
  };
}
