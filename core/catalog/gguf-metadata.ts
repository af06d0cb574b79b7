// What the catalog needs to know from a GGUF header: the shape, the vocabulary, and what each
// part of the weights costs. Read with our own header reader (gguf-reader.ts, which says why).
//
// A file that cannot be read is a value (`{ ok: false, error }`), not a throw: one corrupt
// download must not stop discovery of every other model, and the controller quarantines that
// one model with this sentence as its reason.
import { open, stat } from 'node:fs/promises';
import { fileTypeName } from './gguf-file-type.js';
import { GgufHeaderError, readGgufHeader, type GgufHeader, type GgufSource, type GgufValue } from './gguf-reader.js';
import { vocabularyFingerprint, type VocabularyFingerprint } from './vocabulary.js';

export interface GgufFacts {
  architecture: string;
  blockCount: number | null;
  embeddingLength: number | null;
  headCount: number | null;
  headCountKv: number | null;
  /** Per-head K and V widths; llama.cpp defaults both to embedding_length / head_count. */
  keyLength: number | null;
  valueLength: number | null;
  feedForwardLength: number | null;
  /** The context the model was trained for. */
  contextLength: number | null;
  /** general.file_type's name ("MOSTLY_Q4_K_M", "MOSTLY_F16"), or null when absent. */
  fileType: string | null;
  /** Bytes of tensor data in all parts: what loading the weights costs. */
  tensorDataBytes: number;
  /**
   * The tensor bytes of each repeating block (`blk.N.*`), by N, padding included: what the file
   * holds for it. Kept per block, not as one figure, because blocks can differ (a mixture of
   * experts whose first blocks are dense, interleaved dense and MoE blocks); the estimate
   * chooses what to make of them.
   */
  blockBytes: number[];
  /**
   * Of each block's bytes, its mixture-of-experts expert tensors: the ones llama.cpp's
   * `--n-cpu-moe` keeps on the CPU (`ffn_{up,down,gate,gate_up}_{,ch}exps`). All 0 for a dense model.
   */
  blockExpertBytes: number[];
  /** Bytes of the tensors outside the blocks: token embeddings, output and its norm, position embeddings… */
  nonBlockBytes: number;
  /**
   * The weight matrices llama.cpp may copy into one of the CPU's extra buffers (AMX,
   * CPU_REPACK) when they run on the CPU, bytes by ggml type number: every tensor of two or
   * more dimensions that a matrix multiplication reads, so not the input embeddings (a row
   * lookup). `blocks` by block N, `nonBlock` the rest (the output). Optional: facts cached by an
   * older reader lack it, and then nothing is repacked in the estimate.
   */
  cpuMatrixBytes?: CpuMatrixBytes;
  vocabulary: VocabularyFingerprint | null;
  /** A vision projector's (architecture "clip") image encoder shape, for its compute buffer. */
  vision: { imageSize: number; patchSize: number; embeddingLength: number; headCount: number } | null;
  /**
   * `<arch>.pooling_type` above 0 (mean, cls, last, rank: llama.cpp's LLAMA_POOLING_TYPE): the
   * model is made to embed, and llama-server must be started with --embeddings to serve it.
   * Absent in older readers' facts, hence optional.
   */
  pooling?: boolean;
}

/** Matrix bytes by ggml type number ("2" for q4_0), per block and outside the blocks. */
export interface CpuMatrixBytes {
  blocks: Record<string, number>[];
  nonBlock: Record<string, number>;
}

export type MetadataResult = { ok: true; facts: GgufFacts } | { ok: false; error: string };

/** Reads GGUF facts. Blocks on file I/O. Never rejects: every failure is a `{ ok: false }` naming the file. */
export type MetadataReader = (path: string) => Promise<MetadataResult>;

// Large arrays the catalog never reads, skipped without being kept: a 150k-token GPT-2
// vocabulary's merges are that many strings, and a T5 charsmap a few hundred thousand bytes.
// tokenizer.ggml.tokens stays: the vocabulary fingerprint is made of it.
const SKIPPED_KEYS: ReadonlySet<string> = new Set([
  'tokenizer.ggml.scores',
  'tokenizer.ggml.token_type',
  'tokenizer.ggml.merges',
  'tokenizer.ggml.precompiled_charsmap',
]);

/** The tensors `--n-cpu-moe` moves to the CPU: llama.cpp's LLM_FFN_EXPS_REGEX (common/common.h). */
const EXPERT_TENSOR = /\.ffn_(up|down|gate|gate_up)_(ch|)exps/;
const BLOCK_TENSOR = /^blk\.(\d+)\./;
/** llama.cpp's split file names (`llama_split_path`): `<prefix>-00001-of-00003.gguf`. */
const SPLIT_NAME = /-(\d{5})-of-(\d{5})\.gguf$/;

/**
 * A reader that remembers each file's facts until its size or mtime changes, so a rescan
 * after every config edit reads no header twice. Concurrent reads of one file share one read.
 */
export function cachedMetadataReader(read: MetadataReader = readGgufFacts): MetadataReader {
  const cache = new Map<string, { signature: string; result: Promise<MetadataResult> }>();
  return async (path) => {
    let signature: string;
    try {
      const info = await stat(path);
      signature = `${info.size}:${info.mtimeMs}`;
    } catch (error) {
      cache.delete(path);
      return { ok: false, error: `${path}: cannot read the model file: ${(error as Error).message}` };
    }
    const hit = cache.get(path);
    if (hit && hit.signature === signature) return hit.result;
    const result = read(path);
    cache.set(path, { signature, result });
    return result;
  };
}

/** A file that opened but is not a model the catalog can use; the message is the reason alone. */
class NotAModel extends Error {}

/**
 * Reads one model's facts, uncached; for a split model, `path` is its first part and the others
 * are found by name, as llama.cpp finds them. Never rejects.
 */
export async function readGgufFacts(path: string): Promise<MetadataResult> {
  try {
    return { ok: true, facts: factsOf(await readParts(path)) };
  } catch (error) {
    if (error instanceof NotAModel) return { ok: false, error: `${path}: not a readable GGUF model (${error.message})` };
    if (error instanceof GgufHeaderError) {
      const where = error.path === path ? '' : `its part ${error.path}: `;
      return { ok: false, error: `${path}: not a readable GGUF model (${where}${error.reason})` };
    }
    const message = (error as Error).message;
    // An I/O error (ENOENT, EACCES) names the file it is about in its own message.
    return { ok: false, error: `${path}: cannot read the model file: ${message}` };
  }
}

/**
 * One GGUF's facts from any source (a file elsewhere than on disk: a pull reads a header from the
 * Hub with Range requests, core/pull/remote-gguf.ts), its first part only for a split model: the
 * per-block figures then cover the blocks in that part. Never rejects.
 */
export async function readGgufFactsFrom(source: GgufSource, path: string): Promise<MetadataResult> {
  try {
    return { ok: true, facts: factsOf([await readGgufHeader(source, path, { skipKeys: SKIPPED_KEYS })]) };
  } catch (error) {
    if (error instanceof GgufHeaderError) return { ok: false, error: `${path}: not a readable GGUF model (${error.reason})` };
    return { ok: false, error: `${path}: cannot read the model's header: ${(error as Error).message}` };
  }
}

async function readHeader(path: string): Promise<GgufHeader> {
  const file = await open(path, 'r');
  try {
    return await readGgufHeader(file, path, { skipKeys: SKIPPED_KEYS });
  } finally {
    await file.close();
  }
}

/**
 * The headers of every part of the model, the first part first. Why check each part's number
 * and the tensor count: a part from another download of the same name loads into nonsense or
 * fails late in llama.cpp; here it is a sentence naming the part.
 */
async function readParts(path: string): Promise<GgufHeader[]> {
  const first = await readHeader(path);
  const count = integerOf(first.metadata.get('split.count')) ?? 1;
  const no = integerOf(first.metadata.get('split.no')) ?? 0;
  if (no !== 0) throw new NotAModel(`it is part ${no + 1} of a split model; a split model is loaded by its first part`);
  if (count <= 1) return [first];
  const name = SPLIT_NAME.exec(path);
  if (name === null || Number(name[1]) !== 1 || Number(name[2]) !== count) {
    throw new NotAModel(`it is part 1 of ${count}, but its name does not end in -00001-of-${String(count).padStart(5, '0')}.gguf, so its other parts cannot be found`);
  }
  const prefix = path.slice(0, name.index);
  const parts = [first];
  for (let i = 2; i <= count; i++) {
    const partPath = `${prefix}-${String(i).padStart(5, '0')}-of-${name[2]}.gguf`;
    const part = await readHeader(partPath);
    const partNo = integerOf(part.metadata.get('split.no'));
    if (partNo !== i - 1) throw new NotAModel(`its part ${partPath} says it is part ${partNo === null ? '(none)' : partNo + 1}, not ${i}; it belongs to another model`);
    parts.push(part);
  }
  const declared = integerOf(first.metadata.get('split.tensors.count'));
  const held = parts.reduce((sum, part) => sum + part.tensors.length, 0);
  if (declared !== null && declared !== held) throw new NotAModel(`its ${count} parts hold ${held} tensors, but split.tensors.count says ${declared}; a part is from another download`);
  return parts;
}

/** An integer-valued scalar (any integer width), or null. */
function integerOf(value: GgufValue | undefined): number | null {
  if (typeof value === 'bigint') return Number(value);
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/** A number, or for a per-layer array (some architectures store head_count_kv so) its largest: the safe bound. */
function numberOf(value: GgufValue | undefined): number | null {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'number' || typeof v === 'bigint')) {
    return Math.max(...value.map(Number));
  }
  return null;
}

/** The input embeddings: llama.cpp reads rows of them (get_rows), which no extra buffer takes. */
const INPUT_EMBEDDINGS = 'token_embd.weight';

/** The bytes of each block, its experts' share, and the rest, over every part's tensors. */
function layerBytes(parts: readonly GgufHeader[]): Pick<GgufFacts, 'blockBytes' | 'blockExpertBytes' | 'nonBlockBytes' | 'cpuMatrixBytes'> {
  const tensorCount = parts.reduce((sum, part) => sum + part.tensors.length, 0);
  const blockBytes: number[] = [];
  const blockExpertBytes: number[] = [];
  let nonBlockBytes = 0;
  const cpuMatrixBytes: CpuMatrixBytes = { blocks: [], nonBlock: {} };
  const addMatrix = (into: Record<string, number>, tensor: GgufHeader['tensors'][number]) => {
    if (tensor.dims.filter((d) => d > 1).length < 2 || tensor.name === INPUT_EMBEDDINGS) return;
    into[tensor.ggmlType] = (into[tensor.ggmlType] ?? 0) + tensor.bytes;
  };
  for (const tensor of parts.flatMap((part) => part.tensors)) {
    const block = BLOCK_TENSOR.exec(tensor.name);
    if (block === null) {
      nonBlockBytes += tensor.bytes;
      addMatrix(cpuMatrixBytes.nonBlock, tensor);
      continue;
    }
    const index = Number(block[1]);
    // Each block has at least one tensor, so its number is below the tensor count; a larger one
    // is a corrupt name, and trusting it would size an array by it.
    if (index >= tensorCount) throw new NotAModel(`tensor '${tensor.name}' names block ${index}, but the model has only ${tensorCount} tensors`);
    while (blockBytes.length <= index) {
      blockBytes.push(0);
      blockExpertBytes.push(0);
      cpuMatrixBytes.blocks.push({});
    }
    blockBytes[index] = (blockBytes[index] ?? 0) + tensor.bytes;
    if (EXPERT_TENSOR.test(tensor.name)) blockExpertBytes[index] = (blockExpertBytes[index] ?? 0) + tensor.bytes;
    addMatrix(cpuMatrixBytes.blocks[index] as Record<string, number>, tensor);
  }
  return { blockBytes, blockExpertBytes, nonBlockBytes, cpuMatrixBytes };
}

function factsOf(parts: readonly GgufHeader[]): GgufFacts {
  const metadata = (parts[0] as GgufHeader).metadata;
  const get = (key: string) => metadata.get(key);
  const architecture = typeof get('general.architecture') === 'string' ? (get('general.architecture') as string) : 'unknown';
  const arch = (key: string) => numberOf(get(`${architecture}.${key}`));

  const embeddingLength = arch('embedding_length');
  const headCount = arch('attention.head_count');
  const headDim = embeddingLength !== null && headCount ? embeddingLength / headCount : null;
  const fileTypeNumber = integerOf(get('general.file_type'));
  const tokens = get('tokenizer.ggml.tokens');
  const bool = (key: string) => {
    const v = get(key);
    return typeof v === 'boolean' ? v : null;
  };
  const imageSize = numberOf(get('clip.vision.image_size'));
  const patchSize = numberOf(get('clip.vision.patch_size'));
  const visionEmbd = numberOf(get('clip.vision.embedding_length'));
  const visionHeads = numberOf(get('clip.vision.attention.head_count'));

  return {
    architecture,
    blockCount: arch('block_count'),
    embeddingLength,
    headCount,
    headCountKv: arch('attention.head_count_kv') ?? headCount,
    keyLength: arch('attention.key_length') ?? headDim,
    valueLength: arch('attention.value_length') ?? headDim,
    feedForwardLength: arch('feed_forward_length'),
    contextLength: arch('context_length'),
    fileType: fileTypeNumber === null ? null : fileTypeName(fileTypeNumber),
    // What each part holds after its header: exact without a table of quant block sizes, and
    // for a download cut inside its tensor data, what is on disk.
    tensorDataBytes: parts.reduce((sum, part) => sum + part.dataBytes, 0),
    ...layerBytes(parts),
    vocabulary: Array.isArray(tokens)
      ? vocabularyFingerprint({
          model: typeof get('tokenizer.ggml.model') === 'string' ? (get('tokenizer.ggml.model') as string) : 'unknown',
          tokens: tokens.map(String),
          bosId: numberOf(get('tokenizer.ggml.bos_token_id')),
          eosId: numberOf(get('tokenizer.ggml.eos_token_id')),
          addBos: bool('tokenizer.ggml.add_bos_token'),
        })
      : null,
    pooling: (arch('pooling_type') ?? 0) > 0,
    vision:
      imageSize && patchSize && visionEmbd && visionHeads
        ? { imageSize, patchSize, embeddingLength: visionEmbd, headCount: visionHeads }
        : null,
  };
}
