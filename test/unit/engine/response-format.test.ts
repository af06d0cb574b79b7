import { describe, expect, it } from 'vitest';
import { grammarSchema, integerGrammarFixed, readResponseFormat } from '../../../core/engine/embedded/openai/response-format.js';
import { HttpError } from '../../../core/engine/embedded/http-error.js';

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (error) {
    if (error instanceof HttpError) return error.message;
    throw error;
  }
  throw new Error('not refused');
};

describe('response_format', () => {
  it('reads text, json_object and json_schema', () => {
    expect(readResponseFormat(undefined)).toEqual({ kind: 'text' });
    expect(readResponseFormat({ type: 'text' })).toEqual({ kind: 'text' });
    expect(readResponseFormat({ type: 'json_object' })).toEqual({ kind: 'json_object' });
    expect(readResponseFormat({ type: 'json_schema', json_schema: { name: 'x', strict: true, schema: { type: 'object', title: 'X', properties: { a: { type: 'string', default: 'q' } } } } }))
      .toEqual({ kind: 'json_schema', name: 'x', schema: { type: 'object', properties: { a: { type: 'string' } } } });
  });

  it('writes anyOf as oneOf and keeps descriptions', () => {
    expect(grammarSchema({ anyOf: [{ type: 'string', description: 'd' }, { type: 'null' }] })).toEqual({ oneOf: [{ type: 'string', description: 'd' }, { type: 'null' }] });
  });

  it.each([
    [{ type: 'string', pattern: 'a+' }, "'pattern' at #"],
    [{ type: 'object', properties: { n: { type: 'number', minimum: 0 } } }, "'minimum' at #/properties/n"],
    [{ allOf: [{ type: 'string' }] }, "'allOf' at #"],
    [{ type: 'string', format: 'email' }, 'format "email"'],
    [{ $ref: '#/definitions/x' }, "'$ref'"],
    [{ type: 'frob' }, 'unknown type "frob"'],
  ])('refuses %j by name and place', (schema, words) => {
    expect(refusal(() => grammarSchema(schema))).toContain(words);
  });

  it('refuses an unknown format type', () => {
    expect(refusal(() => readResponseFormat({ type: 'yaml' }))).toContain("'response_format.type'");
  });
});

describe('integerGrammarFixed', () => {
  it("writes integers without an exponent and bounds a number's, leaving other rules alone", () => {
    const generated = [
      'root ::= "{" integer-number-rule "}"',
      'integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?',
      'fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? ("0" | [1-9] [0-9]{0,15}))?',
    ].join('\n');
    const fixed = integerGrammarFixed(generated).split('\n');
    expect(fixed[0]).toBe(generated.split('\n')[0]);
    expect(fixed[1]).toBe('integer-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15})');
    expect(fixed[2]).toBe('fractional-number-rule ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?');
  });
});
