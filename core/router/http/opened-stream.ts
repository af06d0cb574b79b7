// A streamed request's event stream, opened by the router before any engine has answered.
//
// Why open it early: a client waiting for a cold model otherwise sees nothing until the first
// token, and the progress comments (progress-comments.ts) can only travel in a stream that has
// begun. The cost is that the status is then 200 for good: whatever goes wrong afterwards — the
// load fails and the model is quarantined, the wait runs out, the engine refuses the request or
// is unreachable — cannot be a 503 or a 502 any more. It becomes an error event in the request's
// own API (OpenAI's `data: {"error": …}`, Anthropic's `event: error`), the same shape the router
// already uses for a stream an engine breaks off, which both official SDKs raise as an APIError
// with the message and the code.
//
// Why remembered per response rather than passed along: every path that refuses a request calls
// sendError (send-error.ts), and many of them (activation, the resend, the Anthropic translation,
// upstream's collected answers) run after the stream may have been opened; sendError asks here,
// so none of them can leave such a client waiting on a stream that never ends.
import type { ServerResponse } from 'node:http';
import type { RouterError } from './errors.js';

/** How a request's API spells an error event in its stream, e.g. OpenAI's `data: {"error":…}\n\n`. */
export type ErrorEvent = (error: RouterError) => string;

const opened = new WeakMap<ServerResponse, ErrorEvent>();

/** Answers 200 with an event stream's headers now, and remembers how this request's API spells an error event. */
export function openStream(res: ServerResponse, errorEvent: ErrorEvent): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    // Proxies such as nginx buffer responses unless told not to.
    'x-accel-buffering': 'no',
  });
  res.socket?.setNoDelay(true);
  opened.set(res, errorEvent);
}

/** Whether the router opened `res`'s event stream before an engine answered. */
export function isOpenedEarly(res: ServerResponse): boolean {
  return opened.has(res);
}

/**
 * Ends an early-opened stream with `error` as an error event of its API. False when `res` was
 * not opened early (the caller answers with a status instead). Idempotent: an ended stream is
 * left alone.
 */
export function endOpenedStream(res: ServerResponse, error: RouterError): boolean {
  const errorEvent = opened.get(res);
  if (errorEvent === undefined) return false;
  if (!res.writableEnded && !res.destroyed) res.end(errorEvent(error));
  return true;
}
