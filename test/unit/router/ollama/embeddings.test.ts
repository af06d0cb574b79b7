import { describe, expect, it } from 'vitest';
import { ollamaVectors, toOllamaEmbedding } from '../../../../core/router/ollama/embeddings.js';

const FACTS = { vision: false, contextTokens: 512 };
const read = (body: Record<string, unknown>) => ({ body: { model: 'demo-embed', ...body }, model: 'demo-embed' });

describe("Ollama's embeddings", () => {
  it('takes /api/embed input as a text or a list, and /api/embeddings prompt as a text', () => {
    const one = toOllamaEmbedding('embed', read({ input: 'a' }), FACTS);
    const many = toOllamaEmbedding('embed', read({ input: ['a', 'b'] }), FACTS);
    const legacy = toOllamaEmbedding('embeddings', read({ prompt: 'a' }), FACTS);
    expect(one.ok && one.value.inputs).toEqual(['a']);
    expect(many.ok && many.value.inputs).toEqual(['a', 'b']);
    expect(legacy.ok && legacy.value.inputs).toEqual(['a']);
  });

  it('refuses dimensions, truncate true and sampling options by name; takes num_ctx up to the context', () => {
    const refusedParam = (kind: 'embed' | 'embeddings', body: Record<string, unknown>): string | null => {
      const out = toOllamaEmbedding(kind, read(body), FACTS);
      return out.ok ? null : out.error.param;
    };
    expect(refusedParam('embed', { input: 'a', dimensions: 8 })).toBe('dimensions');
    expect(refusedParam('embed', { input: 'a', truncate: true })).toBe('truncate');
    expect(refusedParam('embed', { input: 'a', truncate: false })).toBeNull();
    expect(refusedParam('embed', { input: 'a', options: { temperature: 0 } })).toBe('options.temperature');
    expect(refusedParam('embed', { input: 'a', options: { num_ctx: 512 } })).toBeNull();
    expect(refusedParam('embed', { input: 'a', options: { num_ctx: 4096 } })).toBe('options.num_ctx');
    expect(refusedParam('embeddings', { prompt: ['a'] })).toBe('prompt');
    expect(refusedParam('embed', { input: [] })).toBe('input');
  });

  it("re-tells /v1/embeddings' answer in Ollama's shapes, vectors in input order", () => {
    const answer = JSON.stringify({ object: 'list', data: [{ index: 1, embedding: [3, 4] }, { index: 0, embedding: [1, 2] }], usage: { prompt_tokens: 6, total_tokens: 6 } });
    const times = { receivedMs: 0, sentMs: 1, endMs: 3 };
    expect(JSON.parse(ollamaVectors(answer, { kind: 'embed', model: 'demo-embed:latest' }, times) ?? 'null')).toEqual({
      model: 'demo-embed:latest',
      embeddings: [
        [1, 2],
        [3, 4],
      ],
      total_duration: 3e6,
      load_duration: 1e6,
      prompt_eval_count: 6,
    });
    expect(JSON.parse(ollamaVectors(answer, { kind: 'embeddings', model: 'x' }, times) ?? 'null')).toEqual({ embedding: [1, 2] });
    expect(ollamaVectors('{"nope":1}', { kind: 'embed', model: 'x' }, times)).toBeNull();
  });
});
