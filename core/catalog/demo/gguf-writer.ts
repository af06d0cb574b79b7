// Writes small, valid llama-architecture GGUF models with deterministic random weights.
//
// Why we write our own: no npm package writes GGUF tensors, the project's machines cannot
// download real models, and the engines, the footprint estimates and the failure tests all
// need real files that llama.cpp loads and runs.
//
// The one design decision that matters: the output must be printable ASCII. A real
// llama-server rejects a completion that is not valid UTF-8, and a random model would emit
// lone bytes >= 0x80 sooner or later. So dimension 0 of the residual stream is a constant
// "bias channel": every token embedding has 1 there, and no block writes to it (row 0 of
// attn_output and ffn_down is zero, and the block norms ignore it). After output_norm that
// channel is always clearly positive, and every token the model must never emit has
// -NEVER_LOGIT in column 0 of output.weight and zero elsewhere, while emittable tokens have 0
// in column 0 and random weights elsewhere. Their logits sit hundreds below every emittable
// token's, whatever the context, temperature or sampler.
import { open, rename, rm } from 'node:fs/promises';
import { encodeTensorData, layoutGguf, type GgmlTensorType, type GgufTensorInfo, type GgufValue } from './gguf-encoder.js';
import { seededRandom, seedFor } from './seeded-random.js';
import { CHAT_TEMPLATE, spmVocab, type SpmVocab } from './spm-vocab.js';

export interface LlamaModelShape {
  name: string;
  nLayer: number;
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  nFf: number;
  contextLength: number;
  /** The matrices' type; norms are f32 whatever this says, as llama.cpp's converters write them. */
  fileType: 'f32' | 'f16' | 'q8_0' | 'q4_0';
  seed: number;
}

/** llama_ftype: ALL_F32, MOSTLY_F16, MOSTLY_Q4_0, MOSTLY_Q8_0. */
const FILE_TYPE: Record<LlamaModelShape['fileType'], number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 7 };
const NEVER_LOGIT = 1000;
/** How far below the emittable tokens a reluctant token's logit sits (spm-vocab.ts): out of a sampler's reach, within logit_bias's. */
const RELUCTANT_LOGIT = 20;
/** Spread of the emittable tokens' output weights: enough logit variety for varied text. */
const OUTPUT_WEIGHT_AMPLITUDE = 0.6;
const RMS_EPSILON = 1e-5;

/** Why a shape cannot make a valid model, or undefined when it can. */
export function invalidShapeReason(shape: LlamaModelShape): string | undefined {
  const positive = ['nLayer', 'nEmbd', 'nHead', 'nHeadKv', 'nFf', 'contextLength'] as const;
  for (const k of positive) {
    if (!Number.isInteger(shape[k]) || shape[k] < 1) return `${k} must be a positive integer, got ${shape[k]}`;
  }
  if (shape.nEmbd % shape.nHead !== 0) return `nEmbd (${shape.nEmbd}) must be a multiple of nHead (${shape.nHead})`;
  if (shape.nHead % shape.nHeadKv !== 0) return `nHead (${shape.nHead}) must be a multiple of nHeadKv (${shape.nHeadKv})`;
  if ((shape.nEmbd / shape.nHead) % 2 !== 0) return `head size nEmbd/nHead (${shape.nEmbd / shape.nHead}) must be even for RoPE`;
  // Every matrix row is nEmbd or nFf values long, and a q8_0 or q4_0 row is whole blocks of 32.
  if ((shape.fileType === 'q8_0' || shape.fileType === 'q4_0') && (shape.nEmbd % 32 !== 0 || shape.nFf % 32 !== 0)) {
    return `${shape.fileType} needs nEmbd and nFf to be multiples of 32, got ${shape.nEmbd} and ${shape.nFf}`;
  }
  return undefined;
}

/** A tensor to write: its header entry and how its values are made. */
export interface PlannedTensor extends GgufTensorInfo {
  fill(values: Float32Array): void;
}

/** The tokenizer's metadata for a SentencePiece vocabulary with the demo chat template: the demo models' and the benchmarks' real-shape ones. */
export function spmTokenizerMetadata(vocab: SpmVocab): [string, GgufValue][] {
  return [
    ['tokenizer.ggml.model', { kind: 'string', value: 'llama' }],
    ['tokenizer.ggml.tokens', { kind: 'string[]', value: vocab.tokens }],
    ['tokenizer.ggml.scores', { kind: 'f32[]', value: vocab.scores }],
    ['tokenizer.ggml.token_type', { kind: 'i32[]', value: vocab.types }],
    ['tokenizer.ggml.bos_token_id', { kind: 'u32', value: vocab.bosId }],
    ['tokenizer.ggml.eos_token_id', { kind: 'u32', value: vocab.eosId }],
    ['tokenizer.ggml.unknown_token_id', { kind: 'u32', value: vocab.unkId }],
    ['tokenizer.ggml.add_bos_token', { kind: 'bool', value: true }],
    ['tokenizer.ggml.add_eos_token', { kind: 'bool', value: false }],
    // No SentencePiece space before text that follows a special token, as in the BPE vocabularies
    // of the ChatML models the template copies. With one, `<|im_start|>assistant\n` tokenizes as
    // `<|im_start|>`, ` assistant\n`; llama-server starts every response_format and tool grammar
    // with the template's generation prompt and feeds it those tokens, so the grammar met a space
    // it does not allow and every json_schema request failed ("Failed to initialize samplers").
    ['tokenizer.ggml.add_space_prefix', { kind: 'bool', value: false }],
    ['tokenizer.chat_template', { kind: 'string', value: CHAT_TEMPLATE }],
  ];
}

function metadataFor(shape: LlamaModelShape): Map<string, GgufValue> {
  const vocab = spmVocab();
  const headDim = shape.nEmbd / shape.nHead;
  return new Map<string, GgufValue>([
    ['general.architecture', { kind: 'string', value: 'llama' }],
    ['general.name', { kind: 'string', value: shape.name }],
    ['general.file_type', { kind: 'u32', value: FILE_TYPE[shape.fileType] }],
    ['general.alignment', { kind: 'u32', value: 32 }],
    ['llama.context_length', { kind: 'u32', value: shape.contextLength }],
    ['llama.embedding_length', { kind: 'u32', value: shape.nEmbd }],
    ['llama.block_count', { kind: 'u32', value: shape.nLayer }],
    ['llama.feed_forward_length', { kind: 'u32', value: shape.nFf }],
    ['llama.attention.head_count', { kind: 'u32', value: shape.nHead }],
    ['llama.attention.head_count_kv', { kind: 'u32', value: shape.nHeadKv }],
    ['llama.rope.dimension_count', { kind: 'u32', value: headDim }],
    ['llama.attention.layer_norm_rms_epsilon', { kind: 'f32', value: RMS_EPSILON }],
    ['llama.vocab_size', { kind: 'u32', value: vocab.tokens.length }],
    ...spmTokenizerMetadata(vocab),
  ]);
}

function planTensors(shape: LlamaModelShape): PlannedTensor[] {
  const vocab = spmVocab();
  const nVocab = vocab.tokens.length;
  const { nEmbd, nFf } = shape;
  const nEmbdKv = (nEmbd / shape.nHead) * shape.nHeadKv;
  const matrixType: GgmlTensorType = shape.fileType;
  const rand = (label: string) => seededRandom(seedFor(shape.seed, label));

  /** A [cols x rows] matrix with std 1/sqrt(cols); `zeroRow0` keeps the bias channel clean. */
  const matrix = (name: string, cols: number, rows: number, zeroRow0 = false): PlannedTensor => ({
    name, dims: [cols, rows], type: matrixType,
    fill: (v) => {
      rand(name).fillUniform(v, Math.sqrt(3 / cols));
      if (zeroRow0) v.fill(0, 0, cols);
    },
  });
  /** A norm weight: 1 everywhere, except 0 on the bias channel for the block norms. */
  const norm = (name: string, ignoreBiasChannel: boolean): PlannedTensor => ({
    name, dims: [nEmbd], type: 'f32',
    fill: (v) => {
      v.fill(1);
      if (ignoreBiasChannel) v[0] = 0;
    },
  });

  const tensors: PlannedTensor[] = [
    {
      name: 'token_embd.weight', dims: [nEmbd, nVocab], type: matrixType,
      fill: (v) => {
        const r = rand('token_embd.weight');
        for (let t = 0; t < nVocab; t++) {
          v[t * nEmbd] = 1;
          r.fillUniform(v, 1, t * nEmbd + 1, (t + 1) * nEmbd);
        }
      },
    },
  ];
  for (let i = 0; i < shape.nLayer; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      norm(`${p}attn_norm.weight`, true),
      matrix(`${p}attn_q.weight`, nEmbd, nEmbd),
      matrix(`${p}attn_k.weight`, nEmbd, nEmbdKv),
      matrix(`${p}attn_v.weight`, nEmbd, nEmbdKv),
      matrix(`${p}attn_output.weight`, nEmbd, nEmbd, true),
      norm(`${p}ffn_norm.weight`, true),
      matrix(`${p}ffn_gate.weight`, nEmbd, nFf),
      matrix(`${p}ffn_up.weight`, nEmbd, nFf),
      matrix(`${p}ffn_down.weight`, nFf, nEmbd, true),
    );
  }
  tensors.push(norm('output_norm.weight', false), {
    name: 'output.weight', dims: [nEmbd, nVocab], type: matrixType,
    fill: (v) => {
      const r = rand('output.weight');
      for (let t = 0; t < nVocab; t++) {
        const row = t * nEmbd;
        if (vocab.emittable[t]) {
          v[row] = 0;
          r.fillUniform(v, OUTPUT_WEIGHT_AMPLITUDE, row + 1, row + nEmbd);
        } else {
          v.fill(0, row, row + nEmbd);
          v[row] = vocab.reluctant[t] ? -RELUCTANT_LOGIT : -NEVER_LOGIT;
        }
      }
    },
  });
  return tensors;
}

/**
 * Where the tensor data of the file `writeLlamaGguf` would write for `shape` starts, and the
 * file's total size; computed without writing anything (to skip files already present, and to
 * cut a file inside its tensor data on purpose).
 */
export function llamaGgufLayout(shape: LlamaModelShape): { dataStart: number; totalBytes: number } {
  const layout = layoutGguf(metadataFor(shape), planTensors(shape));
  return { dataStart: layout.tensorOffsets[0] ?? layout.totalBytes, totalBytes: layout.totalBytes };
}

/**
 * Writes a llama-architecture GGUF for `shape` to `path`.
 * Blocks on file I/O only; deterministic (same shape, same bytes); writes to a temporary
 * name and renames, so a reader never sees a half-written model. Rejects an invalid shape
 * with the reason, and any I/O error as it comes.
 */
export async function writeLlamaGguf(path: string, shape: LlamaModelShape): Promise<{ bytes: number }> {
  const invalid = invalidShapeReason(shape);
  if (invalid) throw new Error(`Cannot write model '${shape.name}': ${invalid}`);
  return writeGguf(path, metadataFor(shape), planTensors(shape));
}

/** llama.cpp's name for part `index` (from 1) of a model split in `count`: `<prefix>-00001-of-00003.gguf`. */
export function splitPartPath(prefix: string, index: number, count: number): string {
  return `${prefix}-${String(index).padStart(5, '0')}-of-${String(count).padStart(5, '0')}.gguf`;
}

/**
 * Writes `shape`'s model split in parts, as llama.cpp's gguf-split does: the first part holds
 * all the metadata, every part its split.no (from 0), split.count and split.tensors.count, and
 * its tensors in the model's order. `partOf` gives each tensor's part, from 0, and must not
 * decrease along the tensor order (token_embd, blk.0.…, …, output). Returns the parts' paths.
 * Blocks on file I/O; rejects like `writeLlamaGguf`, and on a `partOf` that leaves a part empty.
 */
export async function writeSplitLlamaGguf(prefix: string, shape: LlamaModelShape, partOf: (tensorName: string) => number): Promise<string[]> {
  const invalid = invalidShapeReason(shape);
  if (invalid) throw new Error(`Cannot write model '${shape.name}': ${invalid}`);
  const tensors = planTensors(shape);
  const parts: PlannedTensor[][] = [];
  for (const tensor of tensors) {
    const part = partOf(tensor.name);
    if (part < parts.length - 1 || part > parts.length) throw new Error(`Cannot split '${shape.name}': tensor '${tensor.name}' goes to part ${part} after part ${parts.length - 1}`);
    (parts[part] ??= []).push(tensor);
  }
  const paths = parts.map((_, i) => splitPartPath(prefix, i + 1, parts.length));
  for (const [i, part] of parts.entries()) {
    const metadata = new Map<string, GgufValue>(i === 0 ? metadataFor(shape) : []);
    metadata.set('split.no', { kind: 'u16', value: i });
    metadata.set('split.count', { kind: 'u16', value: parts.length });
    metadata.set('split.tensors.count', { kind: 'i32', value: tensors.length });
    await writeGguf(paths[i] as string, metadata, part);
  }
  return paths;
}

/** Writes `metadata` and `tensors` as a GGUF at `path`, through a temporary name (a reader never sees half a file). */
export async function writeGguf(path: string, metadata: ReadonlyMap<string, GgufValue>, tensors: readonly PlannedTensor[]): Promise<{ bytes: number }> {
  const layout = layoutGguf(metadata, tensors);
  const partial = `${path}.partial-${process.pid}`;
  const file = await open(partial, 'w');
  try {
    await file.write(layout.header, 0, layout.header.length, 0);
    for (const [i, t] of tensors.entries()) {
      const values = new Float32Array(t.dims.reduce((a, b) => a * b, 1));
      t.fill(values);
      const data = encodeTensorData(values, t.type);
      await file.write(data, 0, data.length, layout.tensorOffsets[i]);
    }
  } catch (error) {
    await file.close();
    await rm(partial, { force: true });
    throw error;
  }
  await file.close();
  await rename(partial, path);
  return { bytes: layout.totalBytes };
}
