// The checks every request on llmtray's listeners passes before anything else runs.
//
// Why each exists:
// - Host: a web page on any site can make a browser send requests to 127.0.0.1 through a DNS
//   name that it re-points at loopback (DNS rebinding); the browser then treats our answers as
//   that site's. The Host header still carries the attacker's name, so only loopback names,
//   the address the request arrived on (an address cannot be re-pointed: the page would be
//   that address's own origin) and the names in listen.allowedHosts are served.
// - Origin: a page can also POST to 127.0.0.1 directly with a "simple" request (text/plain,
//   no preflight). It cannot read the answer, but it can load models and burn the GPU. Browsers
//   always send Origin on such requests and non-browser clients do not, so a foreign Origin is
//   refused unless the person listed it in listen.corsOrigins.
// - Client keys (client-keys.ts): /v1 only, when configured; required on a network listener.
// - The admin API, /metrics and the dashboard answer connections that arrived on loopback
//   only, unless listen.admin says network (router.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RouterError } from './errors.js';
import { ERROR_SOURCE_HEADER, SERVED_BY_HEADER } from './headers.js';

export interface GuardOptions {
  /** Host names accepted besides loopback ones and the request's own address (a deliberate LAN listener). */
  allowedHosts: readonly string[];
  /** Origins allowed to call cross-origin, with CORS headers; '*' allows any. Empty: none. */
  corsOrigins: readonly string[];
}

const IPV4_LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * Whether a Host header names this machine's loopback (`localhost`, `127.0.0.0/8` or `[::1]`),
 * the address the request arrived on (`localAddress`, as its socket reports it), or one of
 * `allowedHosts`; with or without a port. Pure.
 */
export function isServedHost(host: string | undefined, allowedHosts: readonly string[] = [], localAddress?: string): boolean {
  if (host === undefined) return false;
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(host.trim().toLowerCase());
  if (match === null) return false;
  const name = match[1] ?? '';
  if (name === 'localhost' || name === '[::1]') return true;
  const v4 = IPV4_LOOPBACK.exec(name);
  if (v4 !== null) return v4.slice(1).every((octet) => Number(octet) <= 255);
  if (localAddress !== undefined && name === addressAsHost(localAddress)) return true;
  return allowedHosts.some((allowed) => allowed.toLowerCase() === name);
}

/** How a socket's local address is written in a Host header: IPv6 in brackets, IPv4-mapped as IPv4. */
function addressAsHost(address: string): string {
  const lower = address.toLowerCase();
  if (lower.startsWith('::ffff:') && lower.includes('.')) return lower.slice('::ffff:'.length);
  return lower.includes(':') ? `[${lower}]` : lower;
}

/** Returns the refusal for a request the listener must not serve, or null. Applies to every path. */
export function refuseHostOrOrigin(req: IncomingMessage, options: GuardOptions): RouterError | null {
  const host = req.headers.host;
  if (!isServedHost(host, options.allowedHosts, req.socket.localAddress)) {
    return forbidden(
      `Host '${host ?? ''}' is not a name this llmtray serves. It answers requests addressed to localhost, 127.0.0.1, [::1] or the address they arrive on; to serve another name on purpose, add it to listen.allowedHosts in llmtray's config.yaml.`,
    );
  }
  const origin = req.headers.origin;
  if (origin === undefined || isSameOrigin(origin, host) || corsAllows(options.corsOrigins, origin)) return null;
  return forbidden(
    `Origin '${origin}' may not call this endpoint: a web page needs its origin listed in listen.corsOrigins (llmtray's config.yaml) to use llmtray.`,
  );
}

/** Adds the CORS response headers for an allowed cross-origin caller; does nothing otherwise. */
export function applyCors(req: IncomingMessage, res: ServerResponse, corsOrigins: readonly string[]): void {
  const origin = req.headers.origin;
  if (origin === undefined || !corsAllows(corsOrigins, origin)) return;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('vary', 'Origin');
  res.setHeader('access-control-expose-headers', `${SERVED_BY_HEADER}, ${ERROR_SOURCE_HEADER}, retry-after`);
}

/** Answers a CORS preflight (OPTIONS) for an allowed origin. Returns false when it is not one. */
export function answerPreflight(req: IncomingMessage, res: ServerResponse, corsOrigins: readonly string[]): boolean {
  const origin = req.headers.origin;
  if (req.method !== 'OPTIONS' || origin === undefined || !corsAllows(corsOrigins, origin)) return false;
  applyCors(req, res, corsOrigins);
  res.writeHead(204, {
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-allow-headers': req.headers['access-control-request-headers'] ?? 'authorization, x-api-key, anthropic-version, content-type',
    'access-control-max-age': '600',
  });
  res.end();
  return true;
}

function corsAllows(corsOrigins: readonly string[], origin: string): boolean {
  return corsOrigins.includes('*') || corsOrigins.includes(origin);
}

function isSameOrigin(origin: string, host: string | undefined): boolean {
  try {
    // Both through URL, so 'localhost:80' and 'http://localhost' compare equal.
    return new URL(origin).host === new URL(`http://${host ?? ''}`).host;
  } catch {
    return false;
  }
}

export function forbidden(message: string): RouterError {
  return { status: 403, source: 'router', type: 'permission_error', code: 'forbidden', param: null, message };
}
