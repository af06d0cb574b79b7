// The field table (core/router/openai/request-fields.ts) against what the APIs define: every property
// of OpenAI's published request schemas (test/fixtures/openai-openapi/request-schemas.json, its
// source inside) and every field of the Anthropic SDK's MessageCreateParams has a row, and the
// README prints the table as it is.
import { readFileSync } from 'node:fs';
import type Anthropic from '@anthropic-ai/sdk';
import { describe, expect, it } from 'vitest';
import { fieldTableMarkdown, REQUEST_FIELDS, refusedField } from '../../../../core/router/openai/request-fields.js';

interface Schema {
  properties?: Record<string, unknown>;
  allOf?: Schema[];
  $ref?: string;
}
const fixture = JSON.parse(readFileSync(new URL('../../../fixtures/openai-openapi/request-schemas.json', import.meta.url), 'utf8')) as { schemas: Record<string, Schema> };

/** A schema's properties, its allOf bases' included (each base a $ref into the same fixture). */
function propertiesOf(name: string): string[] {
  const walk = (schema: Schema | undefined): string[] => {
    if (schema === undefined) throw new Error(`the fixture lacks a schema that ${name} uses`);
    if (schema.$ref !== undefined) return walk(fixture.schemas[schema.$ref.split('/').at(-1) ?? '']);
    return [...Object.keys(schema.properties ?? {}), ...(schema.allOf ?? []).flatMap(walk)];
  };
  return [...new Set(walk(fixture.schemas[name]))];
}

/** Every field of Anthropic's MessageCreateParams: a field the SDK adds fails the typecheck here until it has a row. */
const ANTHROPIC_FIELDS: Record<keyof Anthropic.MessageCreateParams, true> = {
  max_tokens: true,
  messages: true,
  model: true,
  cache_control: true,
  container: true,
  diagnostics: true,
  inference_geo: true,
  metadata: true,
  output_config: true,
  service_tier: true,
  speed: true,
  stop_sequences: true,
  stream: true,
  system: true,
  thinking: true,
  tool_choice: true,
  tools: true,
  user_profile_id: true,
  workspace_id: true,
};

describe('the request field table', () => {
  it.each([
    ['chat.completions', 'CreateChatCompletionRequest'],
    ['completions', 'CreateCompletionRequest'],
    ['embeddings', 'CreateEmbeddingRequest'],
    ['responses', 'CreateResponse'],
  ] as const)('has a row for every property of OpenAI’s %s request (%s)', (endpoint, schema) => {
    const properties = propertiesOf(schema);
    expect(properties.length).toBeGreaterThan(4);
    expect(properties.filter((field) => REQUEST_FIELDS[endpoint][field] === undefined)).toEqual([]);
  });

  it('has a row for every field of Anthropic’s Messages request', () => {
    expect(Object.keys(ANTHROPIC_FIELDS).filter((field) => REQUEST_FIELDS.messages[field] === undefined)).toEqual([]);
  });

  it('is printed in core/router/README.md as it is', () => {
    const readme = readFileSync(new URL('../../../../core/router/README.md', import.meta.url), 'utf8');
    const printed = /<!-- request-fields:start -->\n([\s\S]*?)\n<!-- request-fields:end -->/.exec(readme)?.[1];
    expect(printed, 'regenerate the table between the request-fields markers from fieldTableMarkdown()').toBe(fieldTableMarkdown());
  });
});

describe('refusedField', () => {
  it('refuses a field no engine honours before the engine is known, naming it and why', () => {
    const refusal = refusedField('chat.completions', { model: 'm', messages: [], functions: [{ name: 'f' }] }, null);
    expect(refusal).toMatchObject({ status: 400, param: 'functions', type: 'invalid_request_error' });
    expect(refusal?.message).toContain('send `tools`');
  });

  it('takes the values that ask for nothing', () => {
    expect(refusedField('chat.completions', { n: 1, store: false, functions: [], modalities: ['text'], logit_bias: {} }, 'embedded')).toBeNull();
    expect(refusedField('completions', { best_of: 1, echo: false }, null)).toBeNull();
    expect(refusedField('chat.completions', { n: 2 }, null)).toMatchObject({ param: 'n' });
  });

  it('refuses a field only where its engine cannot honour it, naming the model', () => {
    const body = { model: 'm', messages: [], logit_bias: { '42': -100 } };
    expect(refusedField('chat.completions', body, null)).toBeNull();
    expect(refusedField('chat.completions', body, 'llama-server')).toBeNull();
    const refusal = refusedField('chat.completions', body, 'embedded', 'demo-chat');
    expect(refusal).toMatchObject({ param: 'logit_bias' });
    expect(refusal?.message).toContain("'demo-chat'");
  });

  it('passes inert fields and fields outside the table (llama.cpp’s own) to the engine', () => {
    expect(refusedField('chat.completions', { user: 'u', service_tier: 'auto', metadata: { a: 'b' }, min_p: 0.1, grammar: 'root ::= "a"' }, 'embedded')).toBeNull();
  });
});
