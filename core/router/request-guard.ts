// The checks every request on the loopback listener passes before anything else runs.
//
// Why each exists:
// - Host: a web page on any site can make a browser send requests to 127.0.0.1 through a DNS
//   name that it re-points at loopback (DNS rebinding); the browser then treats our answers as
//   that site's. The Host header still carries the attacker's name, so only loopback names
//   and addresses are served.
// - Origin: a page can also POST to 127.0.0.1 directly with a "simple" request (text/plain,
//   no preflight). It cannot read the answer, but it can load models and burn the GPU. Browsers
//   always send Origin on such requests and non-browser clients do not, so a foreign Origin is
//   refused unless the person configured it for CORS.
// - API key: optional, for people who share the machine. OpenAI's clients send it as
//   `Authorization: Bearer`, Anthropic's as `x-api-key` (and as Bearer when given an auth
//   token); either header carrying the key lets the request in.
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ERROR_SOURCE_HEADER, type RouterError } from './errors.js';
import { SERVED_BY_HEADER } from './upstream.js';

export interface GuardOptions {
  /** Host names accepted besides loopback ones (when the person deliberately listens on a LAN address). */
  allowedHosts: readonly string[];
  /** Origins allowed to call cross-origin, with CORS headers; '*' allows any. Empty: none. */
  corsOrigins: readonly string[];
  /** When set, `/v1` requests must carry `Authorization: Bearer <apiKey>` or `x-api-key: <apiKey>`. */
  apiKey: string | undefined;
}

const IPV4_LOOPBACK = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

/**
 * Whether a Host header names this machine's loopback: `localhost`, `127.0.0.0/8` or `[::1]`,
 * with or without a port, or one of `allowedHosts`. Pure.
 */
export function isLoopbackHost(host: string | undefined, allowedHosts: readonly string[] = []): boolean {
  if (host === undefined) return false;
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(host.trim().toLowerCase());
  if (match === null) return false;
  const name = match[1] ?? '';
  if (name === 'localhost' || name === '[::1]') return true;
  const v4 = IPV4_LOOPBACK.exec(name);
  if (v4 !== null) return v4.slice(1).every((octet) => Number(octet) <= 255);
  return allowedHosts.some((allowed) => allowed.toLowerCase() === name);
}

/** Returns the refusal for a request the listener must not serve, or null. Applies to every path. */
export function refuseHostOrOrigin(req: IncomingMessage, options: GuardOptions): RouterError | null {
  const host = req.headers.host;
  if (!isLoopbackHost(host, options.allowedHosts)) {
    return forbidden(
      `Host '${host ?? ''}' is not a loopback name: llmtray answers only requests addressed to localhost, 127.0.0.1 or [::1] (add the name to allowedHosts to serve it deliberately).`,
    );
  }
  const origin = req.headers.origin;
  if (origin === undefined || isSameOrigin(origin, host) || corsAllows(options.corsOrigins, origin)) return null;
  return forbidden(
    `Origin '${origin}' may not call this endpoint: a web page needs its origin listed in corsOrigins to use llmtray.`,
  );
}

/** The 401 for a `/v1` request without the configured key, or null when it may pass. */
export function refuseApiKey(req: IncomingMessage, apiKey: string | undefined): RouterError | null {
  if (apiKey === undefined) return null;
  const header = req.headers.authorization;
  const bearer = header?.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : undefined;
  const xApiKey = req.headers['x-api-key'];
  const presented = [bearer, typeof xApiKey === 'string' ? xApiKey.trim() : undefined].filter((key) => key !== undefined);
  // Both compared, always: which header matched must not show in the time taken.
  const matches = presented.map((key) => constantTimeEquals(key, apiKey));
  if (matches.includes(true)) return null;
  const sentIn = [bearer === undefined ? null : '`Authorization: Bearer`', typeof xApiKey === 'string' ? '`x-api-key`' : null].filter((name) => name !== null);
  return {
    status: 401,
    source: 'router',
    type: 'authentication_error',
    code: 'invalid_api_key',
    param: null,
    message:
      sentIn.length === 0
        ? 'This llmtray endpoint requires an API key: send it as `Authorization: Bearer <key>` or `x-api-key: <key>`.'
        : `The API key sent in ${sentIn.join(' and in ')} is not the one this llmtray endpoint is configured with.`,
  };
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

function constantTimeEquals(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function forbidden(message: string): RouterError {
  return { status: 403, source: 'router', type: 'permission_error', code: 'forbidden', param: null, message };
}
