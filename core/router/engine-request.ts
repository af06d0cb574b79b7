// A request as one engine needs it to mean what the client asked, where the engine reads a
// field otherwise than OpenAI defines it.
//
// llama-server (b1-80fb11a, the build node-llama-cpp 3.21.1 ships) takes
// `response_format: {type: "json_object"}` without a schema as an empty schema and ignores it:
// the answer is free text, where OpenAI promises a JSON object. Seen: "^6-!j-!j7R…" for a
// json_object request. With the schema OpenAI's json_object means, {type: "object"}, the build
// enforces it by grammar (or refuses it with a 400, which the client sees): never a silent drop.
import type { EngineKind } from '../contracts/snapshot.js';

const JSON_OBJECT_SCHEMA = { type: 'object' } as const;

/** The body the engine is sent in place of `body`, or null when it is sent as it came. Pure. */
export function forEngine(body: Readonly<Record<string, unknown>>, engine: EngineKind): Record<string, unknown> | null {
  if (engine !== 'llama-server') return null;
  const format = body['response_format'];
  if (typeof format !== 'object' || format === null || Array.isArray(format)) return null;
  const fields = format as Record<string, unknown>;
  if (fields['type'] !== 'json_object' || fields['schema'] !== undefined) return null;
  return { ...body, response_format: { ...fields, schema: JSON_OBJECT_SCHEMA } };
}
