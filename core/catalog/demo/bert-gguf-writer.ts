// Writes small, valid BERT-architecture GGUF embedding models with deterministic random weights:
// an encoder (bidirectional attention, layer norms with biases, GELU feed-forward, learned
// positions) whose GGUF names its pooling, as the embedding models people run (bge, MiniLM,
// nomic) do. The catalog reads that pooling and marks the model an embedding model, so
// llama-server is launched with `--embeddings` for it and the embedded engine serves it from an
// embedding context: /v1/embeddings shown working on both engines with nothing downloaded.
//
// The vocabulary is WordPiece as llama.cpp's converter stores it: the specials, then every
// printable ASCII character twice, as a word's start ("▁a", the converter's spelling of a bare
// piece) and as a continuation ("a", its spelling of "##a"), so any ASCII word tokenizes one
// token per character and nothing is [UNK].
import { seededRandom, seedFor } from './seeded-random.js';
import { writeGguf, type PlannedTensor } from './gguf-writer.js';
import { layoutGguf, type GgufValue } from './gguf-encoder.js';

export interface BertModelShape {
  name: string;
  nLayer: number;
  nEmbd: number;
  nHead: number;
  nFf: number;
  contextLength: number;
  /** How llama.cpp pools the tokens into one vector: its LLAMA_POOLING_TYPE, mean (1) or the [CLS] token's (2). */
  pooling: 'mean' | 'cls';
  seed: number;
}

const POOLING_TYPE: Record<BertModelShape['pooling'], number> = { mean: 1, cls: 2 };
const LAYER_NORM_EPSILON = 1e-12;
/** tokenizer.ggml.token_type: NORMAL, CONTROL. */
const NORMAL = 1;
const CONTROL = 3;
const SPECIALS = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'] as const;
const WORD_START = '\u2581';

function wordPieceVocab(): { tokens: string[]; types: number[] } {
  const tokens: string[] = [...SPECIALS];
  const types: number[] = SPECIALS.map(() => CONTROL);
  for (const prefix of [WORD_START, '']) {
    for (let c = 0x21; c <= 0x7e; c++) {
      tokens.push(prefix + String.fromCharCode(c));
      types.push(NORMAL);
    }
  }
  return { tokens, types };
}

function metadataFor(shape: BertModelShape, vocab: { tokens: string[]; types: number[] }): Map<string, GgufValue> {
  const id = (token: (typeof SPECIALS)[number]) => SPECIALS.indexOf(token);
  return new Map<string, GgufValue>([
    ['general.architecture', { kind: 'string', value: 'bert' }],
    ['general.name', { kind: 'string', value: shape.name }],
    ['general.file_type', { kind: 'u32', value: 0 }],
    ['general.alignment', { kind: 'u32', value: 32 }],
    ['bert.context_length', { kind: 'u32', value: shape.contextLength }],
    ['bert.embedding_length', { kind: 'u32', value: shape.nEmbd }],
    ['bert.block_count', { kind: 'u32', value: shape.nLayer }],
    ['bert.feed_forward_length', { kind: 'u32', value: shape.nFf }],
    ['bert.attention.head_count', { kind: 'u32', value: shape.nHead }],
    ['bert.attention.layer_norm_epsilon', { kind: 'f32', value: LAYER_NORM_EPSILON }],
    ['bert.attention.causal', { kind: 'bool', value: false }],
    ['bert.pooling_type', { kind: 'u32', value: POOLING_TYPE[shape.pooling] }],
    ['tokenizer.ggml.model', { kind: 'string', value: 'bert' }],
    ['tokenizer.ggml.tokens', { kind: 'string[]', value: vocab.tokens }],
    ['tokenizer.ggml.token_type', { kind: 'i32[]', value: vocab.types }],
    ['tokenizer.ggml.token_type_count', { kind: 'u32', value: 2 }],
    ['tokenizer.ggml.bos_token_id', { kind: 'u32', value: id('[CLS]') }],
    ['tokenizer.ggml.seperator_token_id', { kind: 'u32', value: id('[SEP]') }],
    ['tokenizer.ggml.padding_token_id', { kind: 'u32', value: id('[PAD]') }],
    ['tokenizer.ggml.unknown_token_id', { kind: 'u32', value: id('[UNK]') }],
    ['tokenizer.ggml.mask_token_id', { kind: 'u32', value: id('[MASK]') }],
  ]);
}

function planTensors(shape: BertModelShape, nVocab: number): PlannedTensor[] {
  const { nEmbd, nFf } = shape;
  const rand = (label: string) => seededRandom(seedFor(shape.seed, label));
  const matrix = (name: string, cols: number, rows: number): PlannedTensor => ({ name, dims: [cols, rows], type: 'f32', fill: (v) => rand(name).fillUniform(v, Math.sqrt(3 / cols)) });
  const vector = (name: string, length: number, value: number): PlannedTensor => ({ name, dims: [length], type: 'f32', fill: (v) => v.fill(value) });
  const tensors: PlannedTensor[] = [
    matrix('token_embd.weight', nEmbd, nVocab),
    matrix('token_types.weight', nEmbd, 2),
    matrix('position_embd.weight', nEmbd, shape.contextLength),
    vector('token_embd_norm.weight', nEmbd, 1),
    vector('token_embd_norm.bias', nEmbd, 0),
  ];
  for (let i = 0; i < shape.nLayer; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      matrix(`${p}attn_q.weight`, nEmbd, nEmbd),
      matrix(`${p}attn_k.weight`, nEmbd, nEmbd),
      matrix(`${p}attn_v.weight`, nEmbd, nEmbd),
      matrix(`${p}attn_output.weight`, nEmbd, nEmbd),
      vector(`${p}attn_output_norm.weight`, nEmbd, 1),
      vector(`${p}attn_output_norm.bias`, nEmbd, 0),
      matrix(`${p}ffn_up.weight`, nEmbd, nFf),
      matrix(`${p}ffn_down.weight`, nFf, nEmbd),
      vector(`${p}layer_output_norm.weight`, nEmbd, 1),
      vector(`${p}layer_output_norm.bias`, nEmbd, 0),
    );
  }
  return tensors;
}

/** The size of the file `writeBertGguf` would write for `shape`, computed without writing (to skip a file already present). */
export function bertGgufSize(shape: BertModelShape): number {
  const vocab = wordPieceVocab();
  return layoutGguf(metadataFor(shape, vocab), planTensors(shape, vocab.tokens.length)).totalBytes;
}

/**
 * Writes a BERT-architecture embedding GGUF for `shape` to `path` (f32). Blocks on file I/O only;
 * deterministic; through a temporary name, as writeLlamaGguf. Rejects a shape whose width is not
 * a multiple of its heads, and any I/O error as it comes.
 */
export async function writeBertGguf(path: string, shape: BertModelShape): Promise<{ bytes: number }> {
  if (shape.nEmbd % shape.nHead !== 0) throw new Error(`Cannot write model '${shape.name}': nEmbd (${shape.nEmbd}) must be a multiple of nHead (${shape.nHead})`);
  const vocab = wordPieceVocab();
  return writeGguf(path, metadataFor(shape, vocab), planTensors(shape, vocab.tokens.length));
}
