import { describe, expect, test } from 'vitest';
import { vocabularyFingerprint, vocabularyMismatch, type TokenizerFacts } from '../../../core/catalog/vocabulary.js';

const base = (count: number, spell = (i: number) => `tok${i}`): TokenizerFacts => ({
  model: 'gpt2',
  tokens: Array.from({ length: count }, (_, i) => spell(i)),
  bosId: 1,
  eosId: 2,
  addBos: false,
});
const check = (a: TokenizerFacts, b: TokenizerFacts) => vocabularyMismatch(vocabularyFingerprint(a), vocabularyFingerprint(b));

describe('draft vocabulary compatibility (llama.cpp rules)', () => {
  test('the same vocabulary is compatible', () => {
    expect(check(base(1000), base(1000))).toBeUndefined();
  });

  test('padding of up to 128 tokens is compatible (Qwen2.5 0.5B vs 7B), 129 is not', () => {
    expect(check(base(1000), base(1128))).toBeUndefined();
    expect(check(base(1128), base(1000))).toBeUndefined();
    expect(check(base(1000), base(1129))).toBe('vocabulary sizes differ by 129 tokens (1000 vs 1129; llama.cpp allows 128)');
  });

  test('one differently spelt token below the common size is a mismatch, naming both sizes and hashes', () => {
    const reason = check(base(1000), base(1100, (i) => (i === 500 ? 'other' : `tok${i}`)));
    expect(reason).toMatch(/^token texts differ within the first 1000 tokens \(1000 tokens, hash [0-9a-f]{12} vs 1100 tokens, hash [0-9a-f]{12}\)$/);
  });

  test('the first five ids (special tokens) may be spelt differently, as llama.cpp allows', () => {
    expect(check(base(300), base(300, (i) => (i === 0 ? '<|endoftext|>' : `tok${i}`)))).toBeUndefined();
  });

  test('token boundaries matter, not only the concatenated text', () => {
    const a = base(10, (i) => (i === 6 ? 'ab' : i === 7 ? 'c' : `t${i}`));
    const b = base(10, (i) => (i === 6 ? 'a' : i === 7 ? 'bc' : `t${i}`));
    expect(check(a, b)).toMatch(/^token texts differ/);
  });

  test('different tokenizer types or special tokens are mismatches', () => {
    expect(check(base(100), { ...base(100), model: 'llama' })).toBe('tokenizer types differ (gpt2 vs llama)');
    expect(check(base(100), { ...base(100), eosId: 3 })).toBe('special tokens differ (bos 1 vs 1, eos 2 vs 3)');
    expect(check(base(100), { ...base(100), addBos: true })).toBe('add_bos_token differs (false vs true)');
  });
});
