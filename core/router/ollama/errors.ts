// Errors in Ollama's shape, for clients of its API (`/api/chat`, `/api/tags`, …).
//
// Why not OpenAI's shape on these paths: Ollama's clients read `{"error": "..."}` and nothing
// else (the `ollama` npm client's checkOk takes `error` as the exception's message), so
// OpenAI's `{"error": {...}}` would reach a person as "[object Object]". The router decides each
// refusal once (a RouterError) and spells it here, keeping its status; a streamed answer that
// already said 200 ends with the same object on a line of its own, as Ollama ends one. Pure.
import { engineErrorOf } from '../engine/errors.js';
import { invalidRequest, notFound, type RouterError } from '../http/errors.js';

export interface OllamaErrorBody {
  error: string;
}

/** A refusal of the router's in Ollama's shape: the message alone, the status on the answer. */
export function ollamaErrorBody(error: Pick<RouterError, 'message'>): OllamaErrorBody {
  return { error: error.message };
}

/** The line that ends an NDJSON answer the engine broke off (no blank line: NDJSON has none). */
export function ollamaErrorLine(error: Pick<RouterError, 'message'>): string {
  return `${JSON.stringify(ollamaErrorBody(error))}\n`;
}

/** An engine's error answer (status >= 400) re-spelled for an Ollama client, its status kept. */
export function ollamaEngineError(text: string, status: number, servedBy: string, promptParam: string): string {
  return JSON.stringify(ollamaErrorBody(engineErrorOf(text, status, servedBy, promptParam)));
}

/** Ollama's 404 for a name no model answers to, in its words (`model "x" not found`), listing what there is. */
export function ollamaModelNotFound(name: string, names: readonly string[]): RouterError {
  const known = names.length === 0 ? 'llmtray has no models' : `llmtray serves: ${[...names].sort().join(', ')}`;
  return { ...notFound(`model "${name}" not found; ${known}`), code: 'model_not_found', param: 'model' };
}

/** A body field Ollama's API has and llmtray does not honour: 400 naming it and why. */
export function ollamaRefused(field: string, why: string): RouterError {
  return invalidRequest(field, `'${field}' cannot be honoured by llmtray: ${why}. llmtray refuses it rather than answer as if it were not sent.`);
}

/** A route of Ollama's API that llmtray does not serve: 501 naming it, and what to do instead. */
export function ollamaNotImplemented(path: string, instead: string): RouterError {
  return { status: 501, source: 'router', type: 'not_implemented', code: 'not_implemented', param: null, message: `${path} is not served by llmtray: ${instead}` };
}
