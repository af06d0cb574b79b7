// Writes a RouterError (errors.ts) as the answer to a request: the one way every refusal leaves
// the router.
//
// Why apart from errors.ts: writing must know whether the router already opened the request's
// event stream (opened-stream.ts), and that file spells its stream's errors with errors.ts; kept
// together they were an import circle (issue 37).
import type { ServerResponse } from 'node:http';
import { errorBody, type ErrorShape, type RouterError } from './errors.js';
import { ERROR_SOURCE_HEADER } from './headers.js';
import { endOpenedStream, isOpenedEarly } from './opened-stream.js';
import { traceOf } from './request-trace.js';

/**
 * Writes the error in `shape` unless a response is already under way (then there is no one to
 * tell) — but an event stream the router opened before the engine answered ends with the error
 * as an event instead (opened-stream.ts).
 */
export function sendError(res: ServerResponse, error: RouterError, shape: ErrorShape = errorBody): void {
  if (!res.writableEnded && !res.destroyed && (!res.headersSent || isOpenedEarly(res))) traceOf(res)?.failed(error);
  if (endOpenedStream(res, error)) return;
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(shape(error));
  res.writeHead(error.status, {
    ...error.headers,
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    [ERROR_SOURCE_HEADER]: error.source,
  });
  res.end(body);
}
