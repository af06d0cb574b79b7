// The real-shape models the benchmarks run beside the demo ones (issue 41): generated on first
// use into a cache folder that outlives the run (a billion parameters take a minute or two to
// write and quantize), never committed. `LLMTRAY_BENCH_MODELS` names the folder; by default
// `.bench-models/` in the checkout (git ignores it).
//
// K-quants come from llama.cpp's own llama-quantize, built from the llama.cpp source
// node-llama-cpp ships (`npm run build:llama-server` builds it beside llama-server): the
// writer here writes Q8_0, and llama-quantize turns that into Q4_K_M with llama.cpp's own
// choice of which tensors get which type, as a real Q4_K_M file has them.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { llamaServerPath } from '../bench-env.js';
import { writeRealShapeGguf, type RealShape } from './real-shape-gguf.js';

const run = promisify(execFile);

/** Bumped whenever the writer's output changes, so a cached file from an older writer is not reused. */
const WRITER_VERSION = 2;

export type RealShapeQuant = 'Q8_0' | 'Q4_K_M';

export const REAL_SHAPES = {
  /** Llama 3.2 1B: 16 layers, 2048 wide, 32 / 8 heads, FFN 8192, 128,256 tokens, output tied to the embeddings. */
  'llama-3.2-1b': {
    name: 'llama-3.2-1b-shape', architecture: 'llama', nLayer: 16, nEmbd: 2048, nHead: 32, nHeadKv: 8, headDim: 64, nFf: 8192,
    nVocab: 128_256, contextLength: 131_072, ropeFreqBase: 500_000, rmsEpsilon: 1e-5, tiedEmbeddings: true, seed: 4101,
  },
  /** Qwen2.5 0.5B: 24 layers, 896 wide, 14 / 2 heads, FFN 4864, 151,936 tokens, q/k/v biases, tied. */
  'qwen2.5-0.5b': {
    name: 'qwen2.5-0.5b-shape', architecture: 'qwen2', nLayer: 24, nEmbd: 896, nHead: 14, nHeadKv: 2, headDim: 64, nFf: 4864,
    nVocab: 151_936, contextLength: 32_768, ropeFreqBase: 1_000_000, rmsEpsilon: 1e-6, tiedEmbeddings: true, seed: 4102,
  },
  /**
   * Qwen3-30B-A3B's shape scaled to about 1.6 billion parameters: 16 layers (48), 1024 wide
   * (2048), 16 / 4 heads of 128 (32 / 4), 32 experts of 768 with 4 used per token (128 with 8:
   * the same eighth), the real 151,936 tokens and untied output. For `--n-cpu-moe`.
   */
  'qwen3-moe-small': {
    name: 'qwen3-moe-small-shape', architecture: 'qwen3moe', nLayer: 16, nEmbd: 1024, nHead: 16, nHeadKv: 4, headDim: 128, nFf: 768,
    nVocab: 151_936, contextLength: 40_960, ropeFreqBase: 1_000_000, rmsEpsilon: 1e-6, tiedEmbeddings: false,
    experts: { count: 32, used: 4 }, seed: 4103,
  },
} as const satisfies Record<string, RealShape>;

export type RealShapeId = keyof typeof REAL_SHAPES;

export interface RealShapeModel {
  /** e.g. "llama-3.2-1b Q4_K_M": what a benchmark's table calls it. */
  label: string;
  shape: RealShapeId;
  quant: RealShapeQuant;
  path: string;
}

/** The models of issue 41, in the order the benchmarks run them. */
export const REAL_SHAPE_MODELS: readonly { shape: RealShapeId; quant: RealShapeQuant }[] = [
  { shape: 'llama-3.2-1b', quant: 'Q4_K_M' },
  { shape: 'llama-3.2-1b', quant: 'Q8_0' },
  { shape: 'qwen2.5-0.5b', quant: 'Q8_0' },
  { shape: 'qwen3-moe-small', quant: 'Q4_K_M' },
];

/** The cache folder: LLMTRAY_BENCH_MODELS, else .bench-models/ in the working directory (the checkout under npm run bench). */
export function realShapeCacheDir(): string {
  const named = process.env.LLMTRAY_BENCH_MODELS;
  return named !== undefined && named !== '' ? resolve(named) : resolve('.bench-models');
}

/** llama-quantize: LLMTRAY_LLAMA_QUANTIZE, else beside the llama-server the benchmarks race; null when neither is there. */
export function llamaQuantizePath(): string | null {
  const named = process.env.LLMTRAY_LLAMA_QUANTIZE;
  if (named !== undefined && named !== '') return existsSync(named) ? named : null;
  const server = llamaServerPath();
  if (server === null) return null;
  const beside = join(dirname(server), 'llama-quantize');
  return existsSync(beside) ? beside : null;
}

function fileName(id: RealShapeId, quant: RealShapeQuant): string {
  const fingerprint = createHash('sha256').update(JSON.stringify({ shape: REAL_SHAPES[id], WRITER_VERSION })).digest('hex').slice(0, 10);
  return `${id}.${quant}.${fingerprint}.gguf`;
}

const pending = new Map<string, Promise<string>>();

/**
 * The model's path, written (and quantized) first if the cache lacks it. Rejects when a K-quant
 * is asked for and no llama-quantize is found, saying how to build one.
 */
export function realShapeModel(id: RealShapeId, quant: RealShapeQuant, log: (line: string) => void = console.log): Promise<RealShapeModel> {
  const dir = realShapeCacheDir();
  const path = join(dir, fileName(id, quant));
  let made = pending.get(path);
  if (made === undefined) {
    made = (async () => {
      if (existsSync(path)) return path;
      await mkdir(dir, { recursive: true });
      if (quant === 'Q8_0') {
        const started = Date.now();
        log(`(writing ${id} ${quant} into ${dir}: once, kept for later runs)`);
        await writeRealShapeGguf(path, REAL_SHAPES[id]);
        log(`(${id} ${quant} written in ${((Date.now() - started) / 1000).toFixed(0)} s)`);
        return path;
      }
      const quantize = llamaQuantizePath();
      if (quantize === null) throw new Error(`${id} ${quant} needs llama-quantize: run npm run build:llama-server (it builds llama-quantize beside llama-server) or set LLMTRAY_LLAMA_QUANTIZE`);
      const source = (await realShapeModel(id, 'Q8_0', log)).path;
      const partial = `${path}.partial-${process.pid}`;
      log(`(quantizing ${id} to ${quant} with ${quantize})`);
      try {
        // --allow-requantize: the source is Q8_0, not f16; the tensor types llama.cpp picks for Q4_K_M are the same.
        await run(quantize, ['--allow-requantize', source, partial, quant], { maxBuffer: 64 * 1024 * 1024 });
      } catch (error) {
        await rm(partial, { force: true });
        throw error;
      }
      await rename(partial, path);
      return path;
    })();
    pending.set(path, made);
    made.catch(() => pending.delete(path));
  }
  return made.then((p) => ({ label: `${id} ${quant}`, shape: id, quant, path: p }));
}

/**
 * The real-shape models a run covers: all of REAL_SHAPE_MODELS, or those LLMTRAY_REAL_SHAPES
 * names (`llama-3.2-1b:Q4_K_M,qwen2.5-0.5b:Q8_0`), or none with `none` (the demo models only).
 * Anything else is refused by name.
 */
export function chosenRealShapes(): readonly { shape: RealShapeId; quant: RealShapeQuant }[] {
  const asked = process.env.LLMTRAY_REAL_SHAPES;
  if (asked === undefined || asked === '') return REAL_SHAPE_MODELS;
  if (asked === 'none') return [];
  return asked.split(',').map((entry) => {
    const found = REAL_SHAPE_MODELS.find((m) => `${m.shape}:${m.quant}` === entry.trim());
    if (found === undefined) throw new Error(`LLMTRAY_REAL_SHAPES: '${entry}' is not one of ${REAL_SHAPE_MODELS.map((m) => `${m.shape}:${m.quant}`).join(', ')} (or 'none')`);
    return found;
  });
}
