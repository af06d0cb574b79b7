// The per-launch API key's file: what an engine reads with `--api-key-file`.
//
// Why a file and not the argv: every local user can read a process's command line (`ps`,
// /proc/PID/cmdline), and the key is the only thing between the engine's loopback port and
// the other users and web pages on the machine. The file is 0600 in a 0700 folder of the
// data dir, lives as long as its server, and gets a random name so that each launch's
// command line stays unique (the orphan sweep matches servers by it). On Windows the modes
// are ignored; the data dir under the user's profile is private by its ACL instead.
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The folder of the key files, inside the supervisor's data dir. */
export function apiKeyDir(dataDir: string): string {
  return join(dataDir, 'engine-keys');
}

/** A fresh, random path for one launch's key file in `dir`. Pure apart from the randomness. */
export function newApiKeyFilePath(dir: string): string {
  return join(dir, `${randomBytes(12).toString('hex')}.key`);
}

/**
 * Writes `key` to `path` (from newApiKeyFilePath), readable by this user only, creating its
 * folder 0700. Blocks on file I/O; rejects with the I/O error (a full disk, a read-only data
 * dir, a file already there).
 */
export async function writeApiKeyFile(path: string, key: string): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing folder's mode alone; one made some other way may be wider.
  await chmod(dir, 0o700);
  // 'wx': never write through a file (or a planted link) that is already there.
  await writeFile(path, `${key}\n`, { mode: 0o600, flag: 'wx' });
}

/**
 * Removes one key file. Synchronous on purpose: it runs in the server's exit handler, and
 * whoever awaits that exit (an eviction, close()) must find the file gone when it resumes.
 * Idempotent; never throws (a file that cannot be removed is left, and the next start's
 * clearApiKeyFiles removes it).
 */
export function removeApiKeyFile(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // left for clearApiKeyFiles
  }
}

/**
 * Removes every key file in `dir`: the ones a crashed earlier run left behind. Call at start,
 * after the orphan sweep (their servers are gone, and an engine reads its file only at start).
 * Never rejects.
 */
export async function clearApiKeyFiles(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
}
