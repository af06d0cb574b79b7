import { open, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alignUp, layoutGguf, type GgufValue as EncodedValue, type GgufTensorInfo } from '../../../core/catalog/demo/gguf-encoder.js';
import { llamaGgufLayout, writeLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { spmVocab } from '../../../core/catalog/demo/spm-vocab.js';
import {
  GgufHeaderError,
  MAX_HEADER_BYTES,
  MAX_KEPT_ELEMENTS,
  readGgufHeader,
  type GgufHeader,
  type GgufSource,
  type ReadGgufHeaderOptions,
} from '../../../core/catalog/gguf-reader.js';

const SHAPE: LlamaModelShape = { name: 'reader', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 96, contextLength: 2048, fileType: 'f16', seed: 3 };
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-gguf-reader-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function headerOf(path: string, options?: ReadGgufHeaderOptions): Promise<GgufHeader> {
  const file = await open(path, 'r');
  try {
    return await readGgufHeader(file, path, options);
  } finally {
    await file.close();
  }
}

/** The reason a file's header is refused, with the file's path checked to lead the message. */
async function refusal(path: string): Promise<string> {
  const error: unknown = await headerOf(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof GgufHeaderError)) throw new Error(`expected a GgufHeaderError for ${path}, got ${String(error)}`);
  expect(error.message).toBe(`${path}: ${error.reason}`);
  return error.reason;
}

async function writeGguf(name: string, metadata: Map<string, EncodedValue>, tensors: GgufTensorInfo[] = []): Promise<string> {
  const layout = layoutGguf(metadata, tensors);
  const path = join(dir, name);
  await writeFile(path, layout.header);
  await truncate(path, layout.totalBytes); // the data section: zeros, as far as a header reader cares
  return path;
}

// Raw little-endian pieces for headers the encoder would never write.
const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u64 = (n: number | bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};
const str = (s: string): Buffer => Buffer.concat([u64(Buffer.byteLength(s)), Buffer.from(s)]);
const start = (version: number, tensors: number | bigint, kvs: number | bigint): Buffer => Buffer.concat([Buffer.from('GGUF'), u32(version), u64(tensors), u64(kvs)]);
const kvU32 = (key: string, value: number): Buffer => Buffer.concat([str(key), u32(4), u32(value)]);
const tensorInfo = (name: string, dims: number[], type: number, offset: number | bigint): Buffer =>
  Buffer.concat([str(name), u32(dims.length), ...dims.map(u64), u32(type), u64(offset)]);

async function raw(name: string, ...pieces: Buffer[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, Buffer.concat(pieces));
  return path;
}

/** An in-memory file, for the fuzz test's thousands of variants. */
function memory(bytes: Buffer): GgufSource {
  return {
    stat: async () => ({ size: bytes.length }),
    read: async (buffer, offset, length, position) => ({ bytesRead: position >= bytes.length ? 0 : bytes.copy(buffer, offset, position, Math.min(bytes.length, position + length)) }),
  };
}

describe('readGgufHeader on a generated model', () => {
  it('reads the version, every key with its value, the alignment and the tensor table', async () => {
    const path = join(dir, 'model.gguf');
    await writeLlamaGguf(path, SHAPE);
    const header = await headerOf(path);
    const vocab = spmVocab();
    expect(header.version).toBe(3);
    expect(header.alignment).toBe(32);
    expect(header.metadata.get('general.architecture')).toBe('llama');
    expect(header.metadata.get('llama.block_count')).toBe(2);
    expect(header.metadata.get('llama.attention.layer_norm_rms_epsilon')).toBeCloseTo(1e-5, 10);
    expect(header.metadata.get('tokenizer.ggml.add_bos_token')).toBe(true);
    expect(header.metadata.get('tokenizer.ggml.tokens')).toEqual(vocab.tokens);
    expect(header.metadata.get('tokenizer.ggml.token_type')).toEqual(vocab.types);
    expect([...header.metadata.keys()].slice(0, 3)).toEqual(['general.architecture', 'general.name', 'general.file_type']);
    expect(header.tensors).toHaveLength(3 + 9 * SHAPE.nLayer);
    expect(header.tensors[0]).toEqual({ name: 'token_embd.weight', dims: [64, vocab.tokens.length], ggmlType: 1, offset: 0, bytes: 64 * vocab.tokens.length * 2 });
    expect(header.tensors.find((t) => t.name === 'blk.1.attn_norm.weight')).toMatchObject({ dims: [64], ggmlType: 0, bytes: 64 * 4 });
    const layout = llamaGgufLayout(SHAPE);
    expect(header.dataOffset).toBe(layout.dataStart);
    expect(header.dataBytes).toBe(layout.totalBytes - layout.dataStart);
  });

  it('sizes tensors from their offsets, padding included, with no table of quantisation types', async () => {
    // q8_0: 34 bytes per 32 values, so [64, 3] is 204 bytes, padded to 224 before the next tensor.
    const tensors: GgufTensorInfo[] = [
      { name: 'a', dims: [64, 3], type: 'q8_0' },
      { name: 'b', dims: [5], type: 'f32' },
      { name: 'c', dims: [32, 7], type: 'q8_0' },
    ];
    const path = await writeGguf('q8.gguf', new Map([['general.architecture', { kind: 'string', value: 'test' }]]), tensors);
    const header = await headerOf(path);
    expect(header.tensors.map((t) => [t.name, t.ggmlType, t.offset, t.bytes])).toEqual([
      ['a', 8, 0, 224],
      ['b', 0, 224, 32],
      ['c', 8, 256, alignUp(7 * 34)],
    ]);
    expect(header.tensors.reduce((sum, t) => sum + t.bytes, 0)).toBe(header.dataBytes);
  });

  it('reads every GGUF value type, scalars and arrays, 64-bit integers exactly', async () => {
    const values = new Map<string, EncodedValue>([
      ['u8', { kind: 'u8', value: 255 }], ['i8', { kind: 'i8', value: -128 }],
      ['u16', { kind: 'u16', value: 65535 }], ['i16', { kind: 'i16', value: -32768 }],
      ['u32', { kind: 'u32', value: 4294967295 }], ['i32', { kind: 'i32', value: -2147483648 }],
      ['f32', { kind: 'f32', value: 0.5 }], ['bool', { kind: 'bool', value: false }],
      ['string', { kind: 'string', value: 'héllo ✓' }], ['u64', { kind: 'u64', value: 2n ** 64n - 1n }],
      ['i64', { kind: 'i64', value: -(2n ** 63n) }], ['f64', { kind: 'f64', value: 1 / 3 }],
      ['a.u8', { kind: 'array', of: 'u8', value: [0, 7, 255] }], ['a.i16', { kind: 'array', of: 'i16', value: [-1, 2] }],
      ['a.u64', { kind: 'array', of: 'u64', value: [1n, 2n ** 60n] }], ['a.f64', { kind: 'array', of: 'f64', value: [Math.E] }],
      ['a.bool', { kind: 'array', of: 'bool', value: [true, false, true] }], ['a.string', { kind: 'string[]', value: ['', 'x', 'yz'] }],
      ['a.empty', { kind: 'array', of: 'i32', value: [] }],
    ]);
    const header = await headerOf(await writeGguf('types.gguf', values));
    expect(Object.fromEntries(header.metadata)).toEqual({
      u8: 255, i8: -128, u16: 65535, i16: -32768, u32: 4294967295, i32: -2147483648, f32: 0.5, bool: false,
      string: 'héllo ✓', u64: 2n ** 64n - 1n, i64: -(2n ** 63n), f64: 1 / 3,
      'a.u8': [0, 7, 255], 'a.i16': [-1, 2], 'a.u64': [1n, 2n ** 60n], 'a.f64': [Math.E], 'a.bool': [true, false, true],
      'a.string': ['', 'x', 'yz'], 'a.empty': [],
    });
    expect(header.tensors).toEqual([]);
  });

  it('reads past the keys it is told to skip, of every shape, and keeps the ones after them', async () => {
    const values = new Map<string, EncodedValue>([
      ['skip.strings', { kind: 'string[]', value: ['a', 'bcd', ''] }],
      ['keep.1', { kind: 'u32', value: 1 }],
      ['skip.floats', { kind: 'f32[]', value: [1, 2, 3] }],
      ['skip.string', { kind: 'string', value: 'a long chat template' }],
      ['skip.scalar', { kind: 'u16', value: 9 }],
      ['keep.2', { kind: 'string', value: 'two' }],
    ]);
    const path = await writeGguf('skip.gguf', values, [{ name: 't', dims: [8], type: 'f32' }]);
    const header = await headerOf(path, { skipKeys: new Set(['skip.strings', 'skip.floats', 'skip.string', 'skip.scalar']) });
    expect(Object.fromEntries(header.metadata)).toEqual({ 'keep.1': 1, 'keep.2': 'two' });
    expect(header.tensors.map((t) => t.name)).toEqual(['t']);
  });

  it('reads a vocabulary of a real model\'s size, whose strings cross the reader\'s 1 MiB reads, kept and skipped', async () => {
    const tokens = Array.from({ length: 152_064 }, (_, i) => `t${i}`.padEnd(3 + (i % 17), 'é'));
    const values = new Map<string, EncodedValue>([
      ['tokenizer.ggml.merges', { kind: 'string[]', value: tokens }],
      ['tokenizer.ggml.tokens', { kind: 'string[]', value: tokens }],
      ['after', { kind: 'u32', value: 7 }],
    ]);
    const path = await writeGguf('vocab.gguf', values, [{ name: 't', dims: [8], type: 'f32' }]);
    expect((await readFile(path)).length).toBeGreaterThan(4 * 1024 * 1024);
    const header = await headerOf(path, { skipKeys: new Set(['tokenizer.ggml.merges']) });
    expect(header.metadata.get('tokenizer.ggml.tokens')).toEqual(tokens);
    expect(header.metadata.get('after')).toBe(7);
    expect(header.metadata.has('tokenizer.ggml.merges')).toBe(false);
  });

  it('honours general.alignment: offsets and the data section on its multiples', async () => {
    const path = await raw(
      'align64.gguf',
      start(3, 2, 1),
      kvU32('general.alignment', 64),
      tensorInfo('x', [10], 0, 0),
      tensorInfo('y', [3], 0, 64),
    );
    const size = alignUp((await readFile(path)).length, 64) + 64 + 12;
    await truncate(path, size);
    const header = await headerOf(path);
    expect(header.alignment).toBe(64);
    expect(header.dataOffset % 64).toBe(0);
    expect(header.tensors.map((t) => t.bytes)).toEqual([64, 12]);
  });

  it('gives the tensors past the end of a file cut inside its data 0 bytes, and the sizes still add up to what is on disk', async () => {
    const path = join(dir, 'cut-data.gguf');
    await writeLlamaGguf(path, SHAPE);
    const { dataStart, totalBytes } = llamaGgufLayout(SHAPE);
    await truncate(path, dataStart + Math.floor((totalBytes - dataStart) / 3));
    const header = await headerOf(path);
    expect(header.tensors.some((t) => t.bytes === 0)).toBe(true);
    expect(header.tensors.reduce((sum, t) => sum + t.bytes, 0)).toBe(header.dataBytes);
  });
});

describe('readGgufHeader refuses what llama.cpp refuses, and hostile headers, with the file and the reason', () => {
  it.each<[string, () => Buffer[], RegExp]>([
    ['text', () => [Buffer.from('this is a text file, not GGUF\n')], /^not a GGUF file: it starts with "this", not "GGUF"$/],
    ['binary', () => [Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0])], /^not a GGUF file: it starts with 0x7f 0x45 0x4c 0x46, not "GGUF"$/],
    ['empty', () => [], /^the file ends at byte 0, inside its header \(the GGUF magic\); the download is incomplete or it is not a model$/],
    ['v1', () => [start(1, 0, 0)], /^GGUF version 1, which llama\.cpp no longer loads/],
    ['v4', () => [start(4, 0, 0)], /^GGUF version 4; llama\.cpp loads versions 2 and 3$/],
    ['big-endian', () => [start(0x03000000, 0, 0)], /^GGUF version 50331648 reads byte-swapped: a big-endian GGUF, which this machine cannot load$/],
    ['4G keys', () => [start(3, 0, 2n ** 32n), kvU32('a', 1)], /^a header of 4294967296 key-value pairs and 0 tensors needs at least 60129542144 bytes, but the file has only 17 bytes left; the file is corrupt or cut short$/],
    ['2^60 string', () => [start(3, 0, 1), u64(2n ** 60n), Buffer.from('a key, then garbage')], /^the name of key 0 \(a string\) needs at least 1152921504606846976 bytes, but the file has only 19 bytes left/],
    ['cut key', () => [start(3, 0, 2), kvU32('general.alignment', 32), u64(20), Buffer.from('general.')], /^the name of key 1 \(a string\) needs at least 20 bytes, but the file has only 8 bytes left/],
    ['cut value', () => [start(3, 0, 1), str('x'), u32(4), Buffer.from([1, 2])], /^the file ends at byte 39, inside its header \(key 'x'\); the download is incomplete or it is not a model$/],
    ['empty key', () => [start(3, 0, 1), str(''), u32(4), u32(1)], /^key 0 has an empty name$/],
    ['duplicate key', () => [start(3, 0, 2), kvU32('a', 1), kvU32('a', 2)], /^key 'a' appears twice$/],
    ['unknown type', () => [start(3, 0, 1), str('a'), u32(13), u32(0)], /^key 'a' has value type 13, which GGUF does not define$/],
    ['nested array', () => [start(3, 0, 1), str('a'), u32(9), u32(9), u64(1), u32(4), u64(1), u32(1)], /^key 'a' is an array of arrays, which llama\.cpp refuses to load$/],
    ['huge array', () => [start(3, 0, 1), str('a'), u32(9), u32(0), u64(2n ** 40n), Buffer.alloc(16)], /^key 'a' \(an array of 1099511627776 u8 values\) needs at least 1099511627776 bytes, but the file has only 16 bytes left/],
    ['huge string array', () => [start(3, 0, 1), str('a'), u32(9), u32(8), u64(2n ** 32n), Buffer.alloc(16)], /^key 'a' \(an array of 4294967296 string values\) needs at least 34359738368 bytes/],
    ['alignment type', () => [start(3, 0, 1), str('general.alignment'), u32(10), u64(32)], /^general\.alignment must be a u32 power of two, got u64 32$/],
    ['alignment 48', () => [start(3, 0, 1), kvU32('general.alignment', 48)], /^general\.alignment must be a u32 power of two, got u32 48$/],
    ['long name', () => [start(3, 1, 0), tensorInfo('t'.repeat(64), [1], 0, 0)], /^the name of tensor 0 is 64 bytes long; llama\.cpp allows at most 63$/],
    ['5 dims', () => [start(3, 1, 0), tensorInfo('t', [1, 1, 1, 1, 1], 0, 0)], /^tensor 't' has 5 dimensions; ggml allows at most 4$/],
    ['huge dim', () => [start(3, 1, 0), tensorInfo('t', [2 ** 53 + 2], 0, 0)], /^dimension 0 of tensor 't' is 9007199254740994, more than any real file can hold/],
    ['unaligned', () => [start(3, 1, 0), tensorInfo('t', [1], 0, 16)], /^tensor 't' starts at offset 16, which is not a multiple of the alignment \(32\)$/],
    ['duplicate tensor', () => [start(3, 2, 0), tensorInfo('t', [1], 0, 0), tensorInfo('t', [1], 0, 32)], /^tensor 't' appears twice$/],
    ['no padding', () => [start(3, 1, 0), tensorInfo('t', [1], 0, 0)], /^the file ends at byte 57, inside the padding before its tensor data \(which starts at byte 64\); the download is incomplete$/],
  ])('%s', async (name, pieces, reason) => {
    expect(await refusal(await raw(`${name}.gguf`, ...pieces()))).toMatch(reason);
  });

  it('stops a header at 64 MiB even when the file goes on, without reading that far', async () => {
    const path = await raw('long-string.gguf', start(3, 0, 1), u64(MAX_HEADER_BYTES), Buffer.from('k'));
    await truncate(path, MAX_HEADER_BYTES + 4096); // sparse: costs no disk
    expect(await refusal(path)).toMatch(/^the name of key 0 \(a string\) needs at least 67108864 bytes, but a header may take at most 64 MiB and only 67108832 bytes of that are left/);
  });

  it('keeps at most MAX_KEPT_ELEMENTS array elements, refusing before it reads them', async () => {
    // An all-zero string array is that many empty strings: a small header that would cost gigabytes as strings.
    const count = MAX_KEPT_ELEMENTS + 1;
    const path = await raw('many.gguf', start(3, 0, 1), str('tokenizer.ggml.tokens'), u32(9), u32(8), u64(count));
    await truncate(path, 128 + count * 8);
    expect(await refusal(path)).toBe(`key 'tokenizer.ggml.tokens' brings the array elements to keep to ${count}, more than the ${MAX_KEPT_ELEMENTS} any model's header needs; the file is corrupt`);
  });

  it('says so when a file is shorter than it was when the read began', async () => {
    const bytes = await readFile(await writeGguf('shrinks.gguf', new Map([['a', { kind: 'string', value: 'x'.repeat(100) }]])));
    const shrunk: GgufSource = { ...memory(bytes.subarray(0, 40)), stat: async () => ({ size: bytes.length }) };
    await expect(readGgufHeader(shrunk, '/m/shrinks.gguf')).rejects.toThrow(
      `/m/shrinks.gguf: the file ended at byte 40 while its header was read (the length of key 'a'), shorter than the ${bytes.length} bytes it had; it is being written or truncated`,
    );
  });
});

describe('readGgufHeader on a real file cut or corrupted anywhere', () => {
  let model: Buffer;
  let headerEnd: number;
  beforeAll(async () => {
    const path = join(dir, 'fuzz.gguf');
    await writeLlamaGguf(path, { ...SHAPE, nLayer: 1, nEmbd: 32, nFf: 32 });
    model = await readFile(path);
    headerEnd = llamaGgufLayout({ ...SHAPE, nLayer: 1, nEmbd: 32, nFf: 32 }).dataStart;
  });

  /** Either a header whose sizes add up to the file, or a GgufHeaderError naming it: nothing else, and always an answer. */
  async function readsOrRefuses(bytes: Buffer): Promise<void> {
    try {
      const header = await readGgufHeader(memory(bytes), '/m/fuzz.gguf');
      expect(header.dataOffset + header.dataBytes).toBe(bytes.length);
      expect(header.tensors.every((t) => t.bytes >= 0)).toBe(true);
      expect(header.tensors.reduce((sum, t) => sum + t.bytes, 0)).toBeLessThanOrEqual(header.dataBytes);
    } catch (error) {
      expect(error).toBeInstanceOf(GgufHeaderError);
      expect((error as Error).message.startsWith('/m/fuzz.gguf: ')).toBe(true);
    }
  }

  it('cut at any length', async () => {
    await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: headerEnd + 64 }), (length) => readsOrRefuses(model.subarray(0, length))), { numRuns: 500 });
  });

  it('with any bytes of its header overwritten, and cut or not', async () => {
    const edit = fc.record({ at: fc.integer({ min: 0, max: headerEnd - 1 }), bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }) });
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 6 }), fc.option(fc.integer({ min: 0, max: model.length })), async (edits, cut) => {
        const bytes = Buffer.from(model.subarray(0, cut ?? model.length));
        for (const { at, bytes: b } of edits) Buffer.from(b).copy(bytes, at);
        await readsOrRefuses(bytes);
      }),
      { numRuns: 2000 },
    );
  });

  it('with a count or a length set to a huge value', async () => {
    // The u64s that most matter: the two counts and the first key's name length.
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(8, 16, 24), fc.bigInt({ min: 2n ** 20n, max: 2n ** 64n - 1n }), async (at, value) => {
        const bytes = Buffer.from(model);
        bytes.writeBigUInt64LE(value, at);
        await readsOrRefuses(bytes);
      }),
      { numRuns: 300 },
    );
  });
});
