// What the catalog reads per layer (the bytes of each block, its experts, the rest) and how it
// reads a model split in parts: the facts a layer-by-layer placement is costed from.
import { copyFile, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { alignUp, layoutGguf, tensorByteLength, type GgufTensorInfo } from '../../../core/catalog/demo/gguf-encoder.js';
import { splitPartPath, writeLlamaGguf, writeSplitLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { readGgufFacts, type GgufFacts } from '../../../core/catalog/gguf-metadata.js';
import { moeTensors, writeMoeGguf, type MoeShape } from '../../support/moe-gguf.js';
import { testModelDir } from '../../support/test-models.js';

const VOCAB = 358; // the writer's shared SPM byte vocabulary (with its two tool-call markers)
const Q8: LlamaModelShape = { name: 'layers-q8', nLayer: 3, nEmbd: 96, nHead: 6, nHeadKv: 2, nFf: 160, contextLength: 4096, fileType: 'q8_0', seed: 31 };
const MOE: MoeShape = { nLayer: 4, denseFirst: 1, nEmbd: 64, nExpert: 8, nFfExpert: 32, nFfDense: 128, nVocab: 300, type: 'q8_0' };
let dir: string;

async function facts(path: string): Promise<GgufFacts> {
  const result = await readGgufFacts(path);
  if (!result.ok) throw new Error(result.error);
  return result.facts;
}

async function error(path: string): Promise<string> {
  const result = await readGgufFacts(path);
  if (result.ok) throw new Error(`${path} was read, expected an error`);
  return result.error;
}

/** What a tensor takes in the file: its data, padded to the 32-byte alignment. */
const padded = (t: GgufTensorInfo): number => alignUp(tensorByteLength(t));

beforeAll(async () => {
  dir = join(testModelDir(), 'layer-facts');
  await mkdir(dir, { recursive: true });
});

describe('per-layer facts', () => {
  it('a dense model: every block the same bytes, padding included, no experts, the rest outside the blocks', async () => {
    const path = join(dir, 'q8.gguf');
    await writeLlamaGguf(path, Q8);
    const f = await facts(path);
    // q8_0 rows of 96 and 160 values are 102 and 170 bytes: whole tensors are not multiples of 32.
    const kv = (Q8.nEmbd / Q8.nHead) * Q8.nHeadKv;
    const block = [
      { dims: [96], type: 'f32' }, { dims: [96, 96], type: 'q8_0' }, { dims: [96, kv], type: 'q8_0' }, { dims: [96, kv], type: 'q8_0' },
      { dims: [96, 96], type: 'q8_0' }, { dims: [96], type: 'f32' }, { dims: [96, 160], type: 'q8_0' }, { dims: [96, 160], type: 'q8_0' },
      { dims: [160, 96], type: 'q8_0' },
    ] as const;
    const blockBytes = block.reduce((sum, t) => sum + padded({ name: 't', ...t, dims: [...t.dims] }), 0);
    expect(f.blockBytes).toEqual([blockBytes, blockBytes, blockBytes]);
    expect(f.blockExpertBytes).toEqual([0, 0, 0]);
    const embeddings = padded({ name: 'e', dims: [96, VOCAB], type: 'q8_0' });
    expect(f.nonBlockBytes).toBe(2 * embeddings + padded({ name: 'n', dims: [96], type: 'f32' }));
    expect(f.nonBlockBytes + 3 * blockBytes).toBe(f.tensorDataBytes);
  });

  it('a mixture of experts: expert tensors counted per block, dense first blocks with none, blocks that differ kept apart', async () => {
    const path = join(dir, 'moe.gguf');
    await writeMoeGguf(path, MOE);
    const f = await facts(path);
    const tensors = moeTensors(MOE);
    const sumOf = (filter: (name: string) => boolean) => tensors.filter((t) => filter(t.name)).reduce((sum, t) => sum + padded(t), 0);
    const perBlock = (i: number) => sumOf((n) => n.startsWith(`blk.${i}.`));
    const expertsOf = (i: number) => sumOf((n) => n.startsWith(`blk.${i}.`) && n.includes('_exps'));
    expect(f.blockBytes).toEqual([0, 1, 2, 3].map(perBlock));
    expect(f.blockExpertBytes).toEqual([0, expertsOf(1), expertsOf(1), expertsOf(1)]);
    expect(f.blockBytes[0]).toBeLessThan(f.blockBytes[1] as number);
    // The router (ffn_gate_inp) stays with attention: --n-cpu-moe moves only the experts.
    expect(expertsOf(1)).toBe(3 * padded({ name: 'x', dims: [64, 32, 8], type: 'q8_0' }));
    expect(f.nonBlockBytes).toBe(sumOf((n) => !n.startsWith('blk.')));
    // head_count_kv per layer: the largest is the safe bound for the KV cache.
    expect(f.headCountKv).toBe(4);
    expect(f.contextLength).toBe(32768);
  });

  it('a tensor naming a block beyond any the file could have is an error, not an array that size', async () => {
    const path = join(dir, 'far-block.gguf');
    await writeFile(path, layoutGguf(new Map([['general.architecture', { kind: 'string', value: 'llama' }]]), [{ name: 'blk.4000000000.attn_q.weight', dims: [8], type: 'f32' }]).header);
    expect(await error(path)).toBe(`${path}: not a readable GGUF model (tensor 'blk.4000000000.attn_q.weight' names block 4000000000, but the model has only 1 tensors)`);
  });
});

describe('a split model', () => {
  let whole: GgufFacts;
  let prefix: string;
  // Part 1: the embeddings and block 0; part 2: block 1; part 3: block 2 and the output.
  const partOf = (name: string) => (name.startsWith('blk.') ? Number(name.split('.')[1]) : name === 'token_embd.weight' ? 0 : 2);

  beforeAll(async () => {
    const path = join(dir, 'whole.gguf');
    await writeLlamaGguf(path, Q8);
    whole = await facts(path);
    prefix = join(dir, 'split', 'q8');
    await mkdir(join(dir, 'split'), { recursive: true });
    await writeSplitLlamaGguf(prefix, Q8, partOf);
  });

  it('has the facts of the whole file, its tensor data summed over the parts', async () => {
    expect(await facts(splitPartPath(prefix, 1, 3))).toEqual(whole);
  });

  it('is read by its first part only', async () => {
    expect(await error(splitPartPath(prefix, 2, 3))).toBe(
      `${splitPartPath(prefix, 2, 3)}: not a readable GGUF model (it is part 2 of a split model; a split model is loaded by its first part)`,
    );
  });

  it('names the part that is missing, or from another model, or a first part whose name hides the others', async () => {
    const other = join(dir, 'other');
    await mkdir(other, { recursive: true });
    const first = splitPartPath(join(other, 'q8'), 1, 3);
    await copyFile(splitPartPath(prefix, 1, 3), first);
    expect(await error(first)).toMatch(new RegExp(`^${first}: cannot read the model file: ENOENT: no such file or directory, open '${splitPartPath(join(other, 'q8'), 2, 3)}'$`));

    // Part 3 where part 2 should be: another download, or a rename gone wrong.
    await copyFile(splitPartPath(prefix, 3, 3), splitPartPath(join(other, 'q8'), 2, 3));
    await copyFile(splitPartPath(prefix, 3, 3), splitPartPath(join(other, 'q8'), 3, 3));
    expect(await error(first)).toBe(`${first}: not a readable GGUF model (its part ${splitPartPath(join(other, 'q8'), 2, 3)} says it is part 3, not 2; it belongs to another model)`);

    const renamed = join(other, 'renamed.gguf');
    await copyFile(splitPartPath(prefix, 1, 3), renamed);
    expect(await error(renamed)).toBe(`${renamed}: not a readable GGUF model (it is part 1 of 3, but its name does not end in -00001-of-00003.gguf, so its other parts cannot be found)`);
    await rm(other, { recursive: true });
  });

  it('refuses parts that hold other tensors than the model has', async () => {
    const mixed = join(dir, 'mixed');
    await mkdir(mixed, { recursive: true });
    // Another split of the same model, whose part 3 holds only the output: with the first two
    // parts of the split above, block 2 is in no part.
    await writeSplitLlamaGguf(join(mixed, 'b'), Q8, (name) => (name.startsWith('blk.2.') ? 1 : name.startsWith('blk.') || name === 'token_embd.weight' ? 0 : 2));
    await copyFile(splitPartPath(prefix, 1, 3), splitPartPath(join(mixed, 'a'), 1, 3));
    await copyFile(splitPartPath(prefix, 2, 3), splitPartPath(join(mixed, 'a'), 2, 3));
    await copyFile(splitPartPath(join(mixed, 'b'), 3, 3), splitPartPath(join(mixed, 'a'), 3, 3));
    const first = splitPartPath(join(mixed, 'a'), 1, 3);
    expect(await error(first)).toBe(`${first}: not a readable GGUF model (its 3 parts hold 21 tensors, but split.tensors.count says 30; a part is from another download)`);
  });
});
