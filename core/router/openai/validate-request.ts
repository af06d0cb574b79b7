// Parses and checks a request body before anything is loaded for it.
//
// Why check here instead of letting the engine answer: a malformed request for a cold model
// would otherwise load gigabytes into the GPU only to be told "bad request" — and evict
// something a person was using to make room. So the fields the router and the engines rely on
// are checked, each refusal naming the field (`param`) as OpenAI does; everything else is
// carried through untouched for the engine to judge. The checks and `parseBody` serve
// Anthropic's Messages API too (anthropic/request.ts), with that API's own field table.
import { isObject } from '../../common/is-object.js';
import { describe, invalidRequest, type RouterError } from '../http/errors.js';

export type OpenAIEndpoint = 'chat.completions' | 'completions' | 'embeddings';

export type ParsedRequest = { ok: true; body: Record<string, unknown>; model: string } | { ok: false; error: RouterError };

/** What a check found wrong: the field (`param`) and a sentence saying what it must be. */
export interface Problem {
  param: string;
  message: string;
}

export type Check = (value: unknown, field: string) => Problem | null;

export function rule(holds: (value: unknown) => boolean, expected: string): Check {
  return (value, field) => (holds(value) ? null : { param: field, message: `'${field}' must be ${expected}; got ${describe(value)}.` });
}

export const positiveInteger = rule((v) => Number.isSafeInteger(v) && (v as number) > 0, 'a positive integer');
export const finiteNumber = rule((v) => typeof v === 'number' && Number.isFinite(v), 'a number');
export const boolean = rule((v) => typeof v === 'boolean', 'a boolean (true or false)');
export const object = rule(isObject, 'an object');
const stringOrArray = rule((v) => typeof v === 'string' || (Array.isArray(v) && v.length > 0), 'a string or a non-empty array');
const chatMessages: Check = (value, field) => {
  if (!Array.isArray(value) || value.length === 0) return { param: field, message: `'${field}' must be a non-empty array of messages; got ${describe(value)}.` };
  for (let index = 0; index < value.length; index++) {
    const message: unknown = value[index];
    if (isObject(message) && typeof message['role'] === 'string') continue;
    const param = `${field}[${index}]`;
    if (!isObject(message)) return { param, message: `${param} must be an object with a 'role'; got ${describe(message)}.` };
    return { param: `${param}.role`, message: `${param}.role must be a string; got ${describe(message['role'])}.` };
  }
  return null;
};

const GENERATION: Record<string, Check> = {
  stream: boolean,
  stream_options: object,
  max_tokens: positiveInteger,
  n: positiveInteger,
  temperature: finiteNumber,
  top_p: finiteNumber,
};

/** Optional fields: absent or null passes; otherwise the check must pass. */
const OPTIONAL: Record<OpenAIEndpoint, Record<string, Check>> = {
  'chat.completions': { ...GENERATION, max_completion_tokens: positiveInteger },
  completions: GENERATION,
  embeddings: { dimensions: positiveInteger },
};

/** Required fields besides `model`, checked by the same table's rules. */
const REQUIRED: Record<OpenAIEndpoint, Record<string, Check>> = {
  'chat.completions': { messages: chatMessages },
  completions: { prompt: stringOrArray },
  embeddings: { input: stringOrArray },
};

/** Parses `raw` once and checks it for `endpoint`. Pure. */
export function parseRequest(endpoint: OpenAIEndpoint, raw: Buffer): ParsedRequest {
  return parseBody(raw, REQUIRED[endpoint], OPTIONAL[endpoint], endpoint);
}

/**
 * Parses `raw` once and checks `model`, then each `required` field (absent or null: refused,
 * as something `requiredBy` needs), then each `optional` one that is present. Pure.
 */
export function parseBody(raw: Buffer, required: Record<string, Check>, optional: Record<string, Check>, requiredBy: string): ParsedRequest {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    return fail(null, `The request body is not valid JSON (${(error as Error).message}).`);
  }
  if (!isObject(body)) return fail(null, 'The request body must be a JSON object.');
  const model = body['model'];
  if (model === undefined || model === null) return fail('model', "The request has no 'model': name one of the models listed by GET /v1/models.");
  if (typeof model !== 'string' || model.length === 0) return fail('model', `'model' must be a non-empty string; got ${describe(model)}.`);

  for (const [field, check] of entriesOf(required)) {
    const value = body[field];
    if (value === undefined || value === null) return fail(field, `The request has no '${field}', which ${requiredBy} requires.`);
    const problem = check(value, field);
    if (problem !== null) return fail(problem.param, problem.message);
  }
  for (const [field, check] of entriesOf(optional)) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    const problem = check(value, field);
    if (problem !== null) return fail(problem.param, problem.message);
  }
  return { ok: true, body, model };
}

/**
 * A table's fields as a list, made once per table: the tables are constants, and listing them
 * again for every request was work on the request path for nothing (issue 14).
 */
const tableEntries = new WeakMap<Record<string, Check>, [string, Check][]>();
function entriesOf(table: Record<string, Check>): [string, Check][] {
  let entries = tableEntries.get(table);
  if (entries === undefined) {
    entries = Object.entries(table);
    tableEntries.set(table, entries);
  }
  return entries;
}

function fail(param: string | null, message: string): ParsedRequest {
  return { ok: false, error: invalidRequest(param, message) };
}
