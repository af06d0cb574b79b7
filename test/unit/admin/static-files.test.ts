// No request outside the dashboard's folder reads a file (issue 12). The HTTP fuzz suite can
// only see what is served; a guard that opened the admin token, or stat'ed a file it then
// refused, would still pass there. This suite watches the file system calls themselves.
//
// How it watches: static-files.ts takes `createReadStream` and `fs/promises` as ESM imports of
// builtins. Those are live bindings onto the CommonJS objects' properties as of the last
// `syncBuiltinESMExports()`, so replacing the properties and syncing makes the module call the
// recording wrappers (no mock of the module, no hook in the code under test). A first test
// proves the watch sees a legitimate read, so a silent watch cannot make the rest pass.
//
// The folder under test holds files, a symlink inside it, and two symlinks that point out of
// it, to a secret file and to the secret's folder. That folder is a sibling whose name starts
// with the root's (dashboard, dashboard-private), so a containment check that compares
// prefixes without the separator lets it through. Requests go over bare sockets so that `..`,
// encodings and backslashes arrive byte for byte as generated.
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveStatic } from '../../../core/admin/static-files.js';
import { pathOf } from '../../../core/common/url-path.js';
import { rawExchange, type RawAnswer } from '../../support/raw-http.js';

const RUNS = 2_000;
const SECRET = 'TOP-SECRET-4e1b9d-admin-token-contents';

/** What a request made the process do to the disk, by kind of call. */
interface FsCalls {
  /**
   * A file opened for reading (createReadStream, open, readFile). createReadStream opens
   * through fs.open, so one read is recorded twice: compare distinct paths.
   */
  opened: string[];
  /** A file whose metadata was read (stat, lstat). */
  statted: string[];
  /** A path resolved through its symlinks. */
  resolved: string[];
}

const require = createRequire(import.meta.url);
const fsCjs = require('node:fs') as Record<string, unknown>;
const fspCjs = require('node:fs/promises') as Record<string, unknown>;

let calls: FsCalls = { opened: [], statted: [], resolved: [] };
const originals: { target: Record<string, unknown>; name: string; fn: unknown }[] = [];

/** Replaces `target[name]` with a function that records its first argument under `kind`. */
function watch(target: Record<string, unknown>, name: string, kind: keyof FsCalls): void {
  const original = target[name];
  if (typeof original !== 'function') throw new Error(`node:fs has no function ${name} to watch`);
  originals.push({ target, name, fn: original });
  target[name] = function watched(this: unknown, ...args: unknown[]) {
    calls[kind].push(pathText(args[0]));
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  };
}

function pathText(path: unknown): string {
  if (typeof path === 'string') return path;
  if (path instanceof URL) return fileURLToPath(path);
  if (Buffer.isBuffer(path)) return path.toString('utf8');
  // A file descriptor or anything else names no path we can place: count it as outside.
  return `<not a path: ${String(path)}>`;
}

let base: string;
/** The root as given to serveStatic, and its real path (what "inside" is measured against). */
let root: string;
let realRoot: string;
let secretDir: string;
/** Every regular file inside the root, by real path: what a 200 may carry. */
const inside = new Map<string, Buffer>();
let server: http.Server;
let port: number;
/** Anything serveStatic threw: it promises to answer every failure instead. */
const thrown: unknown[] = [];

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'llmtray-static-'));
  root = join(base, 'dashboard');
  secretDir = join(base, 'dashboard-private');
  await mkdir(join(root, 'assets', 'nested'), { recursive: true });
  await mkdir(secretDir);
  await writeFile(join(root, 'index.html'), '<!doctype html><title>dashboard</title>');
  await writeFile(join(root, 'assets', 'app.js'), 'console.log("dashboard");');
  await writeFile(join(root, 'assets', 'nested', 'deep.txt'), 'a nested file of the dashboard');
  await writeFile(join(secretDir, 'secret.txt'), SECRET);
  await symlink(join(secretDir, 'secret.txt'), join(root, 'link-to-secret'));
  await symlink(secretDir, join(root, 'link-to-dir'));
  // A symlink that stays inside is served as the file it names: the guard is about where a
  // path ends up, not about symlinks as such.
  await symlink(join(root, 'assets', 'app.js'), join(root, 'link-inside'));
  realRoot = await realpath(root);
  for (const file of ['index.html', 'assets/app.js', 'assets/nested/deep.txt']) {
    const real = join(realRoot, ...file.split('/'));
    inside.set(real, readFileSync(real));
  }

  server = http.createServer((req, res) => {
    serveStatic(req, res, pathOf(req.url), root).catch((error: unknown) => {
      thrown.push(error);
      res.destroy();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  port = (server.address() as AddressInfo).port;

  for (const name of ['createReadStream', 'open', 'openSync', 'readFile', 'readFileSync']) watch(fsCjs, name, 'opened');
  for (const name of ['stat', 'lstat', 'statSync', 'lstatSync']) watch(fsCjs, name, 'statted');
  watch(fsCjs, 'realpath', 'resolved');
  watch(fsCjs, 'realpathSync', 'resolved');
  for (const name of ['open', 'readFile']) watch(fspCjs, name, 'opened');
  for (const name of ['stat', 'lstat']) watch(fspCjs, name, 'statted');
  watch(fspCjs, 'realpath', 'resolved');
  syncBuiltinESMExports();
});

afterAll(async () => {
  for (const { target, name, fn } of originals.reverse()) target[name] = fn;
  syncBuiltinESMExports();
  await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  if (base) await rm(base, { recursive: true, force: true });
});

interface Exchange {
  target: string;
  answer: RawAnswer;
  calls: FsCalls;
}

/** Sends `GET target` exactly as written and returns the answer with the calls it caused. */
async function request(target: string): Promise<Exchange> {
  calls = { opened: [], statted: [], resolved: [] };
  const bytes = Buffer.from(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`, 'latin1');
  const answer = await rawExchange('127.0.0.1', port, bytes, { halfClose: false, timeoutMs: 10_000 });
  return { target, answer, calls };
}

/** What went wrong with one exchange, or null when the file system and the answer stayed inside. */
function violation({ target, answer, calls: seen }: Exchange): string | null {
  if (thrown.length > 0) return `serveStatic threw on ${target} or before: ${String(thrown[0])}`;
  const within = realRoot + sep;
  for (const path of seen.opened) {
    if (!path.startsWith(within)) return `${target} opened ${path}, outside ${realRoot}`;
  }
  // The root itself is not outside: a guard may stat it (`/.` names it) to find it is a folder.
  for (const path of seen.statted) {
    if (path !== realRoot && !path.startsWith(within)) return `${target} stat'ed ${path}, outside ${realRoot}`;
  }
  // realpath is how the guard finds out where a symlink leads, so it may be asked about a
  // link inside the root that points out; it must never be asked about a path that is
  // already outside the root as written.
  const lexicalRoot = resolve(root);
  for (const path of seen.resolved) {
    if (path !== lexicalRoot && !path.startsWith(lexicalRoot + sep)) return `${target} resolved ${path}, outside ${lexicalRoot}`;
  }
  if (answer.body.includes(SECRET) || Buffer.from(JSON.stringify(answer.headers)).includes(SECRET)) return `${target} answered with the secret`;
  if (![200, 400, 403, 404].includes(answer.status)) return `${target} answered ${answer.status}`;
  if (answer.status === 200) {
    const files = distinct(seen.opened);
    if (files.length !== 1) return `${target} answered 200 after opening ${files.length} files: ${files.join(', ')}`;
    const served = inside.get(files[0] ?? '');
    if (served === undefined) return `${target} answered 200 from ${files[0]}, which is no file of ${realRoot}`;
    if (!served.equals(answer.body)) return `${target} answered 200 with a body that is not ${files[0]}`;
  } else if (seen.opened.length > 0) {
    return `${target} answered ${answer.status} yet opened ${seen.opened.join(', ')}`;
  }
  return null;
}

function distinct(paths: string[]): string[] {
  return [...new Set(paths)];
}

describe('serveStatic reads nothing outside its folder', () => {
  it('the watch sees a legitimate read (so a silent watch cannot pass the rest)', async () => {
    const exchange = await request('/index.html');
    expect(exchange.answer.status).toBe(200);
    expect(distinct(exchange.calls.opened)).toEqual([join(realRoot, 'index.html')]);
    expect(exchange.calls.statted).toEqual([join(realRoot, 'index.html')]);
  });

  it.each([
    ['/', 'index.html'],
    ['/index.html', 'index.html'],
    ['/assets/app.js', 'assets/app.js'],
    ['/assets/app.js?v=1&next=/../dashboard-private/secret.txt', 'assets/app.js'],
    ['/assets/nested/deep.txt', 'assets/nested/deep.txt'],
    ['/assets/%6eested/deep.txt', 'assets/nested/deep.txt'],
    ['/assets/./nested/deep.txt', 'assets/nested/deep.txt'],
    ['/link-inside', 'assets/app.js'],
  ])('serves %s from %s', async (target, file) => {
    const exchange = await request(target);
    expect(violation(exchange)).toBeNull();
    expect(exchange.answer.status).toBe(200);
    expect(distinct(exchange.calls.opened)).toEqual([join(realRoot, ...file.split('/'))]);
  });

  it.each([
    '/../dashboard-private/secret.txt',
    '/assets/../../dashboard-private/secret.txt',
    '/%2e%2e/dashboard-private/secret.txt',
    '/%2E%2e/dashboard-private/secret.txt',
    '/.%2e/dashboard-private/secret.txt',
    '/..%2fdashboard-private%2fsecret.txt',
    '/%2e%2e%2fdashboard-private%2fsecret.txt',
    '/..\\dashboard-private\\secret.txt',
    '/..%5cdashboard-private%5csecret.txt',
    '/assets%2f..%2f..%2fdashboard-private%2fsecret.txt',
    '/index.html%00/../../dashboard-private/secret.txt',
    '/%00../dashboard-private/secret.txt',
    '//../dashboard-private/secret.txt',
    '/link-to-secret',
    '/link-to-dir/secret.txt',
    '/link-to-dir/../link-to-secret',
    '/link-to-dir%2fsecret.txt',
    '/%252e%252e/dashboard-private/secret.txt',
  ])('refuses %s without reading outside', async (target) => {
    const exchange = await request(target);
    expect(violation(exchange)).toBeNull();
    expect(exchange.answer.status).not.toBe(200);
  });

  it('refuses the absolute path of the secret as a request path', async () => {
    for (const target of [join(secretDir, 'secret.txt'), `/${join(secretDir, 'secret.txt')}`, `/..${join(secretDir, 'secret.txt')}`]) {
      const exchange = await request(target);
      expect(violation(exchange)).toBeNull();
      expect(exchange.answer.status).not.toBe(200);
    }
  });

  it(`holds for ${RUNS} generated paths built from traversal pieces`, async () => {
    const secretParts = secretDir.split(sep).filter((part) => part !== '');
    const piece = fc.constantFrom(
      '..', '.', '%2e%2e', '%2E%2e', '.%2e', '%2e.', '%2E', '%252e%252e', '%00', '%2500', '~', '',
      'link-to-secret', 'link-to-dir', 'link-inside', 'dashboard-private', 'secret.txt', '%73ecret.txt',
      'index.html', 'assets', 'app.js', 'nested', 'deep.txt', ...secretParts,
    );
    const separator = fc.constantFrom('/', '/', '/', '//', '%2f', '%2F', '%5c', '%5C', '\\', '');
    const query = fc.constantFrom('', '', '?', '?v=1', '?/../dashboard-private/secret.txt', '?%2e%2e=1', '#../dashboard-private');
    const target = fc
      .tuple(fc.array(fc.tuple(separator, piece), { minLength: 1, maxLength: 8 }), query)
      .map(([parts, tail]) => `/${parts.map(([sepPart, name], i) => (i === 0 ? name : sepPart + name)).join('')}${tail}`);

    let served = 0;
    let refusedAfterResolving = 0;
    await fc.assert(
      fc.asyncProperty(target, async (path) => {
        const exchange = await request(path);
        if (exchange.answer.status === 200) served += 1;
        if (exchange.answer.status === 403 && exchange.calls.resolved.length > 0) refusedAfterResolving += 1;
        const problem = violation(exchange);
        if (problem !== null) throw new Error(problem);
      }),
      { numRuns: RUNS },
    );
    // The generator must also reach files that are served, or "nothing outside is read"
    // would hold merely because nothing is read at all; and symlinks that lead out, or only
    // the textual `..` check would ever be exercised.
    expect(served).toBeGreaterThan(0);
    expect(refusedAfterResolving).toBeGreaterThan(0);
  }, 60_000);
});
