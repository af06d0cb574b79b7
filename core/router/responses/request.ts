// Checks a Responses API request (`POST /v1/responses`) before anything is loaded for it, for the
// same reason as openai/validate-request.ts: a malformed request must not cost a load and an eviction.
// Since every engine gets the request translated (translate.ts), the translation runs
// here too: an input item or tool the chat API cannot say is refused before the load, and the
// claim only adds the model's name. A field outside the field table is refused by name, because
// the translation would leave it out: that is the silence the table exists to prevent. Pure.
import type { ResponsesRequest } from '../../contracts/protocols/openai-responses.js';
import { describe, invalidRequest, type RouterError } from '../http/errors.js';
import { REQUEST_FIELDS, refusedField } from '../openai/request-fields.js';
import { toChatRequest, type ChatRequestBody } from './translate.js';
import { boolean, finiteNumber, object, parseBody, positiveInteger, rule, type Check } from '../openai/validate-request.js';

export type ParsedResponses = { ok: true; body: ResponsesRequest; model: string; chat: ChatRequestBody } | { ok: false; error: RouterError };

const input: Check = (value, field) =>
  typeof value === 'string' || (Array.isArray(value) && value.length > 0)
    ? null
    : { param: field, message: `'${field}' must be a string or a non-empty array of input items; got ${describe(value)}.` };

const OPTIONAL: Record<string, Check> = {
  instructions: rule((v) => typeof v === 'string', 'a string'),
  max_output_tokens: positiveInteger,
  temperature: finiteNumber,
  top_p: finiteNumber,
  stream: boolean,
  tools: rule(Array.isArray, 'an array of tools'),
  tool_choice: rule((v) => typeof v === 'string' || (typeof v === 'object' && !Array.isArray(v)), 'a string or an object'),
  parallel_tool_calls: boolean,
  text: object,
  metadata: object,
  store: boolean,
  include: rule(Array.isArray, 'an array of the output data to include'),
  // OpenAI's bound, and the chat API's, which it becomes.
  top_logprobs: rule((v) => Number.isInteger(v) && (v as number) >= 0 && (v as number) <= 20, 'an integer from 0 to 20'),
};

/** `POST /v1/responses`, checked and translated to the chat request (less its model). */
export function parseResponsesRequest(raw: Buffer): ParsedResponses {
  const parsed = parseBody(raw, { input }, OPTIONAL, 'the Responses API (POST /v1/responses)');
  if (!parsed.ok) return parsed;
  const table = REQUEST_FIELDS.responses;
  const unknown = Object.keys(parsed.body).find((field) => table[field] === undefined && parsed.body[field] !== undefined && parsed.body[field] !== null);
  if (unknown !== undefined) {
    return {
      ok: false,
      error: invalidRequest(unknown, `'${unknown}' is not a field of the Responses API that llmtray translates into its engines' chat completions; llmtray refuses it rather than answer as if it were not sent.`),
    };
  }
  const body = parsed.body as ResponsesRequest;
  // What no engine can honour is refused before anything loads; what only some cannot, once the engine is known.
  const refusal = refusedField('responses', body, null);
  if (refusal !== null) return { ok: false, error: refusal };
  const chat = toChatRequest(body);
  if (!chat.ok) return chat;
  return { ok: true, body, model: parsed.model, chat: chat.value };
}
