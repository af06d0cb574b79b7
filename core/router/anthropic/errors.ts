// Errors in Anthropic's shape, for clients of `/v1/messages`.
//
// Why translate instead of answering OpenAI's shape on every path: Anthropic's SDKs read
// `error.type` and `error.message` from `{"type":"error","error":{…}}` and show nothing useful
// for OpenAI's `{"error":{…}}`, so a person would see "400 {…}" instead of the reason. The
// router decides each refusal once (a RouterError) and spells it per API; the engine's own
// errors, which a llama-server answers in OpenAI's shape even on its /v1/messages, are
// re-spelled here too, keeping their message and status. Pure.
import type { AnthropicErrorBody, AnthropicErrorType } from '../../contracts/protocols/anthropic.js';
import { isObject } from '../../common/is-object.js';
import { engineErrorOf } from '../engine/errors.js';
import type { RouterError } from '../http/errors.js';

/** The type Anthropic's API gives an error of this HTTP status; its SDKs pick the exception class from the status. */
export function anthropicErrorType(status: number): AnthropicErrorType {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    // The API's "temporarily unable to serve" (529 there): a model loading, quarantined or kept out.
    case 503:
    case 529:
      return 'overloaded_error';
    case 504:
      return 'timeout_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** A refusal of the router's in Anthropic's shape; llmtray's code goes in `details.error_code`. */
export function anthropicErrorBody(error: Pick<RouterError, 'status' | 'message' | 'code'>): AnthropicErrorBody {
  return {
    type: 'error',
    error: {
      type: anthropicErrorType(error.status),
      message: error.message,
      ...(error.code === null ? {} : { details: { error_code: error.code } }),
    },
    request_id: null,
  };
}

/**
 * An engine's error answer (status >= 400) re-spelled for an Anthropic client: an answer already
 * in Anthropic's shape is kept as it is; any other is read as engine/errors.ts reads it (the
 * message, OpenAI's code for the cause, such as 'context_length_exceeded') and spelled here.
 */
export function anthropicEngineError(text: string, status: number, servedBy: string): string {
  const parsed = parseObject(text);
  if (parsed?.['type'] === 'error' && isObject(parsed['error'])) return text;
  return JSON.stringify(anthropicErrorBody(engineErrorOf(text, status, servedBy, 'messages')));
}

/** An SSE `error` event: how Anthropic's API ends a stream that already answered 200, and what its SDKs raise. */
export function anthropicErrorEvent(body: AnthropicErrorBody): string {
  return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}
