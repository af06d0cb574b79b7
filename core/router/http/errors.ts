// Errors the router answers with, in OpenAI's shape (or Anthropic's, for its Messages API),
// each saying who produced it.
//
// Why a header and not only a body field: an engine's own error bodies (llama-server's 400 for
// a prompt over the context, say) are re-spelled in the client's shape (engine/errors.ts) and
// look like the router's own; the header (ERROR_SOURCE_HEADER, headers.ts) marks both kinds the same way, the one thing that
// tells who refused. The
// one place without headers, an SSE stream that already answered 200, uses the type
// 'engine_error' in its error event instead.
//
// Why writing them is another file (send-error.ts): this one only decides and spells, and so
// imports no other router file but the gateway's types (model-gateway.ts, which imports none);
// every part of the router imports it, and nothing it needs can lead back here.
import type { OpenAIErrorBody, OpenAIErrorSource } from '../../contracts/protocols/openai.js';
import { formatBytes } from '../../contracts/format-bytes.js';
import { errorMessage } from '../../contracts/error-message.js';
import type { QueueFull } from '../model-gateway.js';

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
 * (anthropic/errors.ts). One RouterError, several spellings: a refusal is decided once,
 * whichever API the client speaks.
 */
export type ErrorShape = (error: RouterError) => unknown;

/**
 * An engine's 2xx answer that is not what its API promises (`what`: "answered /tokenize"): 502,
 * quoting its start, so a person sees what the engine said instead.
 */
export function engineBadAnswer(servedBy: string, what: string, text: string): RouterError {
  return {
    status: 502,
    source: 'engine',
    type: 'engine_error',
    code: 'engine_bad_answer',
    param: null,
    message: `The model server for '${servedBy}' ${what} with something that is not the answer its API promises: ${JSON.stringify(text.slice(0, 200))}.`,
  };
}

/**
 * A request that asks an embedding model to write text: 400 on `model`, before it loads. An
 * encoder has no head that writes, so what it "answered" would be noise (the embedded engine
 * would generate from it; llama-server started with --embeddings refuses completions).
 */
export function embeddingModelAsked(modelId: string, why: 'pooling' | 'config'): RouterError {
  const because = why === 'pooling' ? 'its GGUF names a pooling type' : 'its entry in config.yaml says `embeddings: true`';
  return {
    status: 400,
    source: 'router',
    type: 'invalid_request_error',
    code: 'model_only_embeds',
    param: 'model',
    message: `'${modelId}' is an embedding model (${because}): it answers /v1/embeddings only. Send chats and completions to a model that writes text.`,
  };
}

/**
 * A request for a model whose file is still being written (a download, a copy) under the name
 * it will have: 503 with Retry-After, not 404, because it is coming. Settling (the catalog's
 * settling.ts) lists it once it has stopped growing.
 */
export function modelBeingWritten(file: { modelId: string; path: string; sizeBytes: number }, retryAfterSeconds: number): RouterError {
  return {
    status: 503,
    source: 'router',
    type: 'unavailable_error',
    code: 'model_being_written',
    param: 'model',
    message: `Model '${file.modelId}' is a file still being written (${formatBytes(file.sizeBytes)} so far): ${file.path}. It is served once the file stops growing; retry in ${retryAfterSeconds} s.`,
    headers: { 'retry-after': String(retryAfterSeconds) },
  };
}

/**
 * How soon a client refused for a model's limits is told to come back, seconds. A slot comes free
 * when any request in front ends, which nothing here can foresee; a second is soon enough to find
 * one, and long enough that the SDKs' own retries (they honour Retry-After on a 429) do not spin.
 */
export const QUEUE_FULL_RETRY_AFTER_SECONDS = 1;

/**
 * A model at its limits (`parallel` and `queueLimit`): 429 at once with Retry-After, naming the
 * model, its limits and what is ahead. OpenAI's type for a request-rate 429 (`requests`), and
 * Anthropic's `rate_limit_error` from the status (anthropic/errors.ts): each SDK raises its
 * RateLimitError. `param` null: no field of the request is at fault.
 */
export function queueFull(full: QueueFull): RouterError {
  const { modelId, parallel, queueLimit, served, waiting } = full;
  const requests = (n: number): string => (n === 1 ? '1 request' : `${n} requests`);
  const limits =
    parallel === undefined
      ? `Model '${modelId}' lets ${requests(queueLimit)} wait (queueLimit) beside the one it serves next; ${waiting} ${waiting === 1 ? 'is' : 'are'} waiting ahead of this one (for its load, room or turn)`
      : `Model '${modelId}' serves ${requests(parallel)} at once (parallel) and ${queueLimit} more may wait (queueLimit); ${served + waiting} ${served + waiting === 1 ? 'is' : 'are'} ahead of this one (${served} being served, ${waiting} waiting)`;
  return {
    status: 429,
    source: 'router',
    type: 'requests',
    code: 'model_queue_full',
    param: null,
    message: `${limits}. Retry in ${QUEUE_FULL_RETRY_AFTER_SECONDS} s.`,
    headers: { 'retry-after': String(QUEUE_FULL_RETRY_AFTER_SECONDS) },
  };
}

/** A value as a refusal quotes it: its kind, and short strings and numbers themselves. */
export function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${String(value)}`;
}

/** A client mistake in the request itself: 400, naming the field. */
export function invalidRequest(param: string | null, message: string): RouterError {
  return { status: 400, source: 'router', type: 'invalid_request_error', code: null, param, message };
}

/** A name no model answers to: 404 on `model`, listing the models there are. */
export function unknownModel(name: string, modelIds: readonly string[]): RouterError {
  const known = modelIds.length === 0 ? 'no models are configured' : `the models are: ${[...modelIds].sort().join(', ')}`;
  return { ...notFound(`Model '${name}' does not exist; ${known}.`), code: 'model_not_found', param: 'model' };
}

/** A path nothing is served at. */
export function notFound(message: string): RouterError {
  return { status: 404, source: 'router', type: 'not_found_error', code: 'not_found', param: null, message };
}

/** A served path asked with the other method: 405 with Allow. */
export function wrongMethod(path: string, allowed: 'GET' | 'POST'): RouterError {
  return {
    status: 405,
    source: 'router',
    type: 'invalid_request_error',
    code: 'method_not_allowed',
    param: null,
    message: `${path} accepts ${allowed} only.`,
    headers: { allow: allowed },
  };
}

/** A body over bodyLimitBytes: 413, saying both sizes. */
export function tooLarge(receivedBytes: number, limitBytes: number): RouterError {
  return {
    status: 413,
    source: 'router',
    type: 'invalid_request_error',
    code: 'request_too_large',
    param: null,
    message: `The request body is at least ${formatBytes(receivedBytes)} (${receivedBytes} bytes); this endpoint accepts at most ${formatBytes(limitBytes)} (${limitBytes} bytes, the bodyLimitBytes setting).`,
  };
}

/** The router's own failure on a request: 500, never a crash of the listener. */
export function internal(error: unknown): RouterError {
  return {
    status: 500,
    source: 'router',
    type: 'server_error',
    code: 'internal_error',
    param: null,
    message: `llmtray's router failed on this request: ${errorMessage(error)}`,
  };
}
