// An engine's error answer in the client's shape: OpenAI's `{error:{message,type,param,code}}`
// (a string or null code) on OpenAI's endpoints, Anthropic's on /v1/messages (anthropic/errors.ts
// spells the same RouterError).
//
// Why re-spell instead of passing the body through: llama-server and the embedded engine answer
// `{error:{code:400, message, type:"exceed_context_size_error", n_prompt_tokens, n_ctx}}`: a
// numeric code, no param, and types of their own. The SDKs read `code` as a string (the openai
// SDK's `error.code`, LangChain's context-overflow check looks for "context_length_exceeded")
// and `type` as OpenAI's categories. So the engine's type is mapped to OpenAI's category and to
// OpenAI's code where it has one, kept as the code otherwise; the counts llama.cpp adds go into
// the message, where a person reads them. Pure.
import { engineBadAnswer, type RouterError } from '../http/errors.js';
import { isObject } from '../../common/is-object.js';

/** OpenAI's error categories, which an engine's type is kept as when it already is one. */
const OPENAI_TYPES = new Set(['invalid_request_error', 'authentication_error', 'permission_error', 'not_found_error', 'rate_limit_error', 'server_error']);

/** llama.cpp's own error types: OpenAI's category for it, and the code OpenAI gives that case. */
const ENGINE_TYPES: Record<string, { type: string; code: string }> = {
  exceed_context_size_error: { type: 'invalid_request_error', code: 'context_length_exceeded' },
  not_supported_error: { type: 'invalid_request_error', code: 'not_supported' },
  unavailable_error: { type: 'server_error', code: 'engine_unavailable' },
};

/**
 * llama-server's words when the grammar it built for a response_format or tools cannot start
 * (common_sampler_init): "Failed to initialize samplers: std::exception". It begins that grammar
 * with the chat template's generation prompt and feeds it that prompt's tokens, so the grammar
 * fails on a model whose tokenizer does not give the prompt back as the template wrote it (a
 * SentencePiece vocabulary that adds a space after special tokens; llama.cpp issues 22396 and
 * 23990 show it on Gemma 4 and Qwen 3.5) as well as on a schema its grammar cannot hold. Its own
 * message names neither the field nor the cause, so the router says both.
 */
const GRAMMAR_NOT_STARTED = /^Failed to initialize samplers\b/;

/**
 * The engine's error answer (`status` >= 400, body `text`) as a RouterError from the engine.
 * `promptParam` names the request field a prompt-size error is about ('messages', 'prompt',
 * 'input'), or null where none; `grammarParam` the field whose grammar the engine could not
 * start (grammarFieldOf), or null where the request asked for none.
 */
export function engineErrorOf(text: string, status: number, servedBy: string, promptParam: string | null, grammarParam: string | null = null): RouterError {
  const inner = errorObjectOf(text);
  const engineMessage = typeof inner?.['message'] === 'string' ? inner['message'] : null;
  if (grammarParam !== null && engineMessage !== null && GRAMMAR_NOT_STARTED.test(engineMessage)) {
    return {
      status, source: 'engine', type: 'invalid_request_error', code: 'grammar_not_started', param: grammarParam,
      message:
        `The model server for '${servedBy}' could not start the grammar that enforces '${grammarParam}' ("${engineMessage}"), so it answered nothing. ` +
        "llama.cpp starts that grammar at the chat template's generation prompt as the model's tokenizer reads it back, and fails where the two differ (a tokenizer that adds a space after special tokens) or where the schema is more than its grammar holds.",
    };
  }
  const engineType = typeof inner?.['type'] === 'string' ? inner['type'] : null;
  const known = engineType === null ? undefined : ENGINE_TYPES[engineType];
  const type = known?.type ?? (engineType !== null && OPENAI_TYPES.has(engineType) ? engineType : status >= 500 ? 'server_error' : 'invalid_request_error');
  const ownCode = typeof inner?.['code'] === 'string' && inner['code'] !== '' ? inner['code'] : null;
  const code = known?.code ?? ownCode ?? (engineType !== null && !OPENAI_TYPES.has(engineType) ? engineType : null);
  const param = typeof inner?.['param'] === 'string' ? inner['param'] : code === 'context_length_exceeded' ? promptParam : null;
  let message = typeof inner?.['message'] === 'string' ? inner['message'] : `The model server for '${servedBy}' answered ${status}: ${quote(text)}.`;
  const prompt = inner?.['n_prompt_tokens'];
  const context = inner?.['n_ctx'];
  if (typeof prompt === 'number' && typeof context === 'number' && !message.includes(String(prompt))) {
    message += ` (${prompt} prompt tokens; the context of '${servedBy}' holds ${context})`;
  }
  return { status, source: 'engine', type, code, param, message };
}

/**
 * The request field an engine builds a grammar for, as the client named it: `response_format`
 * (json_object, json_schema), then `tools` (unless tool_choice is "none"), then llama.cpp's own
 * `json_schema` and `grammar`; null when there is none. Pure.
 */
export function grammarFieldOf(body: Readonly<Record<string, unknown>>): string | null {
  const format = body['response_format'];
  if (isObject(format) && (format['type'] === 'json_object' || format['type'] === 'json_schema')) return 'response_format';
  const tools = body['tools'];
  if (Array.isArray(tools) && tools.length > 0 && body['tool_choice'] !== 'none') return 'tools';
  for (const own of ['json_schema', 'grammar']) if (body[own] !== undefined && body[own] !== null) return own;
  return null;
}

/** The `error` object of OpenAI's `{"error":{…}}` or Anthropic's `{"type":"error","error":{…}}`. */
export function errorObjectOf(text: string): Record<string, unknown> | null {
  try {
    const body: unknown = JSON.parse(text);
    return isObject(body) && isObject(body['error']) ? body['error'] : null;
  } catch {
    return null;
  }
}

function quote(text: string): string {
  const trimmed = text.trim();
  return trimmed === '' ? '(an empty body)' : JSON.stringify(trimmed.length > 200 ? `${trimmed.slice(0, 200)}…` : trimmed);
}

/**
 * An engine's answer that cannot go into an early-opened stream as it is — an error status, or
 * JSON though the request asked for a stream — as the error the stream ends with: the engine's
 * own message and type where its body is OpenAI's or Anthropic's error shape.
 */
export function engineAnswerError(text: string, status: number, servedBy: string): RouterError {
  if (status < 400) return engineBadAnswer(servedBy, 'answered a streamed request', text);
  return engineErrorOf(text, status, servedBy, null);
}
