import { describe, expect, test } from 'vitest';
import { PullRefused } from '../../../core/contracts/hub/pulls.js';
import { chooseFiles } from '../../../core/pull/choose-files.js';
import type { RepoFile } from '../../../core/pull/hub-api.js';

const file = (path: string): RepoFile => ({ path, sizeBytes: 10, sha256: 'a'.repeat(64) });
const REPO = [
  'README.md', 'Model-Q4_K_M.gguf', 'Model-Q8_0.gguf', 'Model-IQ3_M.imatrix.gguf', 'mmproj-Model-f16.gguf', 'mmproj-Model-q8_0.gguf',
  'Big-Q6_K/Big-Q6_K-00002-of-00002.gguf', 'Big-Q6_K/Big-Q6_K-00001-of-00002.gguf',
].map(file);

function refused(run: () => unknown): PullRefused {
  try {
    run();
  } catch (error) {
    if (error instanceof PullRefused) return error;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('chooseFiles', () => {
  test('a quant matches the file whose name holds it, whatever the case, with the f16 projector beside it', () => {
    const chosen = chooseFiles('o/r', REPO, { kind: 'quant', quant: 'q8_0' });
    expect(chosen.model.map((f) => f.path)).toEqual(['Model-Q8_0.gguf']);
    expect(chosen.projector?.path).toBe('mmproj-Model-f16.gguf');
    expect(chosen.quant).toBe('Q8_0');
  });

  test('a quant held inside a name, not at its end, is found too', () => {
    expect(chooseFiles('o/r', REPO, { kind: 'quant', quant: 'IQ3_M' }).model.map((f) => f.path)).toEqual(['Model-IQ3_M.imatrix.gguf']);
  });

  test('a split model is every part, in order, and its folder has no projector', () => {
    const chosen = chooseFiles('o/r', REPO, { kind: 'quant', quant: 'Q6_K' });
    expect(chosen.model.map((f) => f.path)).toEqual(['Big-Q6_K/Big-Q6_K-00001-of-00002.gguf', 'Big-Q6_K/Big-Q6_K-00002-of-00002.gguf']);
    expect(chosen.projector).toBeUndefined();
  });

  test('a file named by one of its parts is the whole split model', () => {
    expect(chooseFiles('o/r', REPO, { kind: 'file', path: 'Big-Q6_K/Big-Q6_K-00002-of-00002.gguf' }).model).toHaveLength(2);
  });

  test('no quant: Q4_K_M when there is one; the only model; else the person chooses from the list', () => {
    expect(chooseFiles('o/r', REPO, { kind: 'default' }).quant).toBe('Q4_K_M');
    expect(chooseFiles('o/r', [file('Solo.gguf')], { kind: 'default' }).model.map((f) => f.path)).toEqual(['Solo.gguf']);
    const error = refused(() => chooseFiles('o/r', [file('M-Q8_0.gguf'), file('M-Q2_K.gguf')], { kind: 'default' }));
    expect(error.message).toContain('the quants there are Q2_K, Q8_0; pull one as hf.co/o/r:Q2_K');
  });

  test('an unknown quant is refused listing the quants there are', () => {
    const error = refused(() => chooseFiles('o/r', REPO, { kind: 'quant', quant: 'Q3_K_S' }));
    expect(error.code).toBe('unknown_quant');
    expect(error.message).toBe('o/r has no Q3_K_S quant; the quants there are IQ3_M, Q4_K_M, Q8_0, Q6_K; pull one as hf.co/o/r:Q4_K_M.');
  });

  test('a split model missing a part, and a repo with no GGUF, are refused', () => {
    expect(refused(() => chooseFiles('o/r', [file('X-Q4_K_M-00001-of-00003.gguf')], { kind: 'default' })).code).toBe('split_incomplete');
    expect(refused(() => chooseFiles('o/r', [file('model.safetensors')], { kind: 'default' })).code).toBe('no_gguf');
  });
});
