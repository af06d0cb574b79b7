// A request as one engine needs it to mean what the client asked, where the engine reads a
// field otherwise than OpenAI defines it.
//
// llama-server (b1-80fb11a, the build node-llama-cpp 3.21.1 ships) misreads two fields:
// - `response_format: {type: "json_object"}` without a schema is taken as an empty schema and
//   ignored: the answer is free text, where OpenAI promises a JSON object. Seen: "^6-!j-!j7R…"
//   for a json_object request. With the schema OpenAI's json_object means, {type: "object"},
//   the build enforces it by grammar (or refuses it with a 400, which the client sees).
// - `tool_choice` is read as a string only (server-common.cpp: `json_value(body, "tool_choice",
//   std::string("auto"))`): a named function, `{type: "function", function: {name}}`, is "Wrong
//   type supplied" in its log and "auto" in effect, so the model may answer in text or call
//   another tool. "Call this function" is said the way the build reads it: `required`, with
//   that function the only tool. Any other object (OpenAI's `allowed_tools`, `custom`) is
//   refused by name, and a name that is not among the tools is refused as OpenAI refuses it.
// Never a silent drop.
import type { EngineKind } from '../../contracts/snapshot.js';
import { describe, invalidRequest, type RouterError } from '../http/errors.js';
import { isObject } from '../../common/is-object.js';

const JSON_OBJECT_SCHEMA = { type: 'object' } as const;

/** The body the engine is sent in place of `body` (`value` null: as it came), or why it cannot be. Pure. */
export type EngineBody = { ok: true; value: Record<string, unknown> | null } | { ok: false; error: RouterError };

/** `body` in `engine`'s words; never changes `body` itself, which a retry on another engine reads again. Pure. */
export function forEngine(body: Readonly<Record<string, unknown>>, engine: EngineKind, servedBy: string): EngineBody {
  if (engine !== 'llama-server') return { ok: true, value: null };
  const tools = namedToolAsRequired(body, servedBy);
  if (!tools.ok) return tools;
  const withTools = tools.value ?? body;
  const format = jsonObjectWithSchema(withTools);
  return { ok: true, value: format ?? tools.value };
}

function jsonObjectWithSchema(body: Readonly<Record<string, unknown>>): Record<string, unknown> | null {
  const format = body['response_format'];
  if (!isObject(format) || format['type'] !== 'json_object' || format['schema'] !== undefined) return null;
  return { ...body, response_format: { ...format, schema: JSON_OBJECT_SCHEMA } };
}

function namedToolAsRequired(body: Readonly<Record<string, unknown>>, servedBy: string): EngineBody {
  const choice = body['tool_choice'];
  if (!isObject(choice)) return { ok: true, value: null };
  if (choice['type'] !== 'function') {
    return {
      ok: false,
      error: invalidRequest(
        'tool_choice.type',
        `'tool_choice' of type ${describe(choice['type'])} cannot be honoured on the model server for '${servedBy}': its llama-server build takes "auto", "none", "required" or a named function only.`,
      ),
    };
  }
  const fn = choice['function'];
  const name = isObject(fn) ? fn['name'] : undefined;
  if (typeof name !== 'string' || name === '') {
    return { ok: false, error: invalidRequest('tool_choice.function.name', `'tool_choice' of type "function" needs the function's 'name'; got ${describe(name)}.`) };
  }
  const tools = Array.isArray(body['tools']) ? (body['tools'] as unknown[]) : [];
  const named = tools.filter((tool) => isObject(tool) && isObject(tool['function']) && tool['function']['name'] === name);
  if (named.length === 0) {
    const names = tools.map((tool) => (isObject(tool) && isObject(tool['function']) ? String(tool['function']['name']) : '?'));
    return {
      ok: false,
      error: invalidRequest('tool_choice.function.name', `'tool_choice' names the function '${name}', which is not among the tools${names.length > 0 ? `: ${names.join(', ')}` : ' (there are none)'}.`),
    };
  }
  return { ok: true, value: { ...body, tools: named, tool_choice: 'required' } };
}

/** The body to send `engine`: `body` itself, or as forEngine rewrites it; or why it cannot be sent. Pure. */
export function inEngineWords(body: Record<string, unknown>, engine: EngineKind, servedBy: string): { ok: true; value: Record<string, unknown> } | { ok: false; error: RouterError } {
  const rewritten = forEngine(body, engine, servedBy);
  return rewritten.ok ? { ok: true, value: rewritten.value ?? body } : rewritten;
}
