// The Hub's HTTP API as the pull uses it: a repo's info, its files, a file's metadata. Each
// answer the Hub can refuse with (test/fixtures/hub-api E7–E9) becomes a PullRefused that says
// what to do, because "Api error with status 401" tells a person nothing.
//
// Where @huggingface/hub is used and where not:
// - the file list is its `listFiles` (the tree API, following `Link: rel="next"` pages); we
//   hand it a `fetch` that keeps the refusal's `X-Error-Code`, which its HubApiError drops;
// - a repo's info is one GET here: `modelInfo` asks for fields through `expand[]` and throws the
//   same code-less HubApiError, while all we need is the repo's id as the Hub spells it;
// - a file's metadata is a HEAD here: `fileDownloadInfo` sends a GET with `Range: bytes=0-0`
//   and follows the CDN redirect, losing `X-Repo-Commit`, which names the snapshot folder, and
//   the file's sha256 (`X-Linked-Etag`), which the download is checked against.
import { listFiles } from '@huggingface/hub';
import { PullRefused } from '../contracts/hub/pulls.js';
import type { HubAccess } from './hub-access.js';

export interface RepoFile {
  /** Its path inside the repo. */
  path: string;
  sizeBytes: number;
  /** The sha256 of its bytes (the tree's `lfs.oid`); undefined for a file not stored with LFS. */
  sha256: string | undefined;
}

/** What `resolve` says of a file before a byte is fetched (E4). */
export interface FileMetadata {
  /** The commit `main` resolved to: the snapshot folder's name. */
  commit: string;
  sha256: string;
  sizeBytes: number;
  /** Where its bytes are (the CDN), with Range honoured (E6). */
  location: string;
}

const JSON_ACCEPT = { accept: 'application/json' };

function authHeaders(access: HubAccess): Record<string, string> {
  return access.token === undefined ? {} : { authorization: `Bearer ${access.token}` };
}

/** The repo's id as the Hub spells it (the cache folder's name must be the same for every tool). Rejects with PullRefused. */
export async function repoId(access: HubAccess, repo: string, signal?: AbortSignal): Promise<string> {
  const res = await hubFetch(`${access.endpoint}/api/models/${repo}`, { headers: { ...JSON_ACCEPT, ...authHeaders(access) }, ...(signal ? { signal } : {}) }, access);
  if (!res.ok) throw await refusal(res, access, repo);
  const info = (await res.json()) as { id?: unknown };
  return typeof info.id === 'string' && info.id.toLowerCase() === repo.toLowerCase() ? info.id : repo;
}

/** Every file of the repo at `main`. Rejects with PullRefused. */
export async function repoFiles(access: HubAccess, repo: string, signal?: AbortSignal): Promise<RepoFile[]> {
  let refused: Response | undefined;
  const keepRefusal: typeof fetch = async (input, init) => {
    const res = await hubFetch(input instanceof Request ? input.url : String(input), { ...init, ...(signal ? { signal } : {}) }, access);
    if (!res.ok) refused = res.clone();
    return res;
  };
  const files: RepoFile[] = [];
  try {
    for await (const entry of listFiles({ repo: { type: 'model', name: repo }, recursive: true, hubUrl: access.endpoint, fetch: keepRefusal, ...(access.token ? { accessToken: access.token } : {}) })) {
      if (entry.type !== 'file') continue;
      // A path becomes a path on this disk (snapshots/COMMIT/PATH): one that climbs out of the
      // folder, or starts at a root, is never taken, whatever the endpoint sends (as
      // @huggingface/hub's validateRelativeFilename refuses it).
      if (!isSafeRepoPath(entry.path)) throw new PullRefused(502, 'hub_answer', `${access.endpoint} lists a file of ${repo} named '${entry.path}', which would be written outside the cache; llmtray does not pull from it.`);
      files.push({ path: entry.path, sizeBytes: entry.lfs?.size ?? entry.size, sha256: entry.lfs?.oid });
    }
  } catch (error) {
    if (refused !== undefined) throw await refusal(refused, access, repo);
    throw error;
  }
  return files;
}

/**
 * A file's metadata from `HEAD resolve/main/PATH` (E4): relative redirects (a renamed repo) are
 * followed, as huggingface_hub's `get_hf_file_metadata` does; the first answer that is not one
 * carries the headers. Rejects with PullRefused.
 */
export async function fileMetadata(access: HubAccess, repo: string, path: string, signal?: AbortSignal): Promise<FileMetadata> {
  let url = `${access.endpoint}/${repo}/resolve/main/${path.split('/').map(encodeURIComponent).join('/')}`;
  for (let hops = 0; ; hops++) {
    const res = await hubFetch(url, { method: 'HEAD', redirect: 'manual', headers: { 'accept-encoding': 'identity', ...authHeaders(access) }, ...(signal ? { signal } : {}) }, access);
    const location = res.headers.get('location');
    if (res.status >= 300 && res.status < 400 && location !== null && !/^[a-z][a-z0-9+.-]*:/i.test(location) && hops < 5) {
      url = new URL(location, url).toString();
      continue;
    }
    if (res.status >= 400) throw await refusal(res, access, repo, path);
    const commit = res.headers.get('x-repo-commit');
    const etag = normalizeEtag(res.headers.get('x-linked-etag') ?? res.headers.get('etag'));
    const size = Number(res.headers.get('x-linked-size') ?? res.headers.get('content-length'));
    if (commit === null || etag === undefined || !Number.isSafeInteger(size) || size < 0) {
      throw new PullRefused(502, 'hub_answer', `${access.endpoint} did not say ${path}'s commit, sha256 and size (X-Repo-Commit, X-Linked-Etag, X-Linked-Size); is HF_ENDPOINT a Hugging Face Hub or a mirror of one?`);
    }
    // The commit names a folder on this disk: only a commit id is taken.
    if (!/^[0-9a-f]{40}$/.test(commit)) throw new PullRefused(502, 'hub_answer', `${access.endpoint} gave '${commit.slice(0, 60)}' as ${repo}'s commit, which is not a commit id; llmtray does not pull from it.`);
    if (!/^[0-9a-f]{64}$/.test(etag)) {
      throw new PullRefused(502, 'hub_answer', `${repo}/${path} is not stored with LFS on ${access.endpoint} (its ETag ${etag} is not a sha256), so its bytes cannot be checked; llmtray pulls only files it can check.`);
    }
    return { commit, sha256: etag, sizeBytes: size, location: location === null ? url : new URL(location, url).toString() };
  }
}

/** A relative path inside the repo: no `..` or `.` segment, no empty one, no root, no backslash, no drive. */
export function isSafeRepoPath(path: string): boolean {
  if (path.includes('\\') || /^[a-zA-Z]:/.test(path)) return false;
  return path.split('/').every((part) => part !== '' && part !== '.' && part !== '..');
}

/** E5: `W/"abc"` and `"abc"` are `abc`. */
export function normalizeEtag(etag: string | null): string | undefined {
  if (etag === null) return undefined;
  return etag.replace(/^W\//, '').replace(/^"|"$/g, '') || undefined;
}

/** A fetch whose failure to reach the Hub is a sentence naming the endpoint. */
async function hubFetch(url: string, init: RequestInit, access: HubAccess): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (error) {
    if (init.signal?.aborted) throw error;
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new PullRefused(502, 'hub_unreachable', `Cannot reach the Hub at ${access.endpoint} (${cause?.code ?? cause?.message ?? (error as Error).message}); check the network${access.endpoint === 'https://huggingface.co' ? '' : ' and HF_ENDPOINT'}.`);
  }
}

/** The Hub's refusal (E7–E9) as a sentence that says what to do. */
async function refusal(res: Response, access: HubAccess, repo: string, path?: string): Promise<PullRefused> {
  const code = res.headers.get('x-error-code') ?? '';
  const page = `${access.endpoint}/${repo}`;
  const what = path === undefined ? repo : `${repo}/${path}`;
  switch (code) {
    case 'GatedRepo':
      return access.token === undefined
        ? new PullRefused(403, 'gated_repo', `${repo} is gated: accept its terms at ${page}, then set HF_TOKEN to a token of that account (https://huggingface.co/settings/tokens) in the daemon's environment, or run \`hf auth login\`, and pull again.`)
        : new PullRefused(403, 'gated_repo', `${repo} is gated and the token from ${access.tokenSource} has no access to it: accept its terms at ${page} with the account the token belongs to, or set HF_TOKEN to another token, and pull again.`);
    case 'RepoNotFound':
      return new PullRefused(404, 'repo_not_found', `There is no model ${repo} on ${access.endpoint}${access.token === undefined ? ' (or it is private: set HF_TOKEN to a token that can read it)' : ''}; check the name (search at ${access.endpoint}/models?search=${encodeURIComponent(repo.split('/')[1] ?? repo)}&library=gguf).`);
    case 'EntryNotFound':
      return new PullRefused(404, 'file_not_found', `${repo} has no file ${path ?? ''}; see its files at ${page}/tree/main.`);
    case 'RevisionNotFound':
      return new PullRefused(404, 'revision_not_found', `${repo} has no branch main on ${access.endpoint}.`);
    default: {
      const message = res.headers.get('x-error-message') ?? (await res.text().catch(() => '')).slice(0, 200);
      return new PullRefused(502, 'hub_error', `The Hub at ${access.endpoint} answered ${res.status} for ${what}${message ? `: ${message}` : ''}.`);
    }
  }
}
