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

export type GgufValue =
  | { kind: 'u32'; value: number }
  | { kind: 'f32'; value: number }
  | { kind: 'bool'; value: boolean }
  | { kind: 'string'; value: string }
  | { kind: 'string[]'; value: readonly string[] }
  | { kind: 'f32[]'; value: readonly number[] }
  | { kind: 'i32[]'; value: readonly number[] };

export type GgmlTensorType = 'f32' | 'f16';

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

const VALUE_TYPE = { u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9 } as const;
const GGML_TYPE: Record<GgmlTensorType, number> = { f32: 0, f16: 1 };
const BYTES_PER_ELEMENT: Record<GgmlTensorType, number> = { f32: 4, f16: 2 };

export function alignUp(n: number, alignment = GGUF_ALIGNMENT): number {
  return Math.ceil(n / alignment) * alignment;
}

export function tensorByteLength(info: GgufTensorInfo): number {
  return info.dims.reduce((a, b) => a * b, 1) * BYTES_PER_ELEMENT[info.type];
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
  u64(v: number): void { this.reserve(8); this.buf.writeBigUInt64LE(BigInt(v), this.len); this.len += 8; }
  f32(v: number): void { this.reserve(4); this.buf.writeFloatLE(v, this.len); this.len += 4; }
  u8(v: number): void { this.reserve(1); this.buf.writeUInt8(v, this.len); this.len += 1; }
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

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.kind) {
    case 'u32': sink.u32(VALUE_TYPE.u32); sink.u32(v.value); return;
    case 'f32': sink.u32(VALUE_TYPE.f32); sink.f32(v.value); return;
    case 'bool': sink.u32(VALUE_TYPE.bool); sink.u8(v.value ? 1 : 0); return;
    case 'string': sink.u32(VALUE_TYPE.string); sink.string(v.value); return;
    case 'string[]':
      sink.u32(VALUE_TYPE.array); sink.u32(VALUE_TYPE.string); sink.u64(v.value.length);
      for (const s of v.value) sink.string(s);
      return;
    case 'f32[]':
      sink.u32(VALUE_TYPE.array); sink.u32(VALUE_TYPE.f32); sink.u64(v.value.length);
      for (const x of v.value) sink.f32(x);
      return;
    case 'i32[]':
      sink.u32(VALUE_TYPE.array); sink.u32(VALUE_TYPE.i32); sink.u64(v.value.length);
      for (const x of v.value) sink.i32(x);
      return;
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
  const bytes = values.length * BYTES_PER_ELEMENT[type];
  const out = Buffer.alloc(alignUp(bytes));
  if (type === 'f32') {
    Buffer.from(values.buffer, values.byteOffset, values.byteLength).copy(out);
  } else {
    const halves = new Uint16Array(out.buffer, out.byteOffset, values.length);
    for (let i = 0; i < values.length; i++) halves[i] = float16Bits(values[i] ?? 0);
  }
  return out;
}
