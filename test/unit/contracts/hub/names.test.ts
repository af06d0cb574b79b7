import { describe, expect, test } from 'vitest';
import { hubAlias, parseHubModelName, quantInName } from '../../../../core/contracts/hub/names.js';

describe('parseHubModelName', () => {
  test.each([
    ['hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M', { repo: 'bartowski/Qwen2.5-0.5B-Instruct-GGUF', select: { kind: 'quant', quant: 'Q4_K_M' } }],
    ['huggingface.co/bartowski/Qwen-GGUF:iq3_m', { repo: 'bartowski/Qwen-GGUF', select: { kind: 'quant', quant: 'iq3_m' } }],
    ['https://huggingface.co/bartowski/Qwen-GGUF', { repo: 'bartowski/Qwen-GGUF', select: { kind: 'default' } }],
    ['bartowski/Qwen-GGUF:Q8_0', { repo: 'bartowski/Qwen-GGUF', select: { kind: 'quant', quant: 'Q8_0' } }],
    ['bartowski/Qwen-GGUF/sub/Qwen-Q2_K.gguf', { repo: 'bartowski/Qwen-GGUF', select: { kind: 'file', path: 'sub/Qwen-Q2_K.gguf' } }],
  ])('%s', (text, name) => expect(parseHubModelName(text)).toEqual({ ok: true, name }));

  test.each([
    ['qwen', 'needs an owner and a repo'],
    ['hf.co/owner/', 'needs an owner and a repo'],
    ['owner/repo:', "'' is not a quant's name"],
    ['owner/repo:Q4/file.gguf', 'a quant (:QUANT) and a file cannot both be named'],
    ['owner/repo/../x.gguf', "is not a file's path"],
    ['owner/repo/README.md', 'is not a GGUF file'],
    ['-owner/repo', "'-owner' is not an owner's name"],
  ])('%s is refused: %s', (text, why) => {
    const parsed = parseHubModelName(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.message).toContain(why);
  });
});

test('hubAlias and quantInName', () => {
  expect(hubAlias('o/r', 'Q4_K_M')).toBe('hf.co/o/r:Q4_K_M');
  expect(hubAlias('o/r', undefined)).toBe('hf.co/o/r');
  expect(quantInName('Qwen2.5-7B-Instruct-Q4_K_M')).toBe('Q4_K_M');
  expect(quantInName('model.iq3_xxs')).toBe('iq3_xxs');
  expect(quantInName('llama-7b')).toBeUndefined();
});
