// What the catalog needs to know from a GGUF header, read with node-llama-cpp's parser.
//
// Why node-llama-cpp's `readGgufFileInfo` and not our own reader: GGUF gains value types and
// architectures every few months, and a hand-written parser drifts silently. It reads only the
// header (metadata and tensor table), never the weights, and needs no native binary.
//
// A file that cannot be read is a value (`{ ok: false, error }`), not a throw: one corrupt
// download must not stop discovery of every other model, and the controller quarantines that
// one model with this sentence as its reason.
import { stat } from 'node:fs/promises';
import { GgufFileType, readGgufFileInfo, type GgufFileInfo } from 'node-llama-cpp';
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
  vocabulary: VocabularyFingerprint | null;
  /** A vision projector's (architecture "clip") image encoder shape, for its compute buffer. */
  vision: { imageSize: number; patchSize: number; embeddingLength: number; headCount: number } | null;
}

export type MetadataResult = { ok: true; facts: GgufFacts } | { ok: false; error: string };

/** Reads GGUF facts. Blocks on file I/O. Never rejects: every failure is a `{ ok: false }` naming the file. */
export type MetadataReader = (path: string) => Promise<MetadataResult>;

// Large arrays the catalog never reads; skipping them keeps a 150k-token GPT-2 vocabulary's
// merges (millions of strings) out of memory.
const IGNORED_KEYS = ['tokenizer.ggml.scores', 'tokenizer.ggml.token_type', 'tokenizer.ggml.merges'];

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

/**
 * How long one header may take. node-llama-cpp 3.21 reads past the end of a file as zeros, so
 * a file cut inside its header (a download stopped after a few bytes) can send it counting
 * through billions of zero-length keys; without a bound, that one file would hang discovery.
 * Real headers, 150k-token vocabularies included, read in well under a second.
 */
export const HEADER_READ_TIMEOUT_MS = 15_000;

/** Reads one file's facts, uncached. Never rejects. */
export async function readGgufFacts(path: string, options: { timeoutMs?: number } = {}): Promise<MetadataResult> {
  const timeoutMs = options.timeoutMs ?? HEADER_READ_TIMEOUT_MS;
  let info: GgufFileInfo;
  try {
    info = await readGgufFileInfo(path, {
      sourceType: 'filesystem',
      logWarnings: false,
      ignoreKeys: IGNORED_KEYS,
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const reason =
      (error as Error).name === 'TimeoutError'
        ? `its header could not be read within ${timeoutMs / 1000} s; the file is probably cut short or corrupt`
        : (error as Error).message.trim();
    return { ok: false, error: `${path}: not a readable GGUF model (${reason})` };
  }
  try {
    return { ok: true, facts: await factsOf(info) };
  } catch (error) {
    return { ok: false, error: `${path}: not a readable GGUF model (${(error as Error).message.trim()})` };
  }
}

/** A dotted key ("clip.vision.image_size") in node-llama-cpp's nested metadata object. */
function lookup(root: unknown, key: string): unknown {
  let node = root;
  for (const part of key.split('.')) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
}

function numberAt(root: unknown, key: string): number | null {
  const value = lookup(root, key);
  if (typeof value === 'bigint') return Number(value);
  // Some architectures store per-layer arrays (e.g. head_count_kv); the largest is the safe bound.
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'number')) return Math.max(...(value as number[]));
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

async function factsOf(info: GgufFileInfo): Promise<GgufFacts> {
  const metadata: unknown = info.metadata;
  const architecture = String(lookup(metadata, 'general.architecture') ?? 'unknown');
  const arch = (key: string) => numberAt(metadata, `${architecture}.${key}`);

  // Tensor data = each part's size minus its header; exact without a table of quant block sizes.
  let tensorDataBytes = 0;
  for (const source of info.sourceData) {
    if (source.type !== 'path') continue;
    const size = (await stat(source.path)).size;
    // The parser pads a short file with zeros instead of failing; a header that "ends" past
    // the end of the file is a download that stopped inside it.
    if (source.length > size) throw new Error(`the header needs ${source.length} bytes but the file has ${size}; the download is incomplete`);
    tensorDataBytes += size - source.length;
  }

  const embeddingLength = arch('embedding_length');
  const headCount = arch('attention.head_count');
  const headDim = embeddingLength !== null && headCount ? embeddingLength / headCount : null;
  const fileTypeNumber = numberAt(metadata, 'general.file_type');
  const tokens = lookup(metadata, 'tokenizer.ggml.tokens');
  const bool = (key: string) => {
    const v = lookup(metadata, key);
    return typeof v === 'boolean' ? v : null;
  };
  const imageSize = numberAt(metadata, 'clip.vision.image_size');
  const patchSize = numberAt(metadata, 'clip.vision.patch_size');
  const visionEmbd = numberAt(metadata, 'clip.vision.embedding_length');
  const visionHeads = numberAt(metadata, 'clip.vision.attention.head_count');

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
    fileType: fileTypeNumber === null ? null : (GgufFileType[fileTypeNumber] ?? `type ${fileTypeNumber}`),
    tensorDataBytes,
    vocabulary: Array.isArray(tokens)
      ? vocabularyFingerprint({
          model: String(lookup(metadata, 'tokenizer.ggml.model') ?? 'unknown'),
          tokens: tokens.map(String),
          bosId: numberAt(metadata, 'tokenizer.ggml.bos_token_id'),
          eosId: numberAt(metadata, 'tokenizer.ggml.eos_token_id'),
          addBos: bool('tokenizer.ggml.add_bos_token'),
        })
      : null,
    vision:
      imageSize && patchSize && visionEmbd && visionHeads
        ? { imageSize, patchSize, embeddingLength: visionEmbd, headCount: visionHeads }
        : null,
  };
}
