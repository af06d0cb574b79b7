// The room a pull needs, checked before a byte is written (test/fixtures/hub-api C3: the blobs
// are as large as the files). Refused with both numbers, because "not enough space" without
// them leaves a person guessing how much to free.
import { mkdir, statfs } from 'node:fs/promises';
import { formatBytes } from '../contracts/format-bytes.js';
import { PullRefused } from '../contracts/hub/pulls.js';

/** Free bytes for an unprivileged writer on the disk holding `dir` (made if missing). */
export async function freeBytes(dir: string): Promise<number> {
  await mkdir(dir, { recursive: true });
  const info = await statfs(dir);
  return info.bavail * info.bsize;
}

/** Resolves when `neededBytes` fit on `dir`'s disk; rejects with PullRefused (507) saying both numbers when not. */
export async function checkRoom(dir: string, neededBytes: number, what: string): Promise<void> {
  const free = await freeBytes(dir);
  if (neededBytes <= free) return;
  throw new PullRefused(
    507,
    'no_room',
    `${what} needs ${formatBytes(neededBytes)} more on the disk of ${dir}, which has ${formatBytes(free)} free; free ${formatBytes(neededBytes - free)} there, or set HF_HUB_CACHE to a folder on a disk with room (and add it to modelDirs), then pull again.`,
  );
}
