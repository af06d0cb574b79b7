import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { assignUniqueIds, quantTag, slug, type IdCandidate } from '../../../core/catalog/model-ids.js';

describe('model ids', () => {
  test.each([
    ['Qwen2.5-7B-Instruct-Q4_K_M', 'qwen2.5-7b-instruct-q4_k_m'],
    ['My Model (final) v2', 'my-model-final-v2'],
    ['--weird__name--', 'weird__name'],
    ['???', 'model'],
  ])('slug(%s) = %s', (text, id) => expect(slug(text)).toBe(id));

  test.each([
    ['Qwen2.5-7B-Instruct-Q4_K_M', 'q4_k_m'],
    ['model.IQ4_XS', 'iq4_xs'],
    ['ggml-model-f16', 'f16'],
    ['Phi-3-mini-BF16', 'bf16'],
    ['tinyllama', undefined],
  ])('quantTag(%s) = %s', (stem, tag) => expect(quantTag(stem)).toBe(tag));

  test('taken names (configured ids and aliases) are never given to a discovered file', () => {
    const ids = assignUniqueIds([{ baseId: 'qwen', realPath: '/a/qwen.gguf', dirIndex: 0, path: '/a/qwen.gguf' }], new Set(['qwen']));
    expect(ids.get('/a/qwen.gguf')).toMatch(/^qwen-[0-9a-f]{6}$/);
  });

  const candidates = fc.uniqueArray(
    fc.record({
      baseId: fc.constantFrom('a', 'b', 'a-1', 'c'),
      dirIndex: fc.integer({ min: 0, max: 2 }),
      name: fc.stringMatching(/^[a-z]{1,6}$/),
    }),
    { selector: (c) => `${c.dirIndex}/${c.name}`, maxLength: 12 },
  ).map((list) => list.map((c): IdCandidate => ({ baseId: c.baseId, dirIndex: c.dirIndex, path: `/d${c.dirIndex}/${c.name}`, realPath: `/d${c.dirIndex}/${c.name}` })));

  test('ids are unique, avoid taken names, and do not depend on the order files were found in', () => {
    fc.assert(
      fc.property(candidates, fc.boolean(), (list, takeA) => {
        const taken = new Set(takeA ? ['a'] : []);
        const forward = assignUniqueIds(list, taken);
        const backward = assignUniqueIds([...list].reverse(), taken);
        const ids = [...forward.values()];
        expect(new Set(ids).size).toBe(list.length);
        for (const id of ids) expect(taken.has(id)).toBe(false);
        expect([...backward.entries()].sort()).toEqual([...forward.entries()].sort());
      }),
    );
  });
});
