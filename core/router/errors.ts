// Errors the router answers with, in OpenAI's shape (or Anthropic's, for its Messages API),
// each saying who produced it.
//
// Why a header and not only a body field: an engine's own error bodies (llama-server's 400 for
// a prompt over the context, say) are passed through byte for byte, so the router cannot add
// to them without parsing and re-serialising; the header marks both kinds the same way. The
// one place without headers, an SSE stream that already answered 200, uses the type
// 'engine_error' in its error event instead.
import type { ServerResponse } from 'node:http';
import type { OpenAIErrorBody, OpenAIErrorSource } from '../contracts/openai.js';

export const ERROR_SOURCE_HEADER = 'x-llmtray-error-source';

/** A refusal the router decided, ready to be written. */
export interface RouterError {
  status: number;
  source: OpenAIErrorSource;
  type: string;
  code: string | null;
  param: string | null;
  message: string;
  /** Extra response headers (Retry-After, Allow, x-should-retry). */
  headers?: Record<string, string>;
}

export function errorBody(error: Pick<RouterError, 'message' | 'type' | 'param' | 'code'>): OpenAIErrorBody {
  return { error: { message: error.message, type: error.type, param: error.param, code: error.code } };
}

/**
 * How an API spells an error body: OpenAI's (`errorBody`, the default) or Anthropic's
 * (anthropic-errors.ts). One RouterError, several spellings: a refusal is decided once,
 * whichever API the client speaks.
 */
export type ErrorShape = (error: RouterError) => unknown;

/** Writes the error in `shape` unless a response is already under way (then there is no one to tell). */
export function sendError(res: ServerResponse, error: RouterError, shape: ErrorShape = errorBody): void {
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

/** A client mistake in the request itself: 400, naming the field. */
export function invalidRequest(param: string | null, message: string): RouterError {
  return { status: 400, source: 'router', type: 'invalid_request_error', code: null, param, message };
}
