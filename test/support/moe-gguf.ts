// Header-true GGUF files of a mixture of experts, for the tests of what the catalog reads from
// headers (tensor sizes per block, expert tensors, blocks that differ).
//
// Why not a model that runs: the writer in core/catalog/demo makes llama models only, and a
// header reader needs the header and the data section's size, not weights that mean anything.
// The tensor names, shapes and order are those of llama.cpp's qwen3moe (with DeepSeek's dense
// first blocks as an option); the data is zeros, written as a sparse file.
import { truncate, writeFile } from 'node:fs/promises';
import { layoutGguf, type GgmlTensorType, type GgufTensorInfo, type GgufValue } from '../../core/catalog/demo/gguf-encoder.js';

export interface MoeShape {
  nLayer: number;
  /** Blocks at the start with a dense FFN instead of experts (DeepSeek's first_k_dense_replace). */
  denseFirst: number;
  nEmbd: number;
  nExpert: number;
  nFfExpert: number;
  nFfDense: number;
  nVocab: number;
  type: GgmlTensorType;
}

export function moeTensors(shape: MoeShape): GgufTensorInfo[] {
  const { nEmbd, type } = shape;
  const tensors: GgufTensorInfo[] = [{ name: 'token_embd.weight', dims: [nEmbd, shape.nVocab], type }];
  for (let i = 0; i < shape.nLayer; i++) {
    const p = `blk.${i}.`;
    tensors.push(
      { name: `${p}attn_norm.weight`, dims: [nEmbd], type: 'f32' },
      { name: `${p}attn_q.weight`, dims: [nEmbd, nEmbd], type },
      { name: `${p}attn_k.weight`, dims: [nEmbd, nEmbd / 4], type },
      { name: `${p}attn_v.weight`, dims: [nEmbd, nEmbd / 4], type },
      { name: `${p}attn_output.weight`, dims: [nEmbd, nEmbd], type },
      { name: `${p}ffn_norm.weight`, dims: [nEmbd], type: 'f32' },
    );
    if (i < shape.denseFirst) {
      tensors.push(
        { name: `${p}ffn_gate.weight`, dims: [nEmbd, shape.nFfDense], type },
        { name: `${p}ffn_up.weight`, dims: [nEmbd, shape.nFfDense], type },
        { name: `${p}ffn_down.weight`, dims: [shape.nFfDense, nEmbd], type },
      );
    } else {
      tensors.push(
        { name: `${p}ffn_gate_inp.weight`, dims: [nEmbd, shape.nExpert], type: 'f32' },
        { name: `${p}ffn_gate_exps.weight`, dims: [nEmbd, shape.nFfExpert, shape.nExpert], type },
        { name: `${p}ffn_up_exps.weight`, dims: [nEmbd, shape.nFfExpert, shape.nExpert], type },
        { name: `${p}ffn_down_exps.weight`, dims: [shape.nFfExpert, nEmbd, shape.nExpert], type },
      );
    }
  }
  tensors.push({ name: 'output_norm.weight', dims: [nEmbd], type: 'f32' }, { name: 'output.weight', dims: [nEmbd, shape.nVocab], type });
  return tensors;
}

/** Writes the header of `shape` to `path`, then zeros to the data section's full size (sparse). */
export async function writeMoeGguf(path: string, shape: MoeShape): Promise<void> {
  const metadata = new Map<string, GgufValue>([
    ['general.architecture', { kind: 'string', value: 'qwen3moe' }],
    ['qwen3moe.block_count', { kind: 'u32', value: shape.nLayer }],
    ['qwen3moe.embedding_length', { kind: 'u32', value: shape.nEmbd }],
    ['qwen3moe.expert_count', { kind: 'u32', value: shape.nExpert }],
    ['qwen3moe.expert_feed_forward_length', { kind: 'u32', value: shape.nFfExpert }],
    ['qwen3moe.leading_dense_block_count', { kind: 'u32', value: shape.denseFirst }],
    ['qwen3moe.attention.head_count', { kind: 'u32', value: 8 }],
    ['qwen3moe.attention.head_count_kv', { kind: 'array', of: 'u32', value: Array.from({ length: shape.nLayer }, (_, i) => (i % 2 === 0 ? 2 : 4)) }],
    ['qwen3moe.context_length', { kind: 'u64', value: 32768n }],
    ['general.file_type', { kind: 'u32', value: shape.type === 'q8_0' ? 7 : shape.type === 'f16' ? 1 : 0 }],
  ]);
  const layout = layoutGguf(metadata, moeTensors(shape));
  await writeFile(path, layout.header);
  await truncate(path, layout.totalBytes);
}
