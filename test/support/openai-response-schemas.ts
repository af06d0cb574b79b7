// OpenAI's published response schemas (test/fixtures/openai-openapi/response-schemas.json, its
// source inside) as ajv validators: Response and ResponseStreamEvent, a chat completion whole and
// as streamed chunks, an embeddings answer. A test can say that an answer or an event is what the
// `openai` SDK and every other OpenAI client are written against, whichever engine gave it.
//
// Why JSON Schema 2019-09: the spec is OpenAPI 3.1, whose schemas use `$recursiveRef`. Formats
// (uri, unixtime, float) are OpenAPI annotations here, not checks; the types still are.
import { readFileSync } from 'node:fs';
import { Ajv2019, type ValidateFunction } from 'ajv/dist/2019.js';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/openai-openapi/response-schemas.json', import.meta.url), 'utf8')) as { schemas: Record<string, unknown> };
const ajv = new Ajv2019({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema({ components: { schemas: withNullAllowed(fixture.schemas) } }, 'openapi');

/**
 * The schemas with OpenAPI 3.0's `nullable: true`, which the chat completion schemas still use,
 * said in JSON Schema: that node, or null. Ajv reads `nullable` only beside a `type` and still
 * applies an `enum` without null to null (a streamed chunk's `finish_reason: null`), so left as
 * it is, the published schemas would refuse what OpenAI itself sends.
 */
function withNullAllowed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withNullAllowed);
  if (typeof node !== 'object' || node === null) return node;
  // `nullable: true` is the keyword; a property named "nullable" (a schema object) is kept.
  const nullable = (node as Record<string, unknown>)['nullable'] === true;
  const inner = Object.fromEntries(Object.entries(node).flatMap(([key, value]) => (nullable && key === 'nullable' ? [] : [[key, withNullAllowed(value)]])));
  return nullable ? { anyOf: [{ type: 'null' }, inner] } : inner;
}

function validator(name: string): ValidateFunction {
  return ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
}

const validateResponse = validator('Response');
const validateChatCompletion = validator('CreateChatCompletionResponse');
const validateChatCompletionChunk = validator('CreateChatCompletionStreamResponse');
const validateEmbeddings = validator('CreateEmbeddingResponse');

/** ResponseStreamEvent is an anyOf of one schema per event type: each type's own, so a complaint is about that event's fields. */
const eventSchemas = new Map<string, ValidateFunction>();
for (const branch of (fixture.schemas['ResponseStreamEvent'] as { anyOf: { $ref: string }[] }).anyOf) {
  const name = branch.$ref.split('/').at(-1) ?? '';
  const type = (fixture.schemas[name] as { properties?: { type?: { enum?: string[] } } }).properties?.type?.enum?.[0];
  if (type !== undefined) eventSchemas.set(type, validator(name));
}

/** The schema's complaints about `value` as a Response (empty when it is one). */
export function responseSchemaErrors(value: unknown): string[] {
  return errorsOf(validateResponse, value);
}

/** The schema's complaints about `value` as a chat completion (empty when it is one). */
export function chatCompletionSchemaErrors(value: unknown): string[] {
  return errorsOf(validateChatCompletion, value);
}

/** The schema's complaints about `value` as one streamed chat completion chunk (empty when it is one). */
export function chatCompletionChunkSchemaErrors(value: unknown): string[] {
  return errorsOf(validateChatCompletionChunk, value);
}

/**
 * The schema's complaints about `value` as an embeddings answer (empty when it is one). The
 * schema knows float vectors only: a base64 answer's string is what the SDK decodes, not this.
 */
export function embeddingsSchemaErrors(value: unknown): string[] {
  return errorsOf(validateEmbeddings, value);
}

/** The schema's complaints about `value` as a stream event of its `type` (empty when it is one). */
export function streamEventSchemaErrors(value: unknown): string[] {
  const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  const validate = typeof type === 'string' ? eventSchemas.get(type) : undefined;
  if (validate === undefined) return [`${JSON.stringify(type)} is no event type of ResponseStreamEvent`];
  return errorsOf(validate, value);
}

function errorsOf(validate: ValidateFunction, value: unknown): string[] {
  if (validate(value)) return [];
  return (validate.errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message ?? ''} ${JSON.stringify(error.params)}`);
}
