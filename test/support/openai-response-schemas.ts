// OpenAI's published Response and ResponseStreamEvent schemas (test/fixtures/openai-openapi/
// response-schemas.json, its source inside) as ajv validators, so a test can say that an answer
// or an event is what the `openai` SDK and every other Responses client are written against.
//
// Why JSON Schema 2019-09: the spec is OpenAPI 3.1, whose schemas use `$recursiveRef`. Formats
// (uri, unixtime, float) are OpenAPI annotations here, not checks; the types still are.
import { readFileSync } from 'node:fs';
import { Ajv2019, type ValidateFunction } from 'ajv/dist/2019.js';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/openai-openapi/response-schemas.json', import.meta.url), 'utf8')) as { schemas: Record<string, unknown> };
const ajv = new Ajv2019({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema({ components: { schemas: fixture.schemas } }, 'openapi');

function validator(name: string): ValidateFunction {
  return ajv.compile({ $ref: `openapi#/components/schemas/${name}` });
}

const validateResponse = validator('Response');

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
