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

  it('writes every GGUF value type with its type tag, and arrays of any of them', () => {
    const values: [string, GgufValue][] = [
      ['u8', { kind: 'u8', value: 200 }], ['i8', { kind: 'i8', value: -100 }],
      ['u16', { kind: 'u16', value: 60000 }], ['i16', { kind: 'i16', value: -30000 }],
      ['u64', { kind: 'u64', value: 2n ** 63n }], ['i64', { kind: 'i64', value: -(2n ** 40n) }],
      ['f64', { kind: 'f64', value: Math.PI }], ['bools', { kind: 'array', of: 'bool', value: [true, false] }],
    ];
    const { header } = layoutGguf(new Map(values), []);
    let at = 24;
    const next = (key: string): number => {
      expect(header.readBigUInt64LE(at)).toBe(BigInt(key.length));
      expect(header.toString('utf8', at + 8, at + 8 + key.length)).toBe(key);
      at += 8 + key.length;
      const type = header.readUInt32LE(at);
      at += 4;
      return type;
    };
    const read = <T>(bytes: number, f: (offset: number) => T): T => {
      const v = f(at);
      at += bytes;
      return v;
    };
    expect([next('u8'), read(1, (o) => header.readUInt8(o))]).toEqual([0, 200]);
    expect([next('i8'), read(1, (o) => header.readInt8(o))]).toEqual([1, -100]);
    expect([next('u16'), read(2, (o) => header.readUInt16LE(o))]).toEqual([2, 60000]);
    expect([next('i16'), read(2, (o) => header.readInt16LE(o))]).toEqual([3, -30000]);
    expect([next('u64'), read(8, (o) => header.readBigUInt64LE(o))]).toEqual([10, 2n ** 63n]);
    expect([next('i64'), read(8, (o) => header.readBigInt64LE(o))]).toEqual([11, -(2n ** 40n)]);
    expect([next('f64'), read(8, (o) => header.readDoubleLE(o))]).toEqual([12, Math.PI]);
    expect([next('bools'), read(4, (o) => header.readUInt32LE(o)), read(8, (o) => header.readBigUInt64LE(o))]).toEqual([9, 7, 2n]);
    expect([read(1, (o) => header.readUInt8(o)), read(1, (o) => header.readUInt8(o))]).toEqual([1, 0]);
  });

  it('refuses a value that does not suit its kind', () => {
    expect(() => layoutGguf(new Map<string, GgufValue>([['x', { kind: 'array', of: 'u64', value: [1] }]]), [])).toThrow('a GGUF u64 needs a bigint, got number');
  });

  it('sizes q8_0 as 34-byte blocks of 32 values, so the data between tensors is padded', () => {
    const layout = layoutGguf(meta, [{ name: 'q', dims: [64, 3], type: 'q8_0' }, { name: 'f', dims: [8], type: 'f32' }]);
    expect(layout.tensorBytes).toEqual([6 * 34, 32]);
    // 204 bytes of q8_0 end inside the alignment: the next tensor starts at 224.
    expect((layout.tensorOffsets[1] ?? 0) - (layout.tensorOffsets[0] ?? 0)).toBe(224);
    expect(() => layoutGguf(meta, [{ name: 'odd', dims: [40], type: 'q8_0' }])).toThrow("tensor 'odd': a q8_0 row must be a multiple of 32 values, got 40");
  });

  it('quantises q8_0 as ggml does: an f16 scale of max|x| / 127, then the values rounded half away from zero', () => {
    const values = new Float32Array(32).fill(0);
    values[0] = 127;
    values[1] = -2.5;
    values[2] = 0.5;
    const data = encodeTensorData(values, 'q8_0');
    expect(data.length).toBe(64);
    expect(data.readUInt16LE(0)).toBe(float16Bits(1));
    expect([data.readInt8(2), data.readInt8(3), data.readInt8(4), data.readInt8(5)]).toEqual([127, -3, 1, 0]);
  });

  it('encodes f16 data as halves and pads it', () => {
    const data = encodeTensorData(new Float32Array([1, -2, 0.5]), 'f16');
    expect(data.length).toBe(32);
    expect([data.readUInt16LE(0), data.readUInt16LE(2), data.readUInt16LE(4)]).toEqual([0x3c00, 0xc000, 0x3800]);
  });
});
