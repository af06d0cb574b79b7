// What the saved conversations under ROOT hold, per model file, read from the folders as the
// store (store.ts) lays them out: ROOT/<identity key>/identity.json names the model file, the
// .state files beside it are its conversations. For the snapshot, which must say what is kept
// for a model that no engine runs: only the engine that writes them holds a store open, and it
// is gone once its model is evicted. Reads directory listings and stats only, never a state's
// contents: a look costs one readdir per identity folder and a stat per file.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

export interface SavedTotals {
  count: number;
  bytes: number;
}

/** The store's layout, one definition for the store and this reader. */
export const STATE_SUFFIX = '.state';
export const IDENTITY_FILE = 'identity.json';

/**
 * The folder under ROOT that a llama-server is launched with as its `--slot-save-path`
 * (core/engine/llama-server/saved-slots.ts): no identity, no .state files, so neither the store
 * nor this reader counts what passes through it.
 */
export function llamaServerStagingDir(root: string): string {
  return join(root, '.llama-server');
}

/** Whether a name under an identity folder is a saved conversation (store.ts names them `<hash>.state`). */
export function isStateFile(name: string): boolean {
  return name.endsWith(STATE_SUFFIX);
}

/**
 * The saved conversations under `root`, by the model file their identity names (the same file
 * under several identities, e.g. two contexts, is summed), and the total of every state file
 * under `root`, those of no readable identity included, since they take the disk just the same.
 * A missing `root` is none. Never throws: a folder or file that cannot be read is skipped
 * (a save may be renaming it at the moment of looking).
 */
export async function readSavedTotals(root: string): Promise<{ byModel: Map<string, SavedTotals>; total: SavedTotals }> {
  const byModel = new Map<string, SavedTotals>();
  const total: SavedTotals = { count: 0, bytes: 0 };
  const folders = await readdir(root).catch(() => [] as string[]);
  for (const folder of folders) {
    const dir = join(root, folder);
    const names = await readdir(dir).catch(() => [] as string[]);
    const states = names.filter(isStateFile);
    if (states.length === 0) continue;
    const modelPath = await identityModelPath(join(dir, IDENTITY_FILE));
    for (const name of states) {
      const size = await stat(join(dir, name)).then((s) => s.size, () => null);
      if (size === null) continue;
      total.count += 1;
      total.bytes += size;
      if (modelPath === null) continue;
      const own = byModel.get(modelPath) ?? { count: 0, bytes: 0 };
      own.count += 1;
      own.bytes += size;
      byModel.set(modelPath, own);
    }
  }
  return { byModel, total };
}

async function identityModelPath(path: string): Promise<string | null> {
  try {
    const identity = JSON.parse(await readFile(path, 'utf8')) as { modelPath?: unknown };
    return typeof identity.modelPath === 'string' ? identity.modelPath : null;
  } catch {
    return null;
  }
}
