// The KV types a llama-server's saved state is tied to, read from its argv as llama.cpp reads
// it: a state saved under q8_0 and loaded under f16 would be read as the wrong bytes.
import { describe, expect, it } from 'vitest';
import { kvTypeOf } from '../../../core/engine/llama-server/saved-slots.js';

describe('kvTypeOf', () => {
  it("is llama.cpp's default f16/f16 where the argv names none", () => {
    expect(kvTypeOf(['-m', 'x.gguf', '-c', '2048'])).toBe('f16/f16');
  });

  it('reads both spellings, the last one winning as it does for llama.cpp', () => {
    expect(kvTypeOf(['-ctk', 'q8_0', '--cache-type-v', 'q4_0'])).toBe('q8_0/q4_0');
    expect(kvTypeOf(['--cache-type-k', 'q8_0', '-c', '1', '-ctk', 'f32'])).toBe('f32/f16');
  });
});
