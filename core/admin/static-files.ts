// The dashboard's built files (dist/renderer) for the headless mode, served read-only.
//
// What it guards against: a request path that climbs out of the folder (`/../`, `%2e%2e`,
// `..\`, a symlink pointing outside) would otherwise read any file the person can, the admin
// token included, and hand it to whatever asked over loopback. The answer is a strict CSP so
// that even an injected string in a log line cannot run script or send data anywhere but
// back here.
import { createReadStream } from 'node:fs';
import * as fsp from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, resolve, sep } from 'node:path';
import { BASE_HEADERS, sendAdminError } from './replies.js';

/**
 * Only this origin; no inline script or style element, no eval, no plugins, no framing, no
 * <base> rewriting. `img-src data:` for inline icons; React's style props go through the
 * CSSOM, which style-src does not restrict.
 */
export const DASHBOARD_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': DASHBOARD_CSP,
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

/**
 * The Content-Type of a dashboard file, from its extension. The desktop app's llmtray:// handler
 * uses it too: a module script without a JavaScript type is refused, and the page stays blank.
 */
export function contentTypeFor(path: string): string {
  return CONTENT_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * Answers a request for a dashboard file. Blocks on the disk; never throws (every failure is
 * an answer). `staticDir` undefined or without index.html: `/` answers a page saying the
 * dashboard is not built and how to build it.
 */
export async function serveStatic(req: IncomingMessage, res: ServerResponse, path: string, staticDir: string | undefined): Promise<void> {
  const relative = path === '/' ? '/index.html' : path;
  const file = staticDir === undefined ? null : await containedFile(staticDir, relative);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    // Only a dashboard file that is there "accepts GET only": a POST elsewhere is almost always
    // an API call that forgot its /v1 (a base URL of http://127.0.0.1:11435), and a 405 would
    // say the path exists.
    if (file === null && relative !== '/index.html') return sendAdminError(res, 404, 'not_found', missingApiPath(path));
    return sendAdminError(res, 405, 'method_not_allowed', `${path} accepts GET only.`, { allow: 'GET, HEAD' });
  }
  if (file === 'outside') {
    return sendAdminError(res, 403, 'forbidden', `The path ${path} leaves the dashboard's folder; only files inside it are served.`);
  }
  if (file === null) {
    if (relative === '/index.html') return sendNotBuilt(req, res, staticDir);
    return sendAdminError(res, 404, 'not_found', `Nothing is served at ${path}.`);
  }
  const isIndex = relative === '/index.html';
  res.writeHead(200, {
    ...PAGE_HEADERS,
    'content-type': contentTypeFor(file.path),
    'content-length': String(file.size),
    // index.html names the hashed bundles of this build: a cached one after an upgrade would
    // load last version's scripts. The rest are revalidated, which on loopback costs nothing.
    'cache-control': isIndex ? 'no-store' : 'no-cache',
  });
  if (req.method === 'HEAD') return void res.end();
  const stream = createReadStream(file.path);
  stream.on('error', () => res.destroy());
  stream.pipe(res);
}

/** What a request with a body for a path that is not llmtray's gets told: where the API is. */
function missingApiPath(path: string): string {
  return `Nothing is served at ${path}. The OpenAI-compatible API is under /v1 (did you mean /v1${path}?); set the client's base URL to http://HOST:PORT/v1.`;
}

/**
 * The regular file `requestPath` names inside `root`, 'outside' when it escapes the folder
 * (by `..`, a backslash, an encoded NUL or a symlink), or null when there is no such file.
 */
async function containedFile(root: string, requestPath: string): Promise<{ path: string; size: number } | 'outside' | null> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(requestPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\') || decoded.split('/').includes('..')) return 'outside';
  const base = resolve(root);
  const candidate = resolve(base, `.${decoded}`);
  if (candidate !== base && !candidate.startsWith(base + sep)) return 'outside';
  try {
    const [realBase, realFile] = await Promise.all([fsp.realpath(base), fsp.realpath(candidate)]);
    if (!realFile.startsWith(realBase + sep)) return 'outside';
    const stat = await fsp.stat(realFile);
    return stat.isFile() ? { path: realFile, size: stat.size } : null;
  } catch {
    return null;
  }
}

function sendNotBuilt(req: IncomingMessage, res: ServerResponse, staticDir: string | undefined): void {
  const where = staticDir === undefined ? 'no dashboard folder is configured' : `${escapeHtml(staticDir)} has no index.html`;
  const body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>llmtray</title></head>
<body>
<h1>llmtray is running; its dashboard is not built</h1>
<p>The dashboard's files are missing: ${where}. Build the renderer (see renderer/README.md) so that its output
lands there, then reload this page.</p>
<p>Meanwhile the daemon works: <code>llmtray status</code>, <code>llmtray pin MODEL</code>, and the admin API
under <code>/api/state</code> with the token in DATA_DIR/admin-token. Metrics are at <a href="/metrics">/metrics</a>.</p>
</body></html>
`;
  res.writeHead(200, {
    ...BASE_HEADERS,
    ...PAGE_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
