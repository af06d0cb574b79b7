// GGUF v3 binary encoding: header, metadata key/values, tensor infos, tensor data.
//
// Format (little endian), as ggml/docs/gguf.md specifies it:
//   "GGUF" u32 version=3, u64 tensor_count, u64 kv_count,
//   kv*:     string key, u32 value_type, value
//   tensor*: string name, u32 n_dims, u64 ne[n_dims] (innermost first: ne0 = row length),
//            u32 ggml_type, u64 offset (relative to the data section, aligned)
//   padding to `alignment`, then the data section, each tensor aligned to `alignment`.
// A string is u64 byte length + UTF-8 bytes (no terminator).

export const GGUF_ALIGNMENT = 32;

/** GGUF's scalar value types. The demo models use a few; the header reader's tests use them all. */
export type GgufNumberKind = 'u8' | 'i8' | 'u16' | 'i16' | 'u32' | 'i32' | 'f32' | 'f64';
export type GgufBigIntKind = 'u64' | 'i64';
export type GgufScalarKind = GgufNumberKind | GgufBigIntKind | 'bool' | 'string';

export type GgufValue =
  | { kind: GgufNumberKind; value: number }
  | { kind: GgufBigIntKind; value: bigint }
  | { kind: 'bool'; value: boolean }
  | { kind: 'string'; value: string }
  | { kind: 'string[]'; value: readonly string[] }
  | { kind: 'f32[]'; value: readonly number[] }
  | { kind: 'i32[]'; value: readonly number[] }
  /** An array of any scalar type; each element must suit `of` (a number, a bigint, a boolean or a string). */
  | { kind: 'array'; of: GgufScalarKind; value: readonly (number | bigint | boolean | string)[] };

/**
 * Tensor types the writer can encode. q8_0 is there because its 34-byte blocks make tensors
 * whose sizes are not multiples of the alignment, as real quantised models have: the padding
 * between tensors is then real, and a reader that sizes tensors must account for it. q4_0
 * because it is the quant llama.cpp repacks on AVX2 and ARM CPUs (a `CPU_REPACK` buffer beside
 * the mapped file), which the estimate must know of.
 */
export type GgmlTensorType = 'f32' | 'f16' | 'q8_0' | 'q4_0';

export interface GgufTensorInfo {
  name: string;
  /** Dimensions innermost first, as GGUF lists them: [columns, rows] for a matrix. */
  dims: readonly number[];
  type: GgmlTensorType;
}

export interface GgufLayout {
  header: Buffer;
  /** Byte offset of each tensor's data from the start of the file, in `tensors` order. */
  tensorOffsets: number[];
  tensorBytes: number[];
  totalBytes: number;
}

/** gguf_type in ggml/include/gguf.h. */
export const GGUF_VALUE_TYPE = { u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12 } as const;
/** ggml_type numbers (ggml.h). */
export const GGML_TYPE: Record<GgmlTensorType, number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 8 };
/** Elements per block and bytes per block: q8_0 is an f16 scale and 32 int8 values, q4_0 an f16 scale and 32 4-bit values. */
const BLOCK: Record<GgmlTensorType, { elements: number; bytes: number }> = {
  f32: { elements: 1, bytes: 4 },
  f16: { elements: 1, bytes: 2 },
  q8_0: { elements: 32, bytes: 34 },
  q4_0: { elements: 32, bytes: 18 },
};

export function alignUp(n: number, alignment = GGUF_ALIGNMENT): number {
  return Math.ceil(n / alignment) * alignment;
}

/** Unpadded bytes of a tensor's data. Throws when a row is not a whole number of the type's blocks. */
export function tensorByteLength(info: GgufTensorInfo): number {
  const block = BLOCK[info.type];
  if ((info.dims[0] ?? 1) % block.elements !== 0) {
    throw new Error(`tensor '${info.name}': a ${info.type} row must be a multiple of ${block.elements} values, got ${info.dims[0]}`);
  }
  return (info.dims.reduce((a, b) => a * b, 1) / block.elements) * block.bytes;
}

/** Growable little-endian byte sink for the header (data is streamed separately). */
class ByteSink {
  private buf = Buffer.alloc(1 << 16);
  private len = 0;

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    const bigger = Buffer.alloc(Math.max(this.buf.length * 2, this.len + n));
    this.buf.copy(bigger, 0, 0, this.len);
    this.buf = bigger;
  }
  u32(v: number): void { this.reserve(4); this.buf.writeUInt32LE(v >>> 0, this.len); this.len += 4; }
  i32(v: number): void { this.reserve(4); this.buf.writeInt32LE(v, this.len); this.len += 4; }
  u64(v: number | bigint): void { this.reserve(8); this.buf.writeBigUInt64LE(BigInt(v), this.len); this.len += 8; }
  i64(v: bigint): void { this.reserve(8); this.buf.writeBigInt64LE(v, this.len); this.len += 8; }
  f32(v: number): void { this.reserve(4); this.buf.writeFloatLE(v, this.len); this.len += 4; }
  f64(v: number): void { this.reserve(8); this.buf.writeDoubleLE(v, this.len); this.len += 8; }
  u8(v: number): void { this.reserve(1); this.buf.writeUInt8(v, this.len); this.len += 1; }
  i8(v: number): void { this.reserve(1); this.buf.writeInt8(v, this.len); this.len += 1; }
  u16(v: number): void { this.reserve(2); this.buf.writeUInt16LE(v, this.len); this.len += 2; }
  i16(v: number): void { this.reserve(2); this.buf.writeInt16LE(v, this.len); this.len += 2; }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.reserve(bytes.length);
    bytes.copy(this.buf, this.len);
    this.len += bytes.length;
  }
  padTo(alignment: number): void {
    const target = alignUp(this.len, alignment);
    this.reserve(target - this.len);
    this.buf.fill(0, this.len, target);
    this.len = target;
  }
  get length(): number { return this.len; }
  take(): Buffer { return this.buf.subarray(0, this.len); }
}

/** One scalar's bytes, without its type tag. Throws when the value does not suit the kind. */
function writeScalar(sink: ByteSink, kind: GgufScalarKind, value: number | bigint | boolean | string): void {
  const expect = (type: string): never => {
    throw new Error(`a GGUF ${kind} needs a ${type}, got ${typeof value}`);
  };
  if (kind === 'string') return typeof value === 'string' ? sink.string(value) : expect('string');
  if (kind === 'bool') return typeof value === 'boolean' ? sink.u8(value ? 1 : 0) : expect('boolean');
  if (kind === 'u64' || kind === 'i64') {
    if (typeof value !== 'bigint') return expect('bigint');
    return kind === 'u64' ? sink.u64(value) : sink.i64(value);
  }
  if (typeof value !== 'number') return expect('number');
  switch (kind) {
    case 'u8': return sink.u8(value);
    case 'i8': return sink.i8(value);
    case 'u16': return sink.u16(value);
    case 'i16': return sink.i16(value);
    case 'u32': return sink.u32(value);
    case 'i32': return sink.i32(value);
    case 'f32': return sink.f32(value);
    case 'f64': return sink.f64(value);
  }
}

function writeArray(sink: ByteSink, of: GgufScalarKind, values: readonly (number | bigint | boolean | string)[]): void {
  sink.u32(GGUF_VALUE_TYPE.array);
  sink.u32(GGUF_VALUE_TYPE[of]);
  sink.u64(values.length);
  for (const x of values) writeScalar(sink, of, x);
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.kind) {
    case 'string[]': return writeArray(sink, 'string', v.value);
    case 'f32[]': return writeArray(sink, 'f32', v.value);
    case 'i32[]': return writeArray(sink, 'i32', v.value);
    case 'array': return writeArray(sink, v.of, v.value);
    default:
      sink.u32(GGUF_VALUE_TYPE[v.kind]);
      writeScalar(sink, v.kind, v.value);
  }
}

/** Encodes the header and computes where every tensor's data goes. Pure; no I/O. */
export function layoutGguf(metadata: ReadonlyMap<string, GgufValue>, tensors: readonly GgufTensorInfo[]): GgufLayout {
  const sink = new ByteSink();
  sink.u32(0x46554747); // "GGUF" read as a little-endian u32
  sink.u32(3);
  sink.u64(tensors.length);
  sink.u64(metadata.size);
  for (const [key, value] of metadata) {
    sink.string(key);
    writeValue(sink, value);
  }
  const tensorBytes = tensors.map(tensorByteLength);
  let relative = 0;
  const relativeOffsets: number[] = [];
  tensors.forEach((t, i) => {
    relativeOffsets.push(relative);
    sink.string(t.name);
    sink.u32(t.dims.length);
    for (const d of t.dims) sink.u64(d);
    sink.u32(GGML_TYPE[t.type]);
    sink.u64(relative);
    relative += alignUp(tensorBytes[i] ?? 0);
  });
  sink.padTo(GGUF_ALIGNMENT);
  const dataStart = sink.length;
  return {
    header: sink.take(),
    tensorOffsets: relativeOffsets.map((o) => dataStart + o),
    tensorBytes,
    totalBytes: dataStart + relative,
  };
}

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE 754 binary16 bits of `value`, rounded to nearest even (Node 20 has no Float16Array). */
export function float16Bits(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0] ?? 0;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rest = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rest > halfway || (rest === halfway && (half & 1))) half++;
    return sign | half;
  }
  let bits = sign | (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && (bits & 1))) bits++;
  return bits;
}

/** The bytes of one tensor's values in its GGML type, padded to the alignment. */
export function encodeTensorData(values: Float32Array, type: GgmlTensorType): Buffer {
  const block = BLOCK[type];
  if (values.length % block.elements !== 0) throw new Error(`${type} data must be a multiple of ${block.elements} values, got ${values.length}`);
  const out = Buffer.alloc(alignUp((values.length / block.elements) * block.bytes));
  if (type === 'f32') {
    Buffer.from(values.buffer, values.byteOffset, values.byteLength).copy(out);
  } else if (type === 'f16') {
    const halves = new Uint16Array(out.buffer, out.byteOffset, values.length);
    for (let i = 0; i < values.length; i++) halves[i] = float16Bits(values[i] ?? 0);
  } else if (type === 'q8_0') {
    encodeQ8_0(values, out);
  } else {
    encodeQ4_0(values, out);
  }
  return out;
}

/** ggml's quantize_row_q8_0_ref: per 32 values, scale d = max|x| / 127 (f16) and roundf(x / d) as int8 (halves away from zero, as C's roundf). */
function encodeQ8_0(values: Float32Array, out: Buffer): void {
  for (let b = 0; b < values.length / 32; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(values[b * 32 + j] ?? 0));
    const d = amax / 127;
    const id = d === 0 ? 0 : 1 / d;
    out.writeUInt16LE(float16Bits(d), b * 34);
    for (let j = 0; j < 32; j++) {
      const x = (values[b * 32 + j] ?? 0) * id;
      out.writeInt8(Math.sign(x) * Math.round(Math.abs(x)), b * 34 + 2 + j);
    }
  }
}

/**
 * ggml's quantize_row_q4_0_ref: per 32 values, d = (the value of largest magnitude) / -8 (f16),
 * and each value as min(15, trunc(x / d + 8.5)), the first 16 in the low nibbles and the last 16
 * in the high ones. Exact for 0 and for the block's extreme, which keeps the demo models' bias
 * channel and their never-emitted tokens' -1000 what they are.
 */
function encodeQ4_0(values: Float32Array, out: Buffer): void {
  for (let b = 0; b < values.length / 32; b++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const v = values[b * 32 + j] ?? 0;
      if (Math.abs(v) > amax) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = max / -8;
    const id = d === 0 ? 0 : 1 / d;
    out.writeUInt16LE(float16Bits(d), b * 18);
    for (let j = 0; j < 16; j++) {
      const low = Math.min(15, Math.trunc((values[b * 32 + j] ?? 0) * id + 8.5));
      const high = Math.min(15, Math.trunc((values[b * 32 + 16 + j] ?? 0) * id + 8.5));
      out.writeUInt8(low | (high << 4), b * 18 + 2 + j);
    }
  }
}
