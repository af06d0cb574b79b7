// Errors the router answers with, in OpenAI's shape (or Anthropic's, for its Messages API),
// each saying who produced it.
//
// Why a header and not only a body field: an engine's own error bodies (llama-server's 400 for
// a prompt over the context, say) are re-spelled in the client's shape (engine-errors.ts) and
// look like the router's own; the header marks both kinds the same way, the one thing that
// tells who refused. The
// one place without headers, an SSE stream that already answered 200, uses the type
// 'engine_error' in its error event instead.
//
// Why writing them is another file (send-error.ts): this one only decides and spells, and so
// imports no other router file; every part of the router imports it, and nothing it needs can
// lead back here.
import type { OpenAIErrorBody, OpenAIErrorSource } from '../contracts/openai.js';
import { formatBytes } from '../contracts/format-bytes.js';

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

/** A client mistake in the request itself: 400, naming the field. */
export function invalidRequest(param: string | null, message: string): RouterError {
  return { status: 400, source: 'router', type: 'invalid_request_error', code: null, param, message };
}
