// A model file that is corrupt in the most common real way: an interrupted download or copy.
//
// The header is intact (so discovery and metadata reading succeed, as they do for real
// partial files) but the tensor data stops half way, so llama.cpp refuses to load it with
// "tensor '…' data is not within the file bounds, model is corrupted or incomplete".
import { truncate } from 'node:fs/promises';
import { llamaGgufLayout, writeLlamaGguf, type LlamaModelShape } from './gguf-writer.js';

/** Size of the file `writeTruncatedLlamaGguf` leaves: half way into the tensor data. */
export function truncatedLlamaGgufSize(shape: LlamaModelShape): number {
  const { dataStart, totalBytes } = llamaGgufLayout(shape);
  return dataStart + Math.floor((totalBytes - dataStart) / 2);
}

/**
 * Writes the model for `shape`, then cuts its tensor data in half.
 * Blocks on file I/O; deterministic; rejects like `writeLlamaGguf`.
 */
export async function writeTruncatedLlamaGguf(path: string, shape: LlamaModelShape): Promise<{ bytes: number }> {
  await writeLlamaGguf(path, shape);
  const bytes = truncatedLlamaGgufSize(shape);
  await truncate(path, bytes);
  return { bytes };
}
