// Checks a Messages API request (`POST /v1/messages`, `/v1/messages/count_tokens`) before
// anything is loaded for it, for the same reason as openai/validate-request.ts: a malformed request
// must not cost a load and an eviction. What is checked is the structure both paths rely on —
// the router's translator and a llama-server that serves the API itself — with Anthropic's
// rules (`max_tokens` is required; roles are only user and assistant; the system prompt is its
// own field). Whether a block can be translated is not decided here: an engine that serves the
// API takes images and tools as they are, so that refusal comes only when translating. Pure.
import type { AnthropicCountTokensRequest, AnthropicMessagesRequest } from '../../contracts/protocols/anthropic.js';
import { describe, type RouterError } from '../http/errors.js';
import { isObject } from '../../common/is-object.js';
import { boolean, finiteNumber, object, parseBody, positiveInteger, rule, type Check, type Problem } from '../openai/validate-request.js';

export type ParsedMessages<Body> = { ok: true; body: Body; model: string } | { ok: false; error: RouterError };

const nonNegativeInteger = rule((v) => Number.isSafeInteger(v) && (v as number) >= 0, 'a non-negative integer');
const stringList = rule((v) => Array.isArray(v) && v.every((s) => typeof s === 'string'), 'an array of strings');

/** Content: a string, or an array of blocks each with a string `type` (text blocks with a string `text`). */
function checkContent(value: unknown, field: string): Problem | null {
  if (typeof value === 'string') return null;
  if (!Array.isArray(value)) return { param: field, message: `${field} must be a string or an array of content blocks; got ${describe(value)}.` };
  for (const [index, block] of value.entries()) {
    const param = `${field}[${index}]`;
    if (!isObject(block) || typeof block['type'] !== 'string') {
      return { param, message: `${param} must be a content block, an object with a 'type' such as "text"; got ${describe(block)}.` };
    }
    if (block['type'] === 'text' && typeof block['text'] !== 'string') {
      return { param: `${param}.text`, message: `${param} is a text block, so its 'text' must be a string; got ${describe(block['text'])}.` };
    }
  }
  return null;
}

const messages: Check = (value, field) => {
  if (!Array.isArray(value) || value.length === 0) return { param: field, message: `'${field}' must be a non-empty array of messages; got ${describe(value)}.` };
  for (const [index, message] of value.entries()) {
    const param = `${field}[${index}]`;
    if (!isObject(message)) return { param, message: `${param} must be an object with a 'role' and 'content'; got ${describe(message)}.` };
    const role = message['role'];
    if (role !== 'user' && role !== 'assistant') {
      return {
        param: `${param}.role`,
        message: `${param}.role must be "user" or "assistant" (a system prompt goes in the top-level 'system'); got ${describe(role)}.`,
      };
    }
    if (message['content'] === undefined || message['content'] === null) return { param: `${param}.content`, message: `${param} has no 'content'.` };
    const problem = checkContent(message['content'], `${param}.content`);
    if (problem !== null) return problem;
  }
  return null;
};

const system: Check = (value, field) => {
  if (typeof value === 'string') return null;
  if (Array.isArray(value) && value.every((block) => isObject(block) && block['type'] === 'text' && typeof block['text'] === 'string')) return null;
  return { param: field, message: `'${field}' must be a string or an array of text blocks ({"type":"text","text":…}); got ${describe(value)}.` };
};

const toolList = rule(Array.isArray, 'an array of tools');
/** The tools are part of the prompt (the template writes them in), so a token count takes them too. */
const PROMPT_FIELDS: Record<string, Check> = { system, tools: toolList, tool_choice: object };
const MESSAGES_REQUIRED: Record<string, Check> = { messages, max_tokens: positiveInteger };
const COUNT_TOKENS_REQUIRED: Record<string, Check> = { messages };

const MESSAGES_OPTIONAL: Record<string, Check> = {
  ...PROMPT_FIELDS,
  stop_sequences: stringList,
  temperature: finiteNumber,
  top_p: finiteNumber,
  top_k: nonNegativeInteger,
  stream: boolean,
  metadata: object,
};

/** `POST /v1/messages`: `max_tokens` is required, as Anthropic's API requires it. Pure. */
export function parseMessagesRequest(raw: Buffer): ParsedMessages<AnthropicMessagesRequest> {
  const parsed = parseBody(raw, MESSAGES_REQUIRED, MESSAGES_OPTIONAL, 'the Messages API (POST /v1/messages)');
  return parsed.ok ? { ok: true, body: parsed.body as AnthropicMessagesRequest, model: parsed.model } : parsed;
}

/** `POST /v1/messages/count_tokens`: the prompt only (a `max_tokens` sent along is ignored). Pure. */
export function parseCountTokensRequest(raw: Buffer): ParsedMessages<AnthropicCountTokensRequest> {
  const parsed = parseBody(raw, COUNT_TOKENS_REQUIRED, PROMPT_FIELDS, 'POST /v1/messages/count_tokens');
  return parsed.ok ? { ok: true, body: parsed.body as AnthropicCountTokensRequest, model: parsed.model } : parsed;
}
