// Model ids for discovered files: what clients put in `model`, so they must be readable,
// lowercase, stable across restarts and unique.
import { createHash } from 'node:crypto';
import { quantInName } from '../contracts/hub/names.js';

/** Lowercase, and only characters that survive URLs, shells and YAML unquoted. */
export function slug(text: string): string {
  const cleaned = text
    .toLowerCase()
    .replace(/[^a-z0-9._:-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '');
  return cleaned === '' ? 'model' : cleaned;
}

/** "Qwen2.5-7B-Instruct-Q4_K_M" → "q4_k_m"; undefined when the name carries no quantisation. */
export function quantTag(stem: string): string | undefined {
  return quantInName(stem)?.toLowerCase();
}

export interface IdCandidate {
  /** The id the file would get on its own. */
  baseId: string;
  /** Identity of the file (symlinks resolved), also the seed of a disambiguating suffix. */
  realPath: string;
  /** Position of the model dir it was found in: earlier dirs win a contested id. */
  dirIndex: number;
  path: string;
}

/**
 * Unique ids for `candidates`, none of them in `taken` (lowercase configured ids and aliases).
 * A file keeps the id it was given before (`remembered`, by real path) while that id is free.
 * Otherwise, when several files want one id, the one from the earliest model dir (then the
 * smallest path) gets it and the others a suffix from a hash of their own real path. Why a path
 * hash and not "-2", "-3": a counter depends on which other files exist. Why remembered ids
 * too: who gets the plain name depends on them as well, so deleting the winner would rename
 * the other (`same-1a2b3c` → `same`) under a client that uses it.
 * Deterministic: the same files and memory give the same ids in any input order.
 */
export function assignUniqueIds(
  candidates: readonly IdCandidate[],
  taken: ReadonlySet<string>,
  remembered: ReadonlyMap<string, string> = new Map(),
): Map<string, string> {
  const used = new Set(taken);
  const ids = new Map<string, string>();
  const ordered = [...candidates].sort((a, b) => a.dirIndex - b.dirIndex || (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const unnamed: IdCandidate[] = [];
  for (const candidate of ordered) {
    const before = remembered.get(candidate.realPath);
    if (before === undefined || used.has(before)) unnamed.push(candidate);
    else {
      used.add(before);
      ids.set(candidate.path, before);
    }
  }
  const deferred: IdCandidate[] = [];
  for (const candidate of unnamed) {
    if (used.has(candidate.baseId)) deferred.push(candidate);
    else {
      used.add(candidate.baseId);
      ids.set(candidate.path, candidate.baseId);
    }
  }
  for (const candidate of deferred) {
    const digest = createHash('sha256').update(candidate.realPath).digest('hex');
    let length = 6;
    let id = `${candidate.baseId}-${digest.slice(0, length)}`;
    while (used.has(id) && length < digest.length) id = `${candidate.baseId}-${digest.slice(0, ++length)}`;
    used.add(id);
    ids.set(candidate.path, id);
  }
  return ids;
}
