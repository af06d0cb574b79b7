// Reads the header of one GGUF file — its metadata and its tensor table — and none of the weights.
//
// Why our own reader and not node-llama-cpp's `readGgufFileInfo`, which the catalog used before:
// importing node-llama-cpp cost the daemon about 40 MB of memory only to read headers; it reads
// past the end of a file as zeros, so a download cut inside its header parsed into nonsense or
// counted through billions of zero-length keys (a 15 s timeout was all that stopped it); and it
// does not say how large each tensor is, which costing a model layer by layer needs. The format
// itself (versions 2 and 3) has not changed since 2023: new models bring new keys and tensor
// names, not new syntax. A test reads the same files with both readers and compares them.
//
// Tensor sizes without a table of quantisation block sizes: llama.cpp lays tensors out in the
// data section at aligned offsets, so a tensor's size is the distance from its offset to the
// next one (the last: to the end of the file). That includes the alignment padding, which is
// what the file holds and what a mapped buffer of those tensors spans.
//
// Hostile input is bounded by bytes, never by time: every count is checked against the bytes
// that could hold it before a loop starts, every string against the bytes left, and the whole
// header against MAX_HEADER_BYTES. A header that claims 4 billion keys or a 2^60-byte string is
// an error after a few reads, and nothing is allocated that the file does not back.

/** What the reader needs of an open file; node:fs/promises' FileHandle is one. */
export interface GgufSource {
  /** Reads up to `length` bytes at `position` into `buffer` at `offset`. Blocks on I/O. */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  stat(): Promise<{ size: number }>;
}

/** A metadata value: numbers for 8- to 32-bit integers and floats, bigints for 64-bit integers. */
export type GgufScalar = number | bigint | boolean | string;
/** GGUF arrays hold one scalar type each; llama.cpp refuses arrays of arrays, and so does this reader. */
export type GgufValue = GgufScalar | GgufScalar[];

export interface GgufTensor {
  name: string;
  /** Dimensions innermost first, as GGUF lists them: [columns, rows] for a matrix. */
  dims: number[];
  /** The ggml type number (0 f32, 1 f16, 8 q8_0, 12 q4_K, …); not interpreted here. */
  ggmlType: number;
  /** Where its data starts, from the start of the data section. */
  offset: number;
  /**
   * Bytes from its offset to the next tensor's, or to the end of the file for the last: its
   * data and the alignment padding after it. 0 for a tensor that starts past the end of a file
   * cut short.
   */
  bytes: number;
}

export interface GgufHeader {
  /** 2 or 3 (the same layout; version 1 is refused). */
  version: number;
  /** Every key-value pair, in file order, except the keys the caller asked to skip. */
  metadata: Map<string, GgufValue>;
  /** The tensor table in file order. */
  tensors: GgufTensor[];
  /** general.alignment, or GGUF's default of 32. */
  alignment: number;
  /** Where the data section starts in the file: the header's size, padding included. */
  dataOffset: number;
  /** What the file holds after the header: its size minus dataOffset. */
  dataBytes: number;
}

export interface ReadGgufHeaderOptions {
  /**
   * Keys whose values are read past without being kept: a large tokenizer array the caller
   * never reads (150k-token merges are millions of strings) then costs no memory.
   */
  skipKeys?: ReadonlySet<string>;
}

/** A header that cannot be read; the message names the file and says what was wrong. */
export class GgufHeaderError extends Error {
  constructor(
    readonly path: string,
    readonly reason: string,
  ) {
    super(`${path}: ${reason}`);
    this.name = 'GgufHeaderError';
  }
}

const MiB = 1024 * 1024;
/**
 * The most a header may take. The largest real ones (a 262k-token vocabulary, or 150k tokens
 * with their merges) are under 10 MiB; 64 MiB leaves room for models to come while bounding
 * what a corrupt file can make us read.
 */
export const MAX_HEADER_BYTES = 64 * MiB;
/**
 * The most array elements the reader keeps, all arrays together. A vocabulary is at most a
 * few hundred thousand tokens; the cap bounds the memory a hostile header costs (a string
 * element is 8 bytes in the file but tens in memory).
 */
export const MAX_KEPT_ELEMENTS = 4 * MiB;
const DEFAULT_ALIGNMENT = 32;
/** GGML_MAX_DIMS and GGML_MAX_NAME: llama.cpp refuses a tensor with more dimensions or a longer name. */
const MAX_DIMS = 4;
const MAX_NAME_BYTES = 63;
const READ_CHUNK_BYTES = MiB;

const ARRAY = 9;
const STRING = 8;
/** gguf_type → its name and fixed size in bytes (a string's is its 8-byte length, the least it can take). */
const VALUE_TYPES: Record<number, { name: string; bytes: number }> = {
  0: { name: 'u8', bytes: 1 },
  1: { name: 'i8', bytes: 1 },
  2: { name: 'u16', bytes: 2 },
  3: { name: 'i16', bytes: 2 },
  4: { name: 'u32', bytes: 4 },
  5: { name: 'i32', bytes: 4 },
  6: { name: 'f32', bytes: 4 },
  7: { name: 'bool', bytes: 1 },
  8: { name: 'string', bytes: 8 },
  10: { name: 'u64', bytes: 8 },
  11: { name: 'i64', bytes: 8 },
  12: { name: 'f64', bytes: 8 },
};
/** The least a key-value pair takes (a 1-byte key, its type, a 1-byte value) and a tensor info (an empty name, 0 dims, type, offset). */
const MIN_KV_BYTES = 8 + 1 + 4 + 1;
const MIN_TENSOR_INFO_BYTES = 8 + 4 + 4 + 8;

/**
 * Reads the header of the GGUF file open as `source`; `path` is for messages only. Reads the
 * header's bytes and no more; never closes the source. Rejects with a GgufHeaderError naming
 * the file and what was wrong (not GGUF, an unsupported version, cut short, corrupt), or with
 * the I/O error as it came.
 */
export async function readGgufHeader(source: GgufSource, path: string, options: ReadGgufHeaderOptions = {}): Promise<GgufHeader> {
  const skipKeys = options.skipKeys ?? new Set<string>();
  const { size } = await source.stat();
  const c: Cursor = new Cursor(source, path, size);

  const magic = await c.bytes(4, 'the GGUF magic');
  if (magic.toString('latin1') !== 'GGUF') c.fail(`not a GGUF file: it starts with ${describeBytes(magic)}, not "GGUF"`);
  const version = await c.u32('the GGUF version');
  // A big-endian file's version reads as 0x03000000 here (llama.cpp's own test).
  if (version !== 0 && (version & 0xffff) === 0) c.fail(`GGUF version ${version} reads byte-swapped: a big-endian GGUF, which this machine cannot load`);
  if (version === 1) c.fail('GGUF version 1, which llama.cpp no longer loads; the model must be converted again');
  if (version !== 2 && version !== 3) c.fail(`GGUF version ${version}; llama.cpp loads versions 2 and 3`);

  const tensorCount = await c.u64('the tensor count');
  const kvCount = await c.u64('the key-value count');
  c.fits(kvCount * BigInt(MIN_KV_BYTES) + tensorCount * BigInt(MIN_TENSOR_INFO_BYTES), `a header of ${kvCount} key-value pairs and ${tensorCount} tensors`);

  const metadata = new Map<string, GgufValue>();
  const seenKeys = new Set<string>();
  let alignment = DEFAULT_ALIGNMENT;
  for (let i = 0; i < Number(kvCount); i++) {
    const key = await c.string(`the name of key ${i}`);
    if (key === '') c.fail(`key ${i} has an empty name`);
    if (seenKeys.has(key)) c.fail(`key '${key}' appears twice`);
    seenKeys.add(key);
    const type = await c.u32(`the type of key '${key}'`);
    const keep = !skipKeys.has(key);
    const value = type === ARRAY ? await readArray(c, key, keep) : await readScalar(c, type, `key '${key}'`, keep);
    if (key === 'general.alignment') {
      // llama.cpp accepts only a u32 power of two here, and the tensor offsets depend on it.
      if (type !== 4 || typeof value !== 'number' || value === 0 || (value & (value - 1)) !== 0) {
        c.fail(`general.alignment must be a u32 power of two, got ${type === ARRAY ? 'an array' : `${VALUE_TYPES[type]?.name} ${String(value)}`}`);
      }
      alignment = value;
    }
    if (keep && value !== undefined) metadata.set(key, value);
  }

  const tensors: GgufTensor[] = [];
  const names = new Set<string>();
  for (let i = 0; i < Number(tensorCount); i++) {
    const name = await c.string(`the name of tensor ${i}`, MAX_NAME_BYTES);
    if (names.has(name)) c.fail(`tensor '${name}' appears twice`);
    names.add(name);
    const nDims = await c.u32(`the dimension count of tensor '${name}'`);
    if (nDims > MAX_DIMS) c.fail(`tensor '${name}' has ${nDims} dimensions; ggml allows at most ${MAX_DIMS}`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(c.safe(await c.u64(`dimension ${d} of tensor '${name}'`), `dimension ${d} of tensor '${name}'`));
    const ggmlType = await c.u32(`the type of tensor '${name}'`);
    const offset = c.safe(await c.u64(`the data offset of tensor '${name}'`), `the data offset of tensor '${name}'`);
    if (offset % alignment !== 0) c.fail(`tensor '${name}' starts at offset ${offset}, which is not a multiple of the alignment (${alignment})`);
    tensors.push({ name, dims, ggmlType, offset, bytes: 0 });
  }

  // llama.cpp pads to the alignment only when there is tensor data to align.
  const dataOffset = tensors.length > 0 ? Math.ceil(c.pos / alignment) * alignment : c.pos;
  if (dataOffset > size) c.fail(`the file ends at byte ${size}, inside the padding before its tensor data (which starts at byte ${dataOffset}); the download is incomplete`);
  const dataBytes = size - dataOffset;
  sizeTensors(tensors, dataBytes);
  return { version, metadata, tensors, alignment, dataOffset, dataBytes };
}

/**
 * Each tensor's bytes: to the next offset, the last to the end of the data. Clamped to what the
 * file holds, so a file cut inside its tensor data gives the tensors past the cut 0 bytes and
 * the sizes still add up to what is on disk.
 */
function sizeTensors(tensors: GgufTensor[], dataBytes: number): void {
  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
  byOffset.forEach((tensor, i) => {
    const start = Math.min(tensor.offset, dataBytes);
    const end = Math.min(byOffset[i + 1]?.offset ?? dataBytes, dataBytes);
    tensor.bytes = end - start;
  });
}

/** A scalar value; a string not kept is read past (a chat template can be long) and is undefined. */
async function readScalar(c: Cursor, type: number, what: string, keep: boolean): Promise<GgufScalar | undefined> {
  const spec = VALUE_TYPES[type];
  if (spec === undefined) c.fail(`${what} has value type ${type}, which GGUF does not define`);
  if (type === STRING && !keep) {
    c.skip(c.fits(await c.u64(`the length of ${what}`), `${what} (a string)`), what);
    return undefined;
  }
  if (type === STRING) return c.string(what);
  const b = await c.bytes(spec.bytes, what);
  return decodeFixed(b, 0, type);
}

function decodeFixed(b: Buffer, at: number, type: number): number | bigint | boolean {
  switch (type) {
    case 0: return b.readUInt8(at);
    case 1: return b.readInt8(at);
    case 2: return b.readUInt16LE(at);
    case 3: return b.readInt16LE(at);
    case 4: return b.readUInt32LE(at);
    case 5: return b.readInt32LE(at);
    case 6: return b.readFloatLE(at);
    case 7: return b.readUInt8(at) !== 0;
    case 10: return b.readBigUInt64LE(at);
    case 11: return b.readBigInt64LE(at);
    default: return b.readDoubleLE(at);
  }
}

/** An array value; undefined (read past, nothing kept) when `keep` is false. */
async function readArray(c: Cursor, key: string, keep: boolean): Promise<GgufScalar[] | undefined> {
  const type = await c.u32(`the element type of key '${key}'`);
  if (type === ARRAY) c.fail(`key '${key}' is an array of arrays, which llama.cpp refuses to load`);
  const spec = VALUE_TYPES[type];
  if (spec === undefined) c.fail(`key '${key}' is an array of value type ${type}, which GGUF does not define`);
  const claimed = await c.u64(`the length of key '${key}'`);
  const count = c.fits(claimed * BigInt(spec.bytes), `key '${key}' (an array of ${claimed} ${spec.name} values)`) / spec.bytes;
  if (!keep) {
    if (type !== STRING) c.skip(count * spec.bytes, `key '${key}'`);
    else for (let i = 0; i < count; i++) if (c.stringNow(false) === undefined) await c.skipString(`string ${i} of key '${key}'`);
    return undefined;
  }
  c.keep(count, key);
  const values: GgufScalar[] = new Array<GgufScalar>(count);
  if (type === STRING) {
    for (let i = 0; i < count; i++) values[i] = c.stringNow(true) ?? (await c.string(`string ${i} of key '${key}'`));
  } else {
    const b = await c.bytes(count * spec.bytes, `key '${key}'`);
    for (let i = 0; i < count; i++) values[i] = decodeFixed(b, i * spec.bytes, type);
  }
  return values;
}

/** "0x7f 0x45 0x4c 0x46" for bytes that are not text, the text itself when they are. */
function describeBytes(b: Buffer): string {
  const text = b.toString('latin1');
  return /^[\x20-\x7e]*$/.test(text) ? JSON.stringify(text) : [...b].map((x) => `0x${x.toString(16).padStart(2, '0')}`).join(' ');
}

/**
 * A read position over the header, with the bounds every read is checked against. Reads the
 * file in 1 MiB chunks, so a header of a few MiB costs a few reads, not one per value.
 */
class Cursor {
  pos = 0;
  private chunk = Buffer.alloc(0);
  private chunkStart = 0;
  private kept = 0;
  /** The header may not go past this: the end of the file or MAX_HEADER_BYTES, whichever comes first. */
  private readonly limit: number;

  constructor(
    private readonly source: GgufSource,
    private readonly path: string,
    private readonly fileSize: number,
  ) {
    this.limit = Math.min(fileSize, MAX_HEADER_BYTES);
  }

  fail(reason: string): never {
    throw new GgufHeaderError(this.path, reason);
  }

  /**
   * `bytes` as a number once it is known to fit in what the header has left; `what` begins the
   * sentence that says it does not ("key 'x' (an array of 9 u32 values)" … "needs at least 36 bytes").
   */
  fits(bytes: bigint, what: string): number {
    const room = this.limit - this.pos;
    if (bytes <= BigInt(room)) return Number(bytes);
    this.fail(`${what} needs at least ${bytes} bytes, but ${this.roomWords(room)}; the file is corrupt or cut short`);
  }

  /** A u64 that must be an exact JavaScript number (dimensions, offsets). */
  safe(value: bigint, what: string): number {
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(`${what} is ${value}, more than any real file can hold; the file is corrupt`);
    return Number(value);
  }

  /** Counts `count` more elements against MAX_KEPT_ELEMENTS. */
  keep(count: number, key: string): void {
    this.kept += count;
    if (this.kept > MAX_KEPT_ELEMENTS) this.fail(`key '${key}' brings the array elements to keep to ${this.kept}, more than the ${MAX_KEPT_ELEMENTS} any model's header needs; the file is corrupt`);
  }

  skip(n: number, what: string): void {
    this.within(n, what);
    this.pos += n;
  }

  async bytes(n: number, what: string): Promise<Buffer> {
    await this.need(n, what);
    const at = this.pos - this.chunkStart;
    this.pos += n;
    return this.chunk.subarray(at, at + n);
  }

  async u32(what: string): Promise<number> {
    return (await this.bytes(4, what)).readUInt32LE(0);
  }

  async u64(what: string): Promise<bigint> {
    return (await this.bytes(8, what)).readBigUInt64LE(0);
  }

  /** A GGUF string: a u64 byte length, then UTF-8 (not checked, as llama.cpp does not). */
  async string(what: string, maxBytes?: number): Promise<string> {
    const claimed = await this.u64(`the length of ${what}`);
    if (maxBytes !== undefined && claimed > BigInt(maxBytes)) this.fail(`${what} is ${claimed} bytes long; llama.cpp allows at most ${maxBytes}`);
    const n = this.fits(claimed, `${what} (a string)`);
    return (await this.bytes(n, what)).toString('utf8');
  }

  async skipString(what: string): Promise<void> {
    this.skip(this.fits(await this.u64(`the length of ${what}`), `${what} (a string)`), what);
  }

  /**
   * The next string (or '' when not `decode`d) if the chunk already holds all of it, else
   * undefined and nothing read. The fast path for the 150k strings of a vocabulary: no trip
   * through the event loop for each; the checked path (`string`) handles everything else.
   */
  stringNow(decode: boolean): string | undefined {
    const at = this.pos - this.chunkStart;
    if (at < 0 || at + 8 > this.chunk.length) return undefined;
    const length = this.chunk.readUInt32LE(at);
    if (this.chunk.readUInt32LE(at + 4) !== 0 || length > this.chunk.length - at - 8) return undefined;
    this.pos += 8 + length;
    return decode ? this.chunk.toString('utf8', at + 8, at + 8 + length) : '';
  }

  private roomWords(room: number): string {
    return this.limit < this.fileSize ? `a header may take at most ${MAX_HEADER_BYTES / MiB} MiB and only ${room} bytes of that are left` : `the file has only ${room} bytes left`;
  }

  private within(n: number, what: string): void {
    if (this.pos + n <= this.limit) return;
    if (this.pos + n > this.fileSize) this.fail(`the file ends at byte ${this.fileSize}, inside its header (${what}); the download is incomplete or it is not a model`);
    this.fail(`its header goes on past ${MAX_HEADER_BYTES / MiB} MiB (${what}), more than any model's; the file is corrupt`);
  }

  /** Makes [pos, pos + n) readable from the chunk, reading a new chunk from pos when it is not. */
  private async need(n: number, what: string): Promise<void> {
    if (this.pos >= this.chunkStart && this.pos + n <= this.chunkStart + this.chunk.length) return;
    this.within(n, what);
    const length = Math.min(Math.max(n, READ_CHUNK_BYTES), this.limit - this.pos);
    const buffer = Buffer.allocUnsafe(length);
    let filled = 0;
    while (filled < length) {
      const { bytesRead } = await this.source.read(buffer, filled, length - filled, this.pos + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    // The size came from stat(): a file that is shorter now is being written or cut under us.
    if (filled < n) this.fail(`the file ended at byte ${this.pos + filled} while its header was read (${what}), shorter than the ${this.fileSize} bytes it had; it is being written or truncated`);
    this.chunk = buffer.subarray(0, filled);
    this.chunkStart = this.pos;
  }
}
