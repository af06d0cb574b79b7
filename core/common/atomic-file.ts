// Writing a small file so that a reader, or the next start after a crash, sees either the
// old content or the new, never half of one.
//
// How: write a temporary file beside the target, fsync it, then rename (replace) or link
// (create only if absent) it into place, and fsync the directory so the new name survives a
// power cut. Why not `writeFile(target)`: it truncates first, so a crash or a full disk in the
// middle leaves an empty or half-written pins.json, and the person's pins are gone.
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

/** The file operations used, injectable so a test can make the process "die" at a chosen step. */
export interface AtomicWriteFs {
  open: typeof fsp.open;
  rename: typeof fsp.rename;
  link: typeof fsp.link;
  unlink: typeof fsp.unlink;
}

export const nodeAtomicWriteFs: AtomicWriteFs = {
  open: fsp.open,
  rename: fsp.rename,
  link: fsp.link,
  unlink: fsp.unlink,
};

export interface AtomicWriteOptions {
  /** Permission bits of the new file (the umask cannot widen them). Default 0o600. */
  mode?: number;
  /** 'replace' overwrites; 'keep' leaves an existing file alone and reports 'exists'. Default 'replace'. */
  ifExists?: 'replace' | 'keep';
  fs?: AtomicWriteFs;
}

/** The suffix of temporary files, so a later start can find and remove those a crash left. */
export const TEMP_SUFFIX = '.tmp';

/**
 * Writes `data` to `path` atomically and durably. Blocks until the data and the directory
 * entry are on disk. With `ifExists: 'keep'` it never overwrites: it resolves 'exists' when
 * another writer got there first (two daemons starting at once both keep one token). Rejects
 * on I/O failure, after removing its temporary file; `path` is then unchanged.
 */
export async function writeFileAtomic(
  path: string,
  data: string,
  options: AtomicWriteOptions = {},
): Promise<'written' | 'exists'> {
  const fs = options.fs ?? nodeAtomicWriteFs;
  const temp = join(dirname(path), `${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
  try {
    const handle = await fs.open(temp, 'wx', options.mode ?? 0o600);
    try {
      await handle.writeFile(data, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    let outcome: 'written' | 'exists' = 'written';
    if (options.ifExists === 'keep') {
      try {
        await fs.link(temp, path);
      } catch (error) {
        if (!isCode(error, 'EEXIST')) throw error;
        outcome = 'exists';
      }
      await fs.unlink(temp);
    } else {
      await fs.rename(temp, path);
    }
    await syncDirectory(dirname(path));
    return outcome;
  } catch (error) {
    await fs.unlink(temp).catch(() => undefined);
    throw error;
  }
}

/**
 * Removes the temporary files a crashed write of `path` left behind. Best effort: a file that
 * cannot be removed is left (it is never read). Blocks on the directory listing.
 */
export async function removeStaleTemps(path: string): Promise<void> {
  const prefix = `${basename(path)}.`;
  const names = await fsp.readdir(dirname(path)).catch(() => [] as string[]);
  await Promise.all(
    names
      .filter((name) => name.startsWith(prefix) && name.endsWith(TEMP_SUFFIX))
      .map((name) => fsp.unlink(join(dirname(path), name)).catch(() => undefined)),
  );
}

export function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/** fsync of the directory, so a rename survives a power cut. Windows cannot open directories: skipped there. */
async function syncDirectory(directory: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = await fsp.open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
