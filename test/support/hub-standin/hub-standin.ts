// A stand-in for the Hugging Face Hub: a real HTTP server on loopback that answers the part of
// the Hub's API the pull uses, as the Hub documents it (test/fixtures/hub-api/README.md: each
// fact numbered there, E1…E10, is cited where it is served), and serves generated GGUF files.
//
// Why a stand-in and not the Hub: the tests run with no network, and the faults a pull must
// survive (a connection cut mid-file, bytes that are not what the Hub promised, a gated repo)
// cannot be caused on the real Hub at will. Each fault is caused for real here: the socket is
// destroyed mid-file, the bytes on the wire are wrong, the 401 carries the Hub's own headers.
//
// The CDN is a path on the same server (`/cdn/SHA256`), reached by the 302 of `resolve` as the
// Hub's CDN host is: a client that read the metadata from the redirect's headers and fetched the
// bytes from its Location works against both.
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StandInFile {
  /** The path inside the repo, e.g. `Tiny-Q4_K_M.gguf` or `split/Big-00001-of-00002.gguf`. */
  path: string;
  bytes: Buffer;
}

export interface StandInRepo {
  /** `OWNER/REPO`. */
  id: string;
  files: StandInFile[];
  /** Set: every resolve of this repo needs `Authorization: Bearer` with this token (E7). */
  gatedToken?: string;
}

export interface SeenRequest {
  method: string;
  path: string;
  /** The Range header, when sent. */
  range?: string;
  authorization?: string;
}

/** Holds the next CDN download after this many bytes until released, or cut (its socket destroyed). */
interface Hold {
  afterBytes: number;
  reached: () => void;
  /** Resolves with what to do: go on sending, or cut the connection. */
  decided: Promise<'release' | 'cut'>;
}

export interface HubStandIn {
  /** `http://127.0.0.1:PORT`: what HF_ENDPOINT is set to. */
  readonly url: string;
  /** Every request, in order. */
  readonly requests: SeenRequest[];
  /** The commit `main` resolves to, for `repoId` (40 hex). */
  commitOf(repoId: string): string;
  /** The sha256 (hex) of a file, as the tree API's lfs.oid and X-Linked-Etag say it. */
  sha256Of(repoId: string, path: string): string;
  /** The CDN serves `path`'s bytes with one byte changed (same size), while the Hub's headers keep the true sha256. */
  serveWrongBytes(repoId: string, path: string): void;
  /**
   * The next CDN download stops sending after `bytes` bytes and waits: `reached` resolves once it
   * has sent them; `release` lets it go on (or ends it, if the client has gone); `cut` destroys its
   * connection, as a network that drops does. A test that cuts waits first for the client to have
   * written the bytes, so that where it resumes is known.
   */
  holdNextDownloadAfter(bytes: number): { reached: Promise<void>; release: () => void; cut: () => void };
  /** Adds or replaces a repo. */
  addRepo(repo: StandInRepo): void;
  close(): Promise<void>;
}

interface Stored {
  repo: StandInRepo;
  commit: string;
  shas: Map<string, string>;
}

export async function startHubStandIn(repos: readonly StandInRepo[]): Promise<HubStandIn> {
  const stored = new Map<string, Stored>();
  const requests: SeenRequest[] = [];
  const wrong = new Set<string>();
  let hold: Hold | null = null;

  const addRepo = (repo: StandInRepo): void => {
    const shas = new Map(repo.files.map((file) => [file.path, sha256(file.bytes)]));
    // The commit is a content hash of the repo, as git's is: a changed file is a new commit.
    const commit = createHash('sha1').update(repo.id).update([...shas.values()].join()).digest('hex');
    stored.set(repo.id.toLowerCase(), { repo, commit, shas });
  };
  for (const repo of repos) addRepo(repo);

  const byBlob = (sha: string): { repo: Stored; file: StandInFile } | undefined => {
    for (const repo of stored.values()) {
      const file = repo.repo.files.find((f) => repo.shas.get(f.path) === sha);
      if (file) return { repo, file };
    }
    return undefined;
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    requests.push({
      method: req.method ?? '',
      path: url.pathname + url.search,
      ...(req.headers.range === undefined ? {} : { range: req.headers.range }),
      ...(req.headers.authorization === undefined ? {} : { authorization: req.headers.authorization }),
    });
    route(req, res, url).catch((error: unknown) => {
      if (!res.headersSent) hubError(res, 500, 'InternalError', String(error));
      else res.destroy();
    });
  });

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const path = decodeURIComponent(url.pathname);
    if (path === '/api/models') return searchModels(res, url);
    const tree = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)(?:\/(.*))?$/.exec(path);
    if (tree) return listTree(res, tree[1]!, tree[2]!, tree[3] ?? '');
    const info = /^\/api\/models\/([^/]+\/[^/]+)$/.exec(path);
    if (info) return modelInfo(res, info[1]!);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    if (resolve) return resolveFile(req, res, resolve[1]!, resolve[2]!, resolve[3]!);
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(path);
    if (cdn) return serveBlob(req, res, cdn[1]!);
    hubError(res, 404, 'NotFound', `The stand-in does not serve ${path}`);
  }

  // E1: the search, filtered to GGUF repos with `filter=gguf`.
  function searchModels(res: ServerResponse, url: URL): void {
    const search = (url.searchParams.get('search') ?? '').toLowerCase();
    const limit = Number(url.searchParams.get('limit') ?? 50);
    const ggufOnly = url.searchParams.getAll('filter').includes('gguf');
    const found = [...stored.values()]
      .filter(({ repo }) => repo.id.toLowerCase().includes(search))
      .filter(({ repo }) => !ggufOnly || repo.files.some((f) => f.path.endsWith('.gguf')))
      .slice(0, limit)
      .map(({ repo }) => ({ id: repo.id, modelId: repo.id, likes: 0, downloads: 0, tags: ['gguf'], gated: repo.gatedToken === undefined ? false : 'manual', private: false }));
    json(res, 200, found);
  }

  // E2: the model's info; a repo that is not here is E8's 404.
  function modelInfo(res: ServerResponse, repoId: string): void {
    const repo = stored.get(repoId.toLowerCase());
    if (!repo) return hubError(res, 404, 'RepoNotFound', `Repository Not Found for url: /api/models/${repoId}.`);
    json(res, 200, {
      id: repo.repo.id,
      modelId: repo.repo.id,
      sha: repo.commit,
      gated: repo.repo.gatedToken === undefined ? false : 'manual',
      private: false,
      tags: ['gguf'],
      siblings: repo.repo.files.map((f) => ({ rfilename: f.path })),
    });
  }

  // E3: the tree, every file stored with LFS (lfs.oid is the sha256), one page.
  function listTree(res: ServerResponse, repoId: string, revision: string, under: string): void {
    const repo = stored.get(repoId.toLowerCase());
    if (!repo) return hubError(res, 404, 'RepoNotFound', `Repository Not Found for url: /api/models/${repoId}/tree/${revision}.`);
    if (revision !== 'main' && revision !== repo.commit) return hubError(res, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
    const files = repo.repo.files.filter((f) => under === '' || f.path.startsWith(`${under}/`));
    const folders = [...new Set(files.flatMap((f) => f.path.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'))))];
    json(res, 200, [
      ...folders.map((path) => ({ type: 'directory', oid: sha1(path), size: 0, path })),
      ...files.map((f) => {
        const sha = repo.shas.get(f.path)!;
        return { type: 'file', oid: sha1(f.path + sha), size: f.bytes.length, path: f.path, lfs: { oid: sha, size: f.bytes.length, pointerSize: 134 } };
      }),
    ]);
  }

  // E4, E7, E8, E9: the redirect to the CDN with the file's metadata, or the Hub's refusal.
  function resolveFile(req: IncomingMessage, res: ServerResponse, repoId: string, revision: string, filePath: string): void {
    const repo = stored.get(repoId.toLowerCase());
    if (!repo) return hubError(res, 404, 'RepoNotFound', `Repository Not Found for url: /${repoId}/resolve/${revision}/${filePath}.`);
    const gated = repo.repo.gatedToken;
    if (gated !== undefined && req.headers.authorization !== `Bearer ${gated}`) {
      const status = req.headers.authorization === undefined ? 401 : 403;
      return hubError(res, status, 'GatedRepo', `Access to model ${repo.repo.id} is restricted. You must have access to it and be authenticated to access it. Please log in.`);
    }
    if (revision !== 'main' && revision !== repo.commit) return hubError(res, 404, 'RevisionNotFound', `Invalid rev id: ${revision}`);
    const file = repo.repo.files.find((f) => f.path === filePath);
    if (!file) return hubError(res, 404, 'EntryNotFound', `Entry not found for url: /${repoId}/resolve/${revision}/${filePath}.`);
    const sha = repo.shas.get(file.path)!;
    res.writeHead(302, {
      // Absolute, as the Hub's CDN host is: a client follows only relative redirects for metadata (E4).
      location: `http://${req.headers.host ?? "127.0.0.1"}/cdn/${sha}`,
      'x-repo-commit': repo.commit,
      'x-linked-etag': `"${sha}"`,
      'x-linked-size': String(file.bytes.length),
      etag: `W/"${sha1(file.path)}"`,
      'content-length': '0',
    });
    res.end();
  }

  // E6: the bytes, whole or from a Range, with the faults the tests asked for.
  async function serveBlob(req: IncomingMessage, res: ServerResponse, sha: string): Promise<void> {
    const found = byBlob(sha);
    if (!found) return hubError(res, 404, 'EntryNotFound', `No blob ${sha}`);
    let bytes = found.file.bytes;
    if (wrong.has(`${found.repo.repo.id.toLowerCase()}\u0000${found.file.path}`)) {
      bytes = Buffer.from(bytes);
      bytes[bytes.length >> 1] = (bytes[bytes.length >> 1]! + 1) & 0xff;
    }
    // `bytes=N-` (a resume) and `bytes=N-M` (@huggingface/hub's `bytes=0-0` probe for the size).
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    const end = range && range[2] !== '' ? Math.min(Number(range[2]), bytes.length - 1) : bytes.length - 1;
    if (start >= bytes.length || start > end) {
      res.writeHead(416, { 'content-range': `bytes */${bytes.length}` });
      return void res.end();
    }
    const body = bytes.subarray(start, end + 1);
    res.writeHead(range ? 206 : 200, {
      'content-type': 'application/octet-stream',
      'content-length': String(body.length),
      'accept-ranges': 'bytes',
      // The CDN names an LFS object by its sha256 (E6); @huggingface/hub's fileDownloadInfo reads it after the redirect.
      etag: `"${sha}"`,
      ...(range ? { 'content-range': `bytes ${start}-${end}/${bytes.length}` } : {}),
    });
    if (req.method === 'HEAD') return void res.end();
    const myHold = hold;
    hold = null;
    if (myHold === null || myHold.afterBytes >= body.length) return void res.end(body);
    await write(res, body.subarray(0, myHold.afterBytes));
    myHold.reached();
    if ((await myHold.decided) === 'cut') return void res.destroy();
    if (res.destroyed) return;
    res.end(body.subarray(myHold.afterBytes));
  }

  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const storedRepo = (repoId: string): Stored => {
    const repo = stored.get(repoId.toLowerCase());
    if (!repo) throw new Error(`the stand-in has no repo ${repoId}`);
    return repo;
  };
  return {
    url,
    requests,
    commitOf: (repoId) => storedRepo(repoId).commit,
    sha256Of: (repoId, path) => {
      const sha = storedRepo(repoId).shas.get(path);
      if (sha === undefined) throw new Error(`the stand-in's ${repoId} has no file ${path}`);
      return sha;
    },
    serveWrongBytes: (repoId, path) => {
      wrong.add(`${repoId.toLowerCase()}\u0000${path}`);
    },
    holdNextDownloadAfter: (bytes) => {
      let reached!: () => void;
      let decide!: (what: 'release' | 'cut') => void;
      const reachedPromise = new Promise<void>((done) => (reached = done));
      const decided = new Promise<'release' | 'cut'>((done) => (decide = done));
      hold = { afterBytes: bytes, reached, decided };
      return { reached: reachedPromise, release: () => decide('release'), cut: () => decide('cut') };
    },
    addRepo,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

function write(res: ServerResponse, chunk: Buffer): Promise<void> {
  return new Promise((done) => {
    if (res.write(chunk)) done();
    else res.once('drain', done);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(text)) });
  res.end(text);
}

/** The Hub's refusal: the status, `X-Error-Code`, `X-Error-Message` and a JSON `{ error }` body (E7–E9). */
function hubError(res: ServerResponse, status: number, code: string, message: string): void {
  const text = JSON.stringify({ error: message });
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(text)),
    'x-error-code': code,
    'x-error-message': message,
  });
  res.end(text);
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex');
}
