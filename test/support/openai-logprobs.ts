// What a choice's `logprobs` must be, by OpenAI's published response schemas
// (test/fixtures/openai-openapi/response-logprobs-schemas.json, its source inside) and by what
// the numbers mean. Shared by the engine's and the daemon's tests, which check the same answers
// one hop apart.
import { readFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'vitest';

interface Fixture {
  components: Record<string, unknown>;
  choiceLogprobs: Record<'chat' | 'chatStream' | 'completions', { pointer: string; schema: Record<string, unknown> }>;
}
const fixture = JSON.parse(readFileSync(new URL('../fixtures/openai-openapi/response-logprobs-schemas.json', import.meta.url), 'utf8')) as Fixture;

// Not strict: the schemas carry OpenAPI's own keywords (`nullable`, `description` beside `$ref`).
const ajv = new Ajv({ strict: false, allErrors: true });
// Each schema refers to ChatCompletionTokenLogprob as `#/components/schemas/…`: compiled with
// the components at its root, the reference resolves as it does in openapi.json.
const validators = Object.fromEntries(Object.entries(fixture.choiceLogprobs).map(([kind, { schema }]) => [kind, ajv.compile({ ...schema, components: fixture.components })])) as Record<keyof Fixture['choiceLogprobs'], ValidateFunction>;

/** Fails with ajv's errors unless `value` is a choice's `logprobs` as OpenAI's schema for `kind` defines it. */
export function expectSchema(kind: keyof Fixture['choiceLogprobs'], value: unknown): void {
  const validate = validators[kind];
  const valid = validate(value);
  expect(valid, ajv.errorsText(validate.errors)).toBe(true);
}

export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/**
 * What holds for every token whatever the sampler: a log probability (finite, ≤ 0), its bytes
 * the token's UTF-8, at most `top` alternatives, most likely first. With `greedy` the token is
 * the most likely one, so it heads its own list.
 */
export function expectTokenLogprobs(tokens: readonly ChatTokenLogprob[], top: number, greedy: boolean): void {
  for (const t of tokens) {
    expect(Number.isFinite(t.logprob)).toBe(true);
    expect(t.logprob).toBeLessThanOrEqual(0);
    expect(t.bytes).toEqual([...Buffer.from(t.token, 'utf8')]);
    expect(t.top_logprobs.length).toBeLessThanOrEqual(top);
    const values = t.top_logprobs.map((a) => a.logprob);
    expect(values).toEqual([...values].sort((a, b) => b - a));
    for (const a of t.top_logprobs) {
      expect(a.logprob).toBeLessThanOrEqual(0);
      expect(a.bytes).toEqual([...Buffer.from(a.token, 'utf8')]);
    }
    if (greedy && top >= 1) {
      expect(t.top_logprobs[0]?.logprob).toBe(t.logprob);
      expect(t.top_logprobs.map((a) => a.token)).toContain(t.token);
    }
  }
}
