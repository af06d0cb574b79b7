// A JSON text cut short (a tool call's arguments the token limit cut) read as far as it goes
// (core/router/anthropic/partial-json.ts): what was written is kept, an unfinished key, literal, number's
// end or escape is left out, and what is whole JSON reads as JSON.parse reads it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parsePartialJson } from '../../../../core/router/anthropic/partial-json.js';

describe('parsePartialJson', () => {
  it.each([
    ['{"city": "Osl', { city: 'Osl' }],
    ['{"city": "', { city: '' }],
    ['{"city": "Oslo", "days": [1, 2', { city: 'Oslo', days: [1, 2] }],
    ['{"city": "Oslo",', { city: 'Oslo' }],
    ['{"city": "Oslo", "da', { city: 'Oslo' }],
    ['{"city":', {}],
    ['{"ok": tru', {}],
    ['{"a": {"b": [{"c": "d', { a: { b: [{ c: 'd' }] } }],
    ['{"q": "say \\"hi', { q: 'say "hi' }],
    ['{"q": "line\\', { q: 'line' }],
    ['{"q": "\\u00', { q: '' }],
    ['{', {}],
  ])('reads %s as far as it goes', (text, value) => {
    expect(parsePartialJson(text)).toEqual(value);
  });

  it('is undefined for text that begins no JSON value', () => {
    expect(parsePartialJson('')).toBeUndefined();
    expect(parsePartialJson('<tool_call>')).toBeUndefined();
  });

  it('reads whole JSON as JSON.parse does, and every prefix of it without throwing', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (value) => {
        const text = JSON.stringify(value);
        expect(parsePartialJson(text)).toEqual(JSON.parse(text));
        for (let end = 1; end < text.length; end += Math.max(1, Math.floor(text.length / 16))) expect(typeof parsePartialJson(text.slice(0, end))).toBe('object');
      }),
    );
  });
});
