// The few ways the admin transport answers, so every route sets the same safety headers.
import type { ServerResponse } from 'node:http';
import type { AdminErrorBody } from '../contracts/commands.js';

/**
 * Headers on every admin answer. nosniff: a JSON body is never run as script or rendered as
 * HTML, whatever a browser guesses. no-store: the snapshot holds the engines' per-launch keys
 * and must not sit in a disk cache.
 */
export const BASE_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-store',
};

/** Writes `value` as JSON with `status`; does nothing once a response is under way. */
export function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(value);
  res.writeHead(status, {
    ...BASE_HEADERS,
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
  });
  res.end(body);
}

/** An admin refusal: `{ error: { code, message } }`. */
export function sendAdminError(
  res: ServerResponse,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  sendJson(res, status, { error: { code, message } } satisfies AdminErrorBody, headers);
}
