// A model file's header as Ollama's `/api/show` and `/api/tags` quote it (the router's
// ModelCard.gguf): every key with its value, the architecture, the quantization, the count of
// weights and the chat template. Read apart from gguf-metadata.ts's facts because those keep
// only what estimates need, and `/api/show` quotes every key; cached by the file's size and
// mtime, as the facts are, so listing models reads no header twice.
import { open, stat } from 'node:fs/promises';
import { fileTypeName } from './gguf-file-type.js';
import { readGgufHeader, type GgufHeader, type GgufValue } from './gguf-reader.js';

export interface GgufCard {
  architecture: string;
  /** general.file_type's name without llama.cpp's MOSTLY_ ("Q4_K_M", "F16"); null when absent. */
  fileType: string | null;
  /** Every tensor's elements added up. */
  parameterCount: number;
  /** The header's keys: 64-bit integers as numbers; arrays as null unless read `verbose`. */
  metadata: Record<string, unknown>;
  /** tokenizer.chat_template (Jinja); null when the model has none. */
  chatTemplate: string | null;
}

/** The card of the file at `path` (null when it cannot be read) and when the file last changed (epoch ms; 0 unknown). Never rejects. */
export type GgufCardReader = (path: string, options: { verbose: boolean }) => Promise<{ card: GgufCard | null; modifiedAt: number }>;

/** Arrays a plain card leaves out, never read: a vocabulary's tokens, scores and merges are hundreds of thousands of values. */
const SKIPPED_UNLESS_VERBOSE: ReadonlySet<string> = new Set(['tokenizer.ggml.scores', 'tokenizer.ggml.token_type', 'tokenizer.ggml.merges', 'tokenizer.ggml.tokens', 'tokenizer.ggml.precompiled_charsmap']);

export function cachedGgufCardReader(): GgufCardReader {
  const cache = new Map<string, { signature: string; card: Promise<GgufCard | null> }>();
  return async (path, { verbose }) => {
    const info = await stat(path).catch(() => null);
    if (info === null) return { card: null, modifiedAt: 0 };
    const key = `${verbose ? 'verbose' : 'plain'}:${path}`;
    const signature = `${info.size}:${info.mtimeMs}`;
    let hit = cache.get(key);
    if (hit === undefined || hit.signature !== signature) {
      hit = { signature, card: readCard(path, verbose) };
      cache.set(key, hit);
    }
    return { card: await hit.card, modifiedAt: info.mtimeMs };
  };
}

async function readCard(path: string, verbose: boolean): Promise<GgufCard | null> {
  try {
    const file = await open(path, 'r');
    try {
      return cardOf(await readGgufHeader(file, path, verbose ? {} : { skipKeys: SKIPPED_UNLESS_VERBOSE }), verbose);
    } finally {
      await file.close();
    }
  } catch {
    // A file that cannot be read has no card; the catalog's metadataError says why, in /v1/models and the snapshot.
    return null;
  }
}

export function cardOf(header: GgufHeader, verbose: boolean): GgufCard {
  const metadata: Record<string, unknown> = {};
  for (const [key, value] of header.metadata) metadata[key] = Array.isArray(value) ? (verbose ? value.map(jsonScalar) : null) : jsonScalar(value);
  const fileType = header.metadata.get('general.file_type');
  const template = header.metadata.get('tokenizer.chat_template');
  const architecture = header.metadata.get('general.architecture');
  return {
    architecture: typeof architecture === 'string' ? architecture : 'unknown',
    fileType: typeof fileType === 'number' ? fileTypeName(fileType).replace(/^MOSTLY_|^ALL_/, '') : null,
    parameterCount: header.tensors.reduce((sum, tensor) => sum + tensor.dims.reduce((product, dim) => product * dim, 1), 0),
    metadata,
    chatTemplate: typeof template === 'string' ? template : null,
  };
}

/** A GGUF value as JSON: 64-bit integers as numbers, as Ollama's model_info says them. */
function jsonScalar(value: GgufValue): unknown {
  return typeof value === 'bigint' ? Number(value) : value;
}
