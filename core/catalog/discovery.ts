// Finds GGUF models on disk: the user's folders, LM Studio's, the Hugging Face hub cache and
// llama.cpp's download cache (see paths.ts for the defaults).
//
// Rules, each from a real layout:
// - a split model (`name-00001-of-00003.gguf`) is one model: path = first part, size = sum;
//   llama.cpp finds the other parts by name next to the first, so paths keep their folder.
// - `mmproj*` files are vision projectors, not models: attached to the models in their folder.
// - Hugging Face keeps `models--org--repo/snapshots/<rev>/<file>` as symlinks into `blobs/`;
//   the snapshot named by `refs/main` wins over stale revisions, the path stays the snapshot
//   link (so split parts stay findable by name) and identity uses the resolved file.
// - the same real file reached through two folders is one model (the first folder's).
// Nothing here throws for one bad entry: an unreadable folder is skipped and reported.
import type { Dirent } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { quantTag, slug } from './model-ids.js';
import { heldQuant, hubAlias } from '../contracts/hub/names.js';

export interface DiscoveredFile {
  /** The id it would get on its own (before collisions are resolved in the catalog). */
  baseId: string;
  /** The first (or only) part, as found: a symlink stays a symlink. */
  path: string;
  /** The resolved first part: the file's identity. */
  realPath: string;
  /** Every part in order, the first included. */
  parts: string[];
  /** Sum of the parts' sizes, bytes. */
  sizeBytes: number;
  /** The first part's modification time (of the resolved file), epoch ms. */
  mtimeMs: number;
  /** The latest modification time of any part, epoch ms: a later part still being written makes it recent. */
  lastWriteMs: number;
  /**
   * The first part's device and inode: another file renamed over the name gets another, a file
   * rewritten in place keeps its own (settling.ts tells the two apart).
   */
  fileId: string;
  projectorPath?: string;
  /** Why it cannot be loaded as found (a missing split part), as a sentence; absent when fine. */
  problem?: string;
  /** Index of the model dir it was found in. */
  dirIndex: number;
  /**
   * The names it is served under besides its id: a file of the Hugging Face cache answers to
   * `hf.co/OWNER/REPO:QUANT` (the name it is pulled as, core/contracts/hub/names.ts), and the
   * repo's default (its Q4_K_M, or its only model) to `hf.co/OWNER/REPO` as well.
   */
  aliases: string[];
}

export interface Discovery {
  files: DiscoveredFile[];
  /** Things a person may want to know (an unreadable folder, a split model without its first part). */
  problems: string[];
}

/** How deep below a model dir models are searched for (and watched: watch-catalog.ts). */
export const MAX_DEPTH = 8;
const GGUF = /\.gguf$/i;
const SPLIT = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/i;
const PROJECTOR = /(^|[-_.])mmproj([-_.]|$)/i;

/**
 * Whether a folder's contents are searched: Hugging Face's datasets and spaces never hold
 * models, its `blobs` holds them nameless (the snapshots name them), and hidden folders are
 * caches and tools' own.
 */
export function isSearchedFolder(name: string): boolean {
  return !/^(datasets|spaces)--/.test(name) && name !== 'blobs' && !name.startsWith('.');
}

export function isProjectorFile(name: string): boolean {
  return GGUF.test(name) && PROJECTOR.test(name);
}

/**
 * The projector to use from a folder's file names: f16 first (the precision projectors are
 * published in and the one LM Studio picks), then by name, so the choice is deterministic.
 */
export function chooseProjector(names: readonly string[]): string | undefined {
  const projectors = names.filter(isProjectorFile).sort();
  return projectors.find((name) => /f16/i.test(name)) ?? projectors[0];
}

/** The projector file next to `modelPath`, for models the config names directly. Never rejects. */
export async function projectorBeside(modelPath: string): Promise<string | undefined> {
  try {
    const folder = dirname(modelPath);
    const name = chooseProjector(await readdir(folder));
    return name === undefined ? undefined : join(folder, name);
  } catch {
    return undefined;
  }
}

interface Found {
  folder: string;
  names: string[];
  /** For files under a Hugging Face repo snapshot: the repo's name, and its `OWNER/REPO`. */
  hf?: { repo: string; id: string };
}

/** A file before HF repo naming: its stem and, under a HF snapshot, its repo. */
interface Candidate extends DiscoveredFile {
  stem: string;
  hfRepo?: string;
  hfId?: string;
}

/** Scans `modelDirs` in order. Blocks on directory reads and stats; never rejects. */
export async function discoverModels(modelDirs: readonly string[]): Promise<Discovery> {
  const problems: string[] = [];
  const candidates: Candidate[] = [];
  const seenReal = new Set<string>();
  for (const [dirIndex, dir] of modelDirs.entries()) {
    const folders: Found[] = [];
    await walk(dir, 0, folders, problems, new Set());
    for (const folder of folders) {
      for (const file of await modelsInFolder(folder, dirIndex, problems)) {
        if (seenReal.has(file.realPath)) continue;
        seenReal.add(file.realPath);
        candidates.push(file);
      }
    }
  }
  nameHfQuantisations(candidates);
  return { files: candidates.map(({ stem: _stem, hfRepo: _hfRepo, hfId: _hfId, ...file }) => file), problems };
}

async function listDir(dir: string, problems: string[], quietIfMissing: boolean): Promise<Dirent[] | undefined> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!(quietIfMissing && (code === 'ENOENT' || code === 'ENOTDIR'))) problems.push(`${dir}: cannot read the folder: ${(error as Error).message}`);
    return undefined;
  }
}

async function isDirectory(entry: Dirent, path: string): Promise<boolean> {
  if (entry.isDirectory()) return true;
  if (!entry.isSymbolicLink()) return false;
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

async function walk(dir: string, depth: number, out: Found[], problems: string[], visited: Set<string>): Promise<void> {
  let real: string;
  try {
    real = await realpath(dir);
  } catch {
    if (depth > 0) problems.push(`${dir}: cannot resolve the folder`);
    return; // a default model dir that does not exist is the normal case
  }
  if (visited.has(real) || depth > MAX_DEPTH) return;
  visited.add(real);
  const entries = await listDir(dir, problems, depth === 0);
  if (!entries) return;
  if (entries.some((e) => e.name === 'snapshots') && basename(dir).startsWith('models--')) {
    await walkHfRepo(dir, out, problems);
    return;
  }
  const names: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const path = join(dir, entry.name);
    if (await isDirectory(entry, path)) {
      if (isSearchedFolder(entry.name)) await walk(path, depth + 1, out, problems, visited);
    } else if (GGUF.test(entry.name)) names.push(entry.name);
  }
  if (names.length > 0) out.push({ folder: dir, names });
}

/** Snapshot folders of one HF repo, the one `refs/main` names first and alone when present. */
async function walkHfRepo(repoDir: string, out: Found[], problems: string[]): Promise<void> {
  const repo = basename(repoDir).split('--').slice(2).join('--') || basename(repoDir);
  const id = basename(repoDir).split('--').slice(1).join('/');
  const snapshotsDir = join(repoDir, 'snapshots');
  let revisions = ((await listDir(snapshotsDir, problems, false)) ?? []).map((e) => e.name).sort();
  try {
    const main = (await readFile(join(repoDir, 'refs', 'main'), 'utf8')).trim();
    if (revisions.includes(main)) revisions = [main];
  } catch {
    // No refs/main: every revision, newer ones shadowing older copies of the same file below.
  }
  const byRelativeFolder = new Map<string, Found & { mtime: number }>();
  for (const revision of revisions) {
    const snapshot = join(snapshotsDir, revision);
    const folders: Found[] = [];
    await walk(snapshot, 1, folders, problems, new Set());
    const mtime = await stat(snapshot).then((s) => s.mtimeMs, () => 0);
    for (const found of folders) {
      const key = relative(snapshot, found.folder);
      const previous = byRelativeFolder.get(key);
      if (previous && previous.mtime >= mtime) continue;
      byRelativeFolder.set(key, { ...found, mtime, hf: { repo, id } });
    }
  }
  for (const { mtime: _mtime, ...found } of byRelativeFolder.values()) out.push(found);
}

async function modelsInFolder(found: Found, dirIndex: number, problems: string[]): Promise<Candidate[]> {
  const projector = chooseProjector(found.names);
  const projectorPath = projector === undefined ? undefined : join(found.folder, projector);
  const splits = new Map<string, { total: number; parts: Map<number, string> }>();
  const singles: string[] = [];
  for (const name of found.names) {
    if (isProjectorFile(name)) continue;
    const split = SPLIT.exec(name);
    if (!split) {
      singles.push(name);
      continue;
    }
    const key = `${split[1]}\u0000${split[3]}`;
    const group = splits.get(key) ?? { total: Number(split[3]), parts: new Map<number, string>() };
    group.parts.set(Number(split[2]), name);
    splits.set(key, group);
  }
  const out: Candidate[] = [];
  const add = async (stem: string, partNames: string[], problem?: string) => {
    const parts = partNames.map((n) => join(found.folder, n));
    try {
      const first = await stat(parts[0]!);
      let sizeBytes = first.size;
      let lastWriteMs = first.mtimeMs;
      for (const part of parts.slice(1)) {
        const info = await stat(part);
        sizeBytes += info.size;
        lastWriteMs = Math.max(lastWriteMs, info.mtimeMs);
      }
      out.push({
        baseId: found.hf ? slug(found.hf.repo.replace(/[-_.]gguf$/i, '')) : slug(stem),
        path: parts[0]!,
        realPath: await realpath(parts[0]!),
        parts,
        sizeBytes,
        mtimeMs: first.mtimeMs,
        lastWriteMs,
        fileId: `${first.dev}:${first.ino}`,
        ...(projectorPath ? { projectorPath } : {}),
        ...(problem ? { problem } : {}),
        dirIndex,
        aliases: found.hf && heldQuant(stem) !== undefined ? [hubAlias(found.hf.id, heldQuant(stem))] : [],
        stem,
        ...(found.hf ? { hfRepo: `${dirIndex}:${found.hf.repo}`, hfId: found.hf.id } : {}),
      });
    } catch (error) {
      // A dangling HF symlink (blob deleted, download interrupted) lands here.
      problems.push(`${parts[0]}: cannot read the model file: ${(error as Error).message}`);
    }
  };
  for (const name of singles) await add(name.replace(GGUF, ''), [name]);
  for (const [key, group] of splits) {
    const prefix = key.split('\u0000')[0]!;
    const first = group.parts.get(1);
    if (first === undefined) {
      problems.push(`${join(found.folder, prefix)}: split model has no first part (-00001-of-${String(group.total).padStart(5, '0')}.gguf); it is not listed`);
      continue;
    }
    const names: string[] = [];
    const missing: number[] = [];
    for (let i = 1; i <= group.total; i++) {
      const part = group.parts.get(i);
      if (part === undefined) missing.push(i);
      else names.push(part);
    }
    const problem = missing.length
      ? `split model is missing part${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of ${group.total} in ${found.folder}`
      : undefined;
    await add(prefix, names, problem);
  }
  return out;
}

/**
 * A Hugging Face repo usually publishes one model in several quantisations. Its files are named
 * `<repo>:<quant>` (llama.cpp's own `-hf org/repo:Q4_K_M` spelling) when the repo holds more
 * than one, and plain `<repo>` when it holds one.
 */
function nameHfQuantisations(candidates: Candidate[]): void {
  const byRepo = new Map<string, Candidate[]>();
  for (const file of candidates) {
    if (file.hfRepo === undefined) continue;
    byRepo.set(file.hfRepo, [...(byRepo.get(file.hfRepo) ?? []), file]);
  }
  for (const group of byRepo.values()) {
    // The repo's default answers to `hf.co/OWNER/REPO` too, as a pull with no quant chooses it (core/pull/choose-files.ts).
    const fallback = group.find((file) => quantTag(file.stem) === 'q4_k_m') ?? (group.length === 1 ? group[0] : undefined);
    if (fallback?.hfId !== undefined) fallback.aliases.push(hubAlias(fallback.hfId, undefined));
    if (group.length < 2) continue;
    const tags = group.map((file) => quantTag(file.stem));
    const tagsUnique = tags.every((tag) => tag !== undefined) && new Set(tags).size === tags.length;
    group.forEach((file, i) => {
      file.baseId = `${file.baseId}:${tagsUnique ? tags[i]! : slug(file.stem)}`;
    });
  }
}
