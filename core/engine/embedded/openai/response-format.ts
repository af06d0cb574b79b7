// `response_format` of a chat completion: free text, any JSON value, or JSON that matches a
// schema. The engine enforces the last two with a grammar (node-llama-cpp's GBNF from a JSON
// schema), so even a random-weight model answers in the asked shape.
//
// Why the schema is checked keyword by keyword here: node-llama-cpp's grammar generator
// understands a subset of JSON Schema and ignores what it does not know. An ignored `pattern`
// or `minimum` would give an answer that the client's own validator rejects, after the
// client trusted the server to have honoured the schema. So every keyword is either one the
// grammar enforces, an annotation that constrains nothing (title, default, examples,
// $schema...), or refused with a 400 that names it and where it is. Pure (no model, no I/O)
// apart from schemaGrammar, which builds the grammar with the runtime; a tool's parameter
// schema goes the same way (tool-calls.ts, tool-generation.ts).
import type { Llama, LlamaGrammar } from 'node-llama-cpp';
import { badRequest } from '../http-error.js';

export type ResponseFormat =
  | { kind: 'text' }
  | { kind: 'json_object' }
  | { kind: 'json_schema'; name: string; schema: Record<string, unknown> };

type Json = Record<string, unknown>;

/** Keywords the grammar enforces (node-llama-cpp 3.21.1's GbnfJsonSchema). */
const ENFORCED = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'prefixItems', 'minItems', 'maxItems',
  'minProperties', 'maxProperties', 'enum', 'const', 'oneOf', 'anyOf', '$ref', '$defs', 'minLength', 'maxLength', 'format',
]);

/** Keywords that describe but constrain nothing: dropping them changes no valid answer. */
const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']);

const FORMATS = new Set(['date-time', 'time', 'date']);
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'null', 'object', 'array']);

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The schema as the grammar generator takes it: annotations other than `description` removed,
 * `anyOf` written as `oneOf` (a grammar that produces one alternative's value produces a value
 * valid under either), every sub-schema checked. Throws a 400 naming the first keyword or value
 * the grammar cannot enforce, with its path in the schema; `where` names the field that holds
 * the schema (a response format's, or a tool's parameters).
 */
export function grammarSchema(schema: unknown, path = '#', where = 'response_format.json_schema'): Json {
  if (!isObject(schema)) throw badRequest(`${where} at ${path} must be a JSON object, got ${JSON.stringify(schema)}`);
  const out: Json = {};
  for (const [key, value] of Object.entries(schema)) {
    const at = `${path}/${key}`;
    if (key === 'description') { out[key] = value; continue; }
    if (ANNOTATIONS.has(key)) continue;
    if (!ENFORCED.has(key)) {
      throw badRequest(`${where}: the keyword '${key}' at ${path} cannot be enforced by this engine's grammar; supported: ${[...ENFORCED].join(', ')}`);
    }
    switch (key) {
      case 'type': {
        const types = Array.isArray(value) ? value : [value];
        for (const t of types) if (typeof t !== 'string' || !TYPES.has(t)) throw badRequest(`${where}: unknown type ${JSON.stringify(t)} at ${at}`);
        if (Array.isArray(value) && value.some((t) => t === 'object' || t === 'array')) {
          throw badRequest(`${where}: a type list with object or array at ${at} cannot be enforced; write it as oneOf`);
        }
        out[key] = value;
        break;
      }
      case 'properties':
      case '$defs': {
        if (!isObject(value)) throw badRequest(`${where}: '${key}' at ${path} must be an object`);
        out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, grammarSchema(sub, `${at}/${name}`, where)]));
        break;
      }
      case 'items':
      case 'additionalProperties':
        out[key] = typeof value === 'boolean' && key === 'additionalProperties' ? value : grammarSchema(value, at, where);
        break;
      case 'prefixItems':
      case 'oneOf':
      case 'anyOf': {
        if (!Array.isArray(value) || value.length === 0) throw badRequest(`${where}: '${key}' at ${path} must be a non-empty array`);
        out[key === 'anyOf' ? 'oneOf' : key] = value.map((sub, i) => grammarSchema(sub, `${at}/${i}`, where));
        break;
      }
      case '$ref':
        if (typeof value !== 'string' || !value.startsWith('#/$defs/')) {
          throw badRequest(`${where}: '$ref' at ${path} must point into #/$defs/ (got ${JSON.stringify(value)})`);
        }
        out[key] = value;
        break;
      case 'format':
        if (typeof value !== 'string' || !FORMATS.has(value)) {
          throw badRequest(`${where}: format ${JSON.stringify(value)} at ${path} cannot be enforced; supported: ${[...FORMATS].join(', ')}`);
        }
        out[key] = value;
        break;
      default:
        out[key] = value;
    }
  }
  if ('oneOf' in out && 'type' in out) throw badRequest(`${where}: oneOf/anyOf beside type at ${path} cannot be enforced; move the type into each alternative`);
  return out;
}

/** Reads `response_format`; absent or `{type:"text"}` is free text. */
export function readResponseFormat(value: unknown): ResponseFormat {
  if (value === undefined || value === null) return { kind: 'text' };
  if (!isObject(value)) throw badRequest(`'response_format' must be an object, got ${JSON.stringify(value)}`);
  const type = value['type'];
  if (type === 'text') return { kind: 'text' };
  if (type === 'json_object') return { kind: 'json_object' };
  if (type === 'json_schema') {
    const spec = value['json_schema'];
    if (!isObject(spec)) throw badRequest("'response_format.json_schema' must be an object with 'name' and 'schema'");
    const name = typeof spec['name'] === 'string' ? spec['name'] : 'response';
    // strict: true asks for exactly the schema; the grammar gives nothing else either way.
    if (spec['strict'] !== undefined && typeof spec['strict'] !== 'boolean') throw badRequest("'response_format.json_schema.strict' must be a boolean");
    const schema = spec['schema'] ?? { type: 'object' };
    return { kind: 'json_schema', name, schema: grammarSchema(schema) };
  }
  throw badRequest(`'response_format.type' must be text, json_object or json_schema, got ${JSON.stringify(type)}`);
}

/**
 * node-llama-cpp 3.21.1 writes JSON numbers with exponents of up to 16 digits, and an
 * `integer` with a negative one: `3e-2` and `98030E29337960879` (Infinity once parsed) pass
 * its grammar and fail the client's own check (zod's `.int()` or `.finite()`, a JSON-schema
 * validator); both were produced in this engine's tests. An integer is written without an
 * exponent, and a number's exponent has at most two digits, so every value the grammar lets
 * through parses to a finite number of the asked type. Nothing else in the grammar is touched.
 */
const GRAMMAR_EXPONENT = '([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?';

export function integerGrammarFixed(grammar: string): string {
  return grammar
    .split('\n')
    .map((line) => {
      if (line.startsWith('integer-number-rule ::= ')) return line.replace(` ${GRAMMAR_EXPONENT}`, '');
      if (line.startsWith('fractional-number-rule ::= ')) return line.replace(GRAMMAR_EXPONENT, '([eE] [-+]? [0-9]{1,2})?');
      return line;
    })
    .join('\n');
}

/**
 * The grammar that generates exactly the JSON values a checked schema (grammarSchema) allows,
 * numbers fixed as above. Rejects with node-llama-cpp's error when its generator refuses the
 * schema; the caller names the field.
 */
export async function schemaGrammar(llama: Llama, schema: Json): Promise<LlamaGrammar> {
  const generated = await llama.createGrammarForJsonSchema(schema as Parameters<typeof llama.createGrammarForJsonSchema>[0]);
  return llama.createGrammar({
    grammar: integerGrammarFixed(generated.grammar),
    stopGenerationTriggers: generated.stopGenerationTriggers,
    trimWhitespaceSuffix: generated.trimWhitespaceSuffix,
  });
}
