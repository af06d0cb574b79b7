// The Hugging Face cache's own layout (test/fixtures/hub-api C2–C6), so that discovery finds a
// pulled model and the Python and Rust tools share it:
//
//   HUB_CACHE/models--OWNER--REPO/
//     blobs/SHA256               the bytes, named by their sha256, renamed in once checked
//     blobs/SHA256.incomplete    the bytes so far; a pull resumes from its size
//     snapshots/COMMIT/PATH      a relative symlink to ../../blobs/SHA256 (as deep as PATH)
//     refs/main                  the commit main resolved to
//
// Nothing here is offered as a model before its link exists, and the link is made only once
// the blob is whole and checked: discovery never searches `blobs/`.
import { lstat, mkdir, readdir, readFile, readlink, rm, rmdir, symlink, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';

export interface RepoCache {
  /** `HUB_CACHE/models--OWNER--REPO`. */
  dir: string;
  blobPath(sha256: string): string;
  incompletePath(sha256: string): string;
  snapshotPath(commit: string, path: string): string;
}

export function repoCache(cacheDir: string, repo: string): RepoCache {
  const dir = join(cacheDir, `models--${repo.split('/').join('--')}`);
  return {
    dir,
    blobPath: (sha) => join(dir, 'blobs', sha),
    incompletePath: (sha) => join(dir, 'blobs', `${sha}.incomplete`),
    snapshotPath: (commit, path) => join(dir, 'snapshots', commit, ...path.split('/')),
  };
}

/** Links `snapshots/COMMIT/PATH` to its blob (relative, as huggingface_hub does: the cache can move), replacing an older link. */
export async function linkSnapshot(cache: RepoCache, commit: string, path: string, sha256: string): Promise<string> {
  const link = cache.snapshotPath(commit, path);
  await mkdir(dirname(link), { recursive: true });
  const target = relative(dirname(link), cache.blobPath(sha256));
  const existing = await readlink(link).catch(() => undefined);
  if (existing === target) return link;
  if (existing !== undefined || (await lstat(link).catch(() => undefined)) !== undefined) await unlink(link);
  await symlink(target, link);
  return link;
}

/** Writes `refs/main`: discovery reads the snapshot it names first (core/catalog/discovery.ts). */
export async function writeMainRef(cache: RepoCache, commit: string): Promise<void> {
  await mkdir(join(cache.dir, 'refs'), { recursive: true });
  await writeFileAtomic(join(cache.dir, 'refs', 'main'), commit, { mode: 0o644 });
}

/** The commit refs/main names, when the file is there. */
export async function mainRef(cache: RepoCache): Promise<string | undefined> {
  return readFile(join(cache.dir, 'refs', 'main'), 'utf8').then((text) => text.trim() || undefined, () => undefined);
}

/**
 * Removes a link and, when no other link of the repo's snapshots still points at it, its blob;
 * then the folders left empty up to the repo's. Returns the paths removed. Never removes a file
 * the caller did not name: `ownBlob` false keeps a blob that was there before the pull.
 */
export async function removeLinked(cache: RepoCache, link: string, sha256: string, ownBlob: boolean): Promise<string[]> {
  const removed: string[] = [];
  if (await unlink(link).then(() => true, () => false)) removed.push(link);
  if (ownBlob && !(await blobStillLinked(cache, sha256))) {
    const blob = cache.blobPath(sha256);
    if (await rm(blob).then(() => true, () => false)) removed.push(blob);
  }
  // Folders left empty below snapshots/ (the commit's, a file's sub-folders): rmdir refuses a
  // folder that is not empty, so nothing else goes; snapshots/ itself stays, as other tools made it too.
  const snapshots = `${join(cache.dir, 'snapshots')}${sep}`;
  for (let folder = dirname(link); folder.startsWith(snapshots); folder = dirname(folder)) {
    if (!(await rmdir(folder).then(() => true, () => false))) break;
  }
  return removed;
}

async function blobStillLinked(cache: RepoCache, sha256: string): Promise<boolean> {
  const snapshots = join(cache.dir, 'snapshots');
  const entries = await readdir(snapshots, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isSymbolicLink()) continue;
    const target = await readlink(join(entry.parentPath, entry.name)).catch(() => '');
    if (target.endsWith(`blobs/${sha256}`)) return true;
  }
  return false;
}
