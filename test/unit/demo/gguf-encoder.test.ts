import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { alignUp, encodeTensorData, float16Bits, layoutGguf, type GgufValue } from '../../../core/catalog/demo/gguf-encoder.js';

/** Decodes binary16 bits the slow, obviously-correct way. */
function fromFloat16Bits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

describe('float16Bits', () => {
  it.each([
    [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff], [0, 0x0000],
    [2 ** -24, 0x0001], [2 ** -14, 0x0400], [1e6, 0x7c00], [-1e6, 0xfc00], [1e-9, 0x0000],
    [1 + 2 ** -11, 0x3c00], // halfway rounds to even (down)
    [1 + 3 * 2 ** -11, 0x3c02], // halfway rounds to even (up)
  ])('encodes %d as 0x%s', (value, bits) => {
    expect(float16Bits(value)).toBe(bits);
  });

  it('encodes NaN as a NaN', () => {
    expect(Number.isNaN(fromFloat16Bits(float16Bits(Number.NaN)))).toBe(true);
  });

  it('rounds every representable-range float to the nearest half', () => {
    fc.assert(
      fc.property(fc.float({ min: -65000, max: 65000, noNaN: true }), (x) => {
        const back = fromFloat16Bits(float16Bits(x));
        // nearest: no other half is closer. The spacing at |x| is at most 2^(e-10) (2^-24 subnormal).
        const spacing = Math.max(2 ** (Math.floor(Math.log2(Math.abs(x) || 2 ** -24)) - 10), 2 ** -24);
        expect(Math.abs(back - x)).toBeLessThanOrEqual(spacing / 2);
      }),
    );
  });
});

describe('layoutGguf', () => {
  const meta = new Map<string, GgufValue>([
    ['general.architecture', { kind: 'string', value: 'llama' }],
    ['x.list', { kind: 'i32[]', value: [1, -2, 3] }],
  ]);

  it('starts with the GGUF magic, version 3 and the counts', () => {
    const { header } = layoutGguf(meta, [{ name: 'a', dims: [3], type: 'f32' }]);
    expect(header.subarray(0, 4).toString('latin1')).toBe('GGUF');
    expect(header.readUInt32LE(4)).toBe(3);
    expect(header.readBigUInt64LE(8)).toBe(1n);
    expect(header.readBigUInt64LE(16)).toBe(2n);
  });

  it('aligns the data section and every tensor to 32 bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 5 }), fc.boolean()), { minLength: 1, maxLength: 6 }), (specs) => {
        const tensors = specs.map(([c, r, half], i) => ({ name: `t${i}`, dims: [c, r], type: half ? ('f16' as const) : ('f32' as const) }));
        const layout = layoutGguf(meta, tensors);
        expect(layout.header.length % 32).toBe(0);
        layout.tensorOffsets.forEach((o, i) => {
          expect(o % 32).toBe(0);
          const next = layout.tensorOffsets[i + 1] ?? layout.totalBytes;
          expect(next - o).toBe(alignUp(layout.tensorBytes[i] ?? 0));
        });
      }),
    );
  });

  it('encodes f16 data as halves and pads it', () => {
    const data = encodeTensorData(new Float32Array([1, -2, 0.5]), 'f16');
    expect(data.length).toBe(32);
    expect([data.readUInt16LE(0), data.readUInt16LE(2), data.readUInt16LE(4)]).toEqual([0x3c00, 0xc000, 0x3800]);
  });
});
