// Writes random-weight GGUFs with the architectures and sizes people run (Llama 3.2 1B,
// Qwen2.5 0.5B, a Qwen3 mixture of experts), for the benchmarks only: the tests keep the small
// demo models. Same ideas as the demo writer (core/catalog/demo/gguf-writer.ts), whose file
// layout and encoder this reuses: deterministic weights, dimension 0 of the residual stream a
// constant "bias channel" that no block writes to, so a token the model must never emit sits
// far below the rest whatever the context, and every answer is printable ASCII.
//
// Differences from the demo writer, each because a real model has it:
//   - the vocabulary is the real size (real-shape-vocab.ts);
//   - Llama 3.2 1B and Qwen2.5 0.5B tie the output layer to the token embeddings (no
//     output.weight): the embedding row of a never-emitted token then carries the -NEVER value
//     in the bias channel. As an input (a special token in a prompt) that row only scales the
//     other channels at its own position, which the block norms already ignore;
//   - Qwen2.5 has biases on q, k and v; Qwen3 normalizes q and k per head and routes each token
//     to `expertsUsed` of `experts` feed-forward experts.
import { spmTokenizerMetadata, writeGguf, type PlannedTensor } from '../../../core/catalog/demo/gguf-writer.js';
import type { GgmlTensorType, GgufValue } from '../../../core/catalog/demo/gguf-encoder.js';
import { seededRandom, seedFor } from '../../../core/catalog/demo/seeded-random.js';
import { realShapeVocab } from './real-shape-vocab.js';

export type RealShapeArchitecture = 'llama' | 'qwen2' | 'qwen3moe';

export interface RealShape {
  /** The file's general.name, e.g. "llama-3.2-1b-shape". */
  name: string;
  architecture: RealShapeArchitecture;
  nLayer: number;
  nEmbd: number;
  nHead: number;
  nHeadKv: number;
  /** Per-head width; nEmbd / nHead unless the architecture says it (Qwen3: 128). */
  headDim: number;
  /** The dense feed-forward width; for a mixture of experts, each expert's. */
  nFf: number;
  nVocab: number;
  contextLength: number;
  ropeFreqBase: number;
  rmsEpsilon: number;
  tiedEmbeddings: boolean;
  experts?: { count: number; used: number };
  seed: number;
}

/** llama_ftype of the file as written (the benchmark quantizes from it). */
const WRITTEN_TYPE: GgmlTensorType = 'q8_0';
const LLAMA_FTYPE_MOSTLY_Q8_0 = 7;
const NEVER_LOGIT = 1000;
const OUTPUT_WEIGHT_AMPLITUDE = 0.6;

function metadataFor(shape: RealShape): Map<string, GgufValue> {
  const vocab = realShapeVocab(shape.nVocab);
  const arch = shape.architecture;
  const metadata = new Map<string, GgufValue>([
    ['general.architecture', { kind: 'string', value: arch }],
    ['general.name', { kind: 'string', value: shape.name }],
    ['general.file_type', { kind: 'u32', value: LLAMA_FTYPE_MOSTLY_Q8_0 }],
    ['general.alignment', { kind: 'u32', value: 32 }],
    [`${arch}.context_length`, { kind: 'u32', value: shape.contextLength }],
    [`${arch}.embedding_length`, { kind: 'u32', value: shape.nEmbd }],
    [`${arch}.block_count`, { kind: 'u32', value: shape.nLayer }],
    [`${arch}.feed_forward_length`, { kind: 'u32', value: shape.nFf }],
    [`${arch}.attention.head_count`, { kind: 'u32', value: shape.nHead }],
    [`${arch}.attention.head_count_kv`, { kind: 'u32', value: shape.nHeadKv }],
    [`${arch}.attention.key_length`, { kind: 'u32', value: shape.headDim }],
    [`${arch}.attention.value_length`, { kind: 'u32', value: shape.headDim }],
    [`${arch}.rope.dimension_count`, { kind: 'u32', value: shape.headDim }],
    [`${arch}.rope.freq_base`, { kind: 'f32', value: shape.ropeFreqBase }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { kind: 'f32', value: shape.rmsEpsilon }],
    [`${arch}.vocab_size`, { kind: 'u32', value: shape.nVocab }],
    ...spmTokenizerMetadata(vocab),
  ]);
  if (shape.experts !== undefined) {
    metadata.set(`${arch}.expert_count`, { kind: 'u32', value: shape.experts.count });
    metadata.set(`${arch}.expert_used_count`, { kind: 'u32', value: shape.experts.used });
    metadata.set(`${arch}.expert_feed_forward_length`, { kind: 'u32', value: shape.nFf });
  }
  return metadata;
}

function planTensors(shape: RealShape): PlannedTensor[] {
  const vocab = realShapeVocab(shape.nVocab);
  const { nEmbd, nFf, nVocab } = shape;
  const nEmbdQ = shape.headDim * shape.nHead;
  const nEmbdKv = shape.headDim * shape.nHeadKv;
  const rand = (label: string) => seededRandom(seedFor(shape.seed, label));

  /** `count` matrices of [cols x rows], std 1/sqrt(cols); `zeroRow0` keeps the bias channel clean in each. */
  const matrix = (name: string, cols: number, rows: number, zeroRow0 = false, count = 1): PlannedTensor => ({
    name, dims: count === 1 ? [cols, rows] : [cols, rows, count], type: WRITTEN_TYPE,
    fill: (v) => {
      rand(name).fillUniform(v, Math.sqrt(3 / cols));
      if (zeroRow0) for (let m = 0; m < count; m++) v.fill(0, m * cols * rows, m * cols * rows + cols);
    },
  });
  const ones = (name: string, size: number, zeroFirst: boolean): PlannedTensor => ({
    name, dims: [size], type: 'f32',
    fill: (v) => {
      v.fill(1);
      if (zeroFirst) v[0] = 0;
    },
  });
  const small = (name: string, size: number): PlannedTensor => ({
    name, dims: [size], type: 'f32', fill: (v) => rand(name).fillUniform(v, 0.1),
  });

  /** Every token's input row: 1 in the bias channel, random elsewhere (a tied never-emitted token: -NEVER there, 0 elsewhere). */
  const tokenEmbeddings: PlannedTensor = {
    name: 'token_embd.weight', dims: [nEmbd, nVocab], type: WRITTEN_TYPE,
    fill: (v) => {
      const r = rand('token_embd.weight');
      for (let t = 0; t < nVocab; t++) {
        const row = t * nEmbd;
        if (shape.tiedEmbeddings && !vocab.emittable[t]) {
          v.fill(0, row, row + nEmbd);
          v[row] = -NEVER_LOGIT;
        } else {
          v[row] = 1;
          r.fillUniform(v, 1, row + 1, row + nEmbd);
        }
      }
    },
  };
  /** The untied output layer: 0 in the bias channel and random elsewhere for a token it may emit, -NEVER there for any other. */
  const outputLayer: PlannedTensor = {
    name: 'output.weight', dims: [nEmbd, nVocab], type: WRITTEN_TYPE,
    fill: (v) => {
      const r = rand('output.weight');
      for (let t = 0; t < nVocab; t++) {
        const row = t * nEmbd;
        if (vocab.emittable[t]) {
          v[row] = 0;
          r.fillUniform(v, OUTPUT_WEIGHT_AMPLITUDE, row + 1, row + nEmbd);
        } else {
          v.fill(0, row, row + nEmbd);
          v[row] = -NEVER_LOGIT;
        }
      }
    },
  };

  const tensors: PlannedTensor[] = [tokenEmbeddings];
  for (let i = 0; i < shape.nLayer; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      ones(`${p}attn_norm.weight`, nEmbd, true),
      matrix(`${p}attn_q.weight`, nEmbd, nEmbdQ),
      matrix(`${p}attn_k.weight`, nEmbd, nEmbdKv),
      matrix(`${p}attn_v.weight`, nEmbd, nEmbdKv),
    );
    if (shape.architecture === 'qwen2') tensors.push(small(`${p}attn_q.bias`, nEmbdQ), small(`${p}attn_k.bias`, nEmbdKv), small(`${p}attn_v.bias`, nEmbdKv));
    tensors.push(matrix(`${p}attn_output.weight`, nEmbdQ, nEmbd, true));
    if (shape.architecture === 'qwen3moe') tensors.push(ones(`${p}attn_q_norm.weight`, shape.headDim, false), ones(`${p}attn_k_norm.weight`, shape.headDim, false));
    tensors.push(ones(`${p}ffn_norm.weight`, nEmbd, true));
    if (shape.experts === undefined) {
      tensors.push(matrix(`${p}ffn_gate.weight`, nEmbd, nFf), matrix(`${p}ffn_up.weight`, nEmbd, nFf), matrix(`${p}ffn_down.weight`, nFf, nEmbd, true));
    } else {
      const n = shape.experts.count;
      tensors.push(
        { name: `${p}ffn_gate_inp.weight`, dims: [nEmbd, n], type: 'f32', fill: (v) => rand(`${p}ffn_gate_inp.weight`).fillUniform(v, Math.sqrt(3 / nEmbd)) },
        matrix(`${p}ffn_gate_exps.weight`, nEmbd, nFf, false, n),
        matrix(`${p}ffn_down_exps.weight`, nFf, nEmbd, true, n),
        matrix(`${p}ffn_up_exps.weight`, nEmbd, nFf, false, n),
      );
    }
  }
  tensors.push(ones('output_norm.weight', nEmbd, false));
  if (!shape.tiedEmbeddings) tensors.push(outputLayer);
  return tensors;
}

/** Writes `shape` as a Q8_0 GGUF at `path` (through a temporary name). Blocks on file I/O and on encoding: about a minute per billion parameters. */
export async function writeRealShapeGguf(path: string, shape: RealShape): Promise<{ bytes: number }> {
  return writeGguf(path, metadataFor(shape), planTensors(shape));
}
