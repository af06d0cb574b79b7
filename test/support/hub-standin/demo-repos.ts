// The repos the Hub stand-in serves in the pull's tests: real GGUF models written by the demo's
// own writer (core/catalog/demo/), so a pulled file loads and answers a chat like any model.
//
// - `llmtray-test/Tiny-GGUF`: one model in two quantisations (their names say Q4_K_M and Q8_0;
//   the bytes are the tiny f16 model with different seeds: a name is what the pull chooses by).
// - `llmtray-test/Split-GGUF`: one model in two parts (`-00001-of-00002`), written as gguf-split does.
// - `llmtray-test/Vision-GGUF`: a model with its `mmproj` projector beside it.
// - `llmtray-test/Gated-GGUF`: the tiny model behind a gate (E7), opened by GATED_TOKEN.
// - `llmtray-test/Sizes-GGUF`: one model in three real sizes (q4_0, q8_0 and f16 matrices, named
//   Q2_K, Q4_K_M and F16), for choosing by what fits this machine.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeLlamaGguf, writeSplitLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import type { StandInRepo } from './hub-standin.js';

export const TINY_REPO = 'llmtray-test/Tiny-GGUF';
export const SPLIT_REPO = 'llmtray-test/Split-GGUF';
export const VISION_REPO = 'llmtray-test/Vision-GGUF';
export const GATED_REPO = 'llmtray-test/Gated-GGUF';
export const GATED_TOKEN = 'hf_standin_gate_opener';
export const SIZES_REPO = 'llmtray-test/Sizes-GGUF';

const SHAPE: LlamaModelShape = { name: 'pull-tiny', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128, contextLength: 4096, fileType: 'f16', seed: 11 };

/** Every demo repo, written once into a temp folder that is removed before this resolves. */
export async function demoRepos(): Promise<StandInRepo[]> {
  const dir = await mkdtemp(join(tmpdir(), 'llmtray-hub-'));
  try {
    const model = async (name: string, seed: number, fileType: LlamaModelShape['fileType'] = 'f16'): Promise<Buffer> => {
      const path = join(dir, `${name}.gguf`);
      await writeLlamaGguf(path, { ...SHAPE, name, seed, fileType });
      return readFile(path);
    };
    const parts = await writeSplitLlamaGguf(join(dir, 'Split-Q4_K_M'), { ...SHAPE, name: 'split', seed: 13 }, (tensor) => (tensor.startsWith('token_embd') || tensor.startsWith('blk.0.') ? 0 : 1));
    return [
      { id: TINY_REPO, files: [{ path: 'Tiny-Q4_K_M.gguf', bytes: await model('tiny-q4', 21) }, { path: 'Tiny-Q8_0.gguf', bytes: await model('tiny-q8', 22) }, { path: 'README.md', bytes: Buffer.from('# Tiny\n') }] },
      { id: SPLIT_REPO, files: await Promise.all(parts.map(async (path) => ({ path: path.slice(dir.length + 1), bytes: await readFile(path) }))) },
      { id: VISION_REPO, files: [{ path: 'Vision-Q4_K_M.gguf', bytes: await model('vision', 31) }, { path: 'mmproj-Vision-F16.gguf', bytes: await model('projector', 32) }] },
      { id: GATED_REPO, files: [{ path: 'Gated-Q4_K_M.gguf', bytes: await model('gated', 41) }], gatedToken: GATED_TOKEN },
      {
        id: SIZES_REPO,
        files: [
          { path: 'Sizes-Q2_K.gguf', bytes: await model('sizes', 51, 'q4_0') },
          { path: 'Sizes-Q4_K_M.gguf', bytes: await model('sizes', 51, 'q8_0') },
          { path: 'Sizes-F16.gguf', bytes: await model('sizes', 51, 'f16') },
        ],
      },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
