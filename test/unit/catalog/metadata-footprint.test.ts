import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeTruncatedLlamaGguf } from '../../../core/catalog/demo/corrupt-gguf.js';
import { writeLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import fc from 'fast-check';
import { computeBufferBytes, estimateFootprint, expertBytesMovedPerBlock, logitsRows, projectorComputeBytes } from '../../../core/catalog/footprint.js';
import { cachedMetadataReader, readGgufFacts, type GgufFacts, type MetadataResult } from '../../../core/catalog/gguf-metadata.js';
import { footprintAt, layerCostAt } from '../../../core/policy/levels.js';
import { writeMoeGguf } from '../../support/moe-gguf.js';

let dir: string;
const shape: LlamaModelShape = { name: 'tiny', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128, contextLength: 512, fileType: 'f16', seed: 1 };
const VOCAB = 358; // the writer's shared SPM byte vocabulary (with its two tool-call markers)

/** One block's tensor bytes in the writer's llama layout, by hand (every tensor is a multiple of the 32-byte alignment). */
function blockBytesByHand(s: LlamaModelShape): number {
  const el = s.fileType === 'f16' ? 2 : 4;
  const kvWidth = (s.nEmbd / s.nHead) * s.nHeadKv;
  return 2 * s.nEmbd * 4 + (2 * s.nEmbd * s.nEmbd + 2 * s.nEmbd * kvWidth + 3 * s.nEmbd * s.nFf) * el;
}

/** The tensors outside the blocks: token embeddings, output, output norm. */
function nonBlockBytesByHand(s: LlamaModelShape): number {
  return 2 * VOCAB * s.nEmbd * (s.fileType === 'f16' ? 2 : 4) + s.nEmbd * 4;
}

function tensorBytesByHand(s: LlamaModelShape): number {
  return nonBlockBytesByHand(s) + s.nLayer * blockBytesByHand(s);
}

async function facts(path: string): Promise<GgufFacts> {
  const result = await readGgufFacts(path);
  if (!result.ok) throw new Error(result.error);
  return result.facts;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-footprint-'));
  await writeLlamaGguf(join(dir, 'tiny-f16.gguf'), shape);
  await writeLlamaGguf(join(dir, 'tiny-f32.gguf'), { ...shape, fileType: 'f32', nHeadKv: 4, seed: 2 });
  await writeTruncatedLlamaGguf(join(dir, 'truncated.gguf'), shape);
  await writeFile(join(dir, 'not-a-model.gguf'), 'this is a text file, not GGUF\n');
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('GGUF metadata', () => {
  test('reads the shape, file type, trained context, tensor bytes and vocabulary of a generated model', async () => {
    const f = await facts(join(dir, 'tiny-f16.gguf'));
    expect(f).toMatchObject({
      architecture: 'llama', blockCount: 2, embeddingLength: 64, headCount: 4, headCountKv: 2,
      keyLength: 16, valueLength: 16, feedForwardLength: 128, contextLength: 512, fileType: 'MOSTLY_F16',
      tensorDataBytes: tensorBytesByHand(shape),
    });
    expect(f.vocabulary).toMatchObject({ tokenizerModel: 'llama', tokenCount: VOCAB, bosId: 1, eosId: 2, addBos: true });
    expect((await facts(join(dir, 'tiny-f32.gguf'))).tensorDataBytes).toBe(tensorBytesByHand({ ...shape, fileType: 'f32', nHeadKv: 4 }));
  });

  test('two generated models share one vocabulary fingerprint', async () => {
    const [a, b] = await Promise.all([facts(join(dir, 'tiny-f16.gguf')), facts(join(dir, 'tiny-f32.gguf'))]);
    expect(a.vocabulary?.tokensHash).toBe(b.vocabulary?.tokensHash);
  });

  test('a file that is not GGUF is a value naming the file, not a throw', async () => {
    const result = await readGgufFacts(join(dir, 'not-a-model.gguf'));
    expect(result).toEqual({ ok: false, error: `${join(dir, 'not-a-model.gguf')}: not a readable GGUF model (not a GGUF file: it starts with "this", not "GGUF")` });
    expect(await cachedMetadataReader()(join(dir, 'missing.gguf'))).toEqual({
      ok: false, error: expect.stringMatching(/missing\.gguf: cannot read the model file: ENOENT/),
    });
  });

  test('a file cut inside its header, or GGUF then garbage, is an error at once, not a hang or a model of zeros', async () => {
    const whole = await readFile(join(dir, 'tiny-f16.gguf'));
    await writeFile(join(dir, 'cut-header.gguf'), whole.subarray(0, 40));
    expect(await readGgufFacts(join(dir, 'cut-header.gguf'))).toEqual({
      ok: false,
      error: expect.stringMatching(
        /cut-header\.gguf: not a readable GGUF model \(a header of 24 key-value pairs and 21 tensors needs at least \d+ bytes, but the file has only 16 bytes left; the file is corrupt or cut short\)$/,
      ),
    });
    // Magic intact, the rest garbage: node-llama-cpp counted through zeros here until a timeout stopped it.
    await writeFile(join(dir, 'garbage.gguf'), 'GGUF but not really');
    expect(await readGgufFacts(join(dir, 'garbage.gguf'))).toEqual({
      ok: false, error: `${join(dir, 'garbage.gguf')}: not a readable GGUF model (GGUF version 1953849888; llama.cpp loads versions 2 and 3)`,
    });
  });

  test('a truncated download still has a readable header: its tensor bytes are what is on disk', async () => {
    const f = await facts(join(dir, 'truncated.gguf'));
    expect(f.tensorDataBytes).toBeLessThan(tensorBytesByHand(shape));
    expect(f.tensorDataBytes).toBeGreaterThan(0);
  });

  test('the cache reads a file once until its size or mtime changes', async () => {
    const reads: string[] = [];
    const reader = cachedMetadataReader(async (path): Promise<MetadataResult> => {
      reads.push(path);
      return readGgufFacts(path);
    });
    const path = join(dir, 'tiny-f16.gguf');
    await Promise.all([reader(path), reader(path)]);
    await reader(path);
    expect(reads).toEqual([path]);
    await utimes(path, new Date(), new Date(Date.now() + 5000));
    await reader(path);
    expect(reads).toEqual([path, path]);
  });
});

describe('footprint estimate', () => {
  test('full offload: weights are the tensor bytes, KV per token from the shape, compute from the formula', async () => {
    const f = await facts(join(dir, 'tiny-f16.gguf'));
    const result = estimateFootprint({ path: 'tiny', facts: f, contextTokens: 512, gpuLayers: 'all' });
    // K and V × 2 layers × (head_dim 16 × 2 KV heads) × 2 bytes (f16)
    const kvByHand = 2 * 2 * (16 * 2) * 2;
    // ubatch 512, flash attention: 4·512·(3·n_ff 128 + 4·n_embd 64 + n_vocab) + 2·512·n_ctx 512
    const computeByHand = 4 * 512 * (3 * 128 + 4 * 64 + VOCAB) + 2 * 512 * 512;
    expect(result).toEqual({
      ok: true,
      estimate: {
        weightsBytes: tensorBytesByHand(shape), kvBytesPerToken: kvByHand, contextTokens: 512, computeBytes: computeByHand, layers: 2,
        blockWeightsBytes: blockBytesByHand(shape), expertBytesPerBlock: 0, nonBlockWeightsBytes: nonBlockBytesByHand(shape),
      },
    });
  });

  test('without grouped-query attention the KV cache is proportionally larger', async () => {
    const result = estimateFootprint({ path: 'f32', facts: await facts(join(dir, 'tiny-f32.gguf')), contextTokens: 256, gpuLayers: 'all' });
    expect(result.ok && result.estimate.kvBytesPerToken).toBe(2 * 2 * (16 * 4) * 2);
  });

  test('fewer GPU layers than blocks put those blocks, their KV and the output on the device, and count only those layers', async () => {
    const f = await facts(join(dir, 'tiny-f16.gguf'));
    const full = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 'all' });
    const half = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 1 });
    const none = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 0 });
    const beyond = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 99 });
    if (!full.ok || !half.ok || !none.ok || !beyond.ok) throw new Error('estimate failed');
    // llama.cpp's -ngl 1 and up puts the output layer on the device: what is outside the blocks stays there.
    expect(half.estimate.weightsBytes).toBe(nonBlockBytesByHand(shape) + blockBytesByHand(shape));
    expect(half.estimate.kvBytesPerToken).toBe(full.estimate.kvBytesPerToken / 2);
    // -ngl 0: nothing of the model on the device.
    expect(none.estimate).toMatchObject({ weightsBytes: 0, kvBytesPerToken: 0, nonBlockWeightsBytes: 0 });
    expect(beyond.estimate).toEqual(full.estimate);
    // The tiny model has 2 blocks: the layers 'partial' splits are the ones a full launch offloads.
    expect([full, half, none, beyond].map((r) => r.estimate.layers)).toEqual([2, 1, 0, 2]);
  });

  test('a projector adds its weights and its image encoder compute', async () => {
    const f = await facts(join(dir, 'tiny-f16.gguf'));
    const vision = { imageSize: 336, patchSize: 14, embeddingLength: 1024, headCount: 16 };
    const projector = { ...f, architecture: 'clip', tensorDataBytes: 600_000_000, vision };
    const plain = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 'all' });
    const withProjector = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 'all', projector });
    if (!plain.ok || !withProjector.ok) throw new Error('estimate failed');
    // 576 patches: 4 · (576² · 16 heads + 4 · 576 · 1024)
    expect(projectorComputeBytes(vision)).toBe(4 * (576 * 576 * 16 + 4 * 576 * 1024));
    expect(withProjector.estimate.weightsBytes - plain.estimate.weightsBytes).toBe(600_000_000);
    expect(withProjector.estimate.computeBytes - plain.estimate.computeBytes).toBe(projectorComputeBytes(vision));
  });

  test('the compute buffer grows with context and never uses a micro-batch larger than the context', () => {
    const f = { embeddingLength: 4096, feedForwardLength: 11008, vocabulary: null };
    expect(computeBufferBytes(f, 8192)).toBe(4 * 512 * (3 * 11008 + 4 * 4096) + 2 * 512 * 8192);
    expect(computeBufferBytes(f, 32768) - computeBufferBytes(f, 8192)).toBe(2 * 512 * (32768 - 8192));
    expect(computeBufferBytes(f, 100)).toBe(4 * 100 * (3 * 11008 + 4 * 4096) + 2 * 100 * 100);
    // A header without the FFN width is costed at 4 × n_embd, the wide end of llama-family models.
    expect(computeBufferBytes({ ...f, feedForwardLength: null }, 8192)).toBe(4 * 512 * (3 * 4 * 4096 + 4 * 4096) + 2 * 512 * 8192);
  });

  test('the logits rows: a micro-batch on the embedded engine, a row a slot (and a draft\'s tokens) on llama-server', () => {
    const plain = { drafted: false, embeddings: false };
    expect(logitsRows({ engine: 'embedded', ...plain })).toBe(512);
    expect(logitsRows({ engine: 'embedded', parallel: 1, ...plain })).toBe(512);
    // llama-server's n_outputs_max: slots × (1 + the draft's 16 tokens), at most the micro-batch.
    expect(logitsRows({ engine: 'llama-server', parallel: 1, ...plain })).toBe(1);
    expect(logitsRows({ engine: 'llama-server', ...plain })).toBe(4); // no -np: the auto default, 4 slots
    expect(logitsRows({ engine: 'llama-server', parallel: 2, drafted: true, embeddings: false })).toBe(2 * 17);
    expect(logitsRows({ engine: 'llama-server', parallel: 64, drafted: true, embeddings: false })).toBe(512);
    expect(logitsRows({ engine: 'llama-server', parallel: 8, ...plain }, 4)).toBe(4);
    // Embeddings keep every token's output.
    expect(logitsRows({ engine: 'llama-server', parallel: 1, drafted: false, embeddings: true })).toBe(512);
  });

  test('a large vocabulary is priced by the engine: a micro-batch of logits on the embedded engine, a row a slot on llama-server', async () => {
    // Qwen2.5-0.5B's shape at ctx 2048: n_embd 896, n_ff 4864, 151,936 tokens.
    const f = { ...(await facts(join(dir, 'tiny-f16.gguf'))), embeddingLength: 896, feedForwardLength: 4864 };
    const qwen = { ...f, vocabulary: { ...f.vocabulary!, tokenCount: 151_936 } };
    const graph = 4 * 512 * (3 * 4864 + 4 * 896) + 2 * 512 * 2048;
    const on = (engine: 'embedded' | 'llama-server', parallel?: number) =>
      estimateFootprint({ path: 'q', facts: qwen, contextTokens: 2048, gpuLayers: 'all', logits: { engine, ...(parallel !== undefined ? { parallel } : {}), drafted: false, embeddings: false } });
    const embedded = on('embedded');
    const server = on('llama-server');
    const serverOneSlot = on('llama-server', 1);
    const unknown = estimateFootprint({ path: 'q', facts: qwen, contextTokens: 2048, gpuLayers: 'all' });
    if (!embedded.ok || !server.ok || !serverOneSlot.ok || !unknown.ok) throw new Error('estimate failed');
    expect(embedded.estimate.computeBytes).toBe(graph + 4 * 512 * 151_936);
    expect(server.estimate.computeBytes).toBe(graph + 4 * 4 * 151_936);
    expect(serverOneSlot.estimate.computeBytes).toBe(graph + 4 * 1 * 151_936);
    // ~334 MiB against ~40 MiB (llama.cpp allocated 300 and 37.5 MiB for this shape).
    expect(embedded.estimate.computeBytes - server.estimate.computeBytes).toBeGreaterThan(250 * 1024 ** 2);
    // An engine not known is priced as the embedded engine: the larger.
    expect(unknown.estimate.computeBytes).toBe(embedded.estimate.computeBytes);
    expect(computeBufferBytes(qwen, 2048, { engine: 'llama-server', drafted: false, embeddings: false })).toBe(server.estimate.computeBytes);
  });

  test.each<[readonly number[], number]>([
    [[], 0],
    [[0, 0, 0], 0],
    [[5, 5, 5], 5],
    [[0, 9, 9, 9], 0], // a dense first block: --n-cpu-moe 1 moves nothing
    [[9, 9, 0, 9], 6], // the first three blocks move 18 bytes: 6 a block
    [[10, 3], 6],
  ])('the expert bytes --n-cpu-moe moves per block, of blocks holding %j: %d', (experts, perBlock) => {
    expect(expertBytesMovedPerBlock(experts)).toBe(perBlock);
  });

  test('for every N, N blocks of the per-block expert figure are at most what --n-cpu-moe N moves', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(1 << 30), { maxLength: 64 }), (experts) => {
        const perBlock = expertBytesMovedPerBlock(experts);
        let moved = 0;
        experts.forEach((bytes, i) => {
          moved += bytes;
          expect((i + 1) * perBlock).toBeLessThanOrEqual(moved);
        });
      }),
      { numRuns: 2000 },
    );
  });

  test('a mixture of experts: the largest block, and experts per block only as far as the first blocks have them', async () => {
    const shape = { nLayer: 4, nEmbd: 64, nExpert: 8, nFfExpert: 32, nFfDense: 128, nVocab: 300, type: 'f16' } as const;
    await writeMoeGguf(join(dir, 'moe-uniform.gguf'), { ...shape, denseFirst: 0 });
    await writeMoeGguf(join(dir, 'moe-dense-first.gguf'), { ...shape, denseFirst: 1 });
    const experts = 3 * 64 * 32 * 8 * 2;
    const uniform = estimateFootprint({ path: 'u', facts: await facts(join(dir, 'moe-uniform.gguf')), contextTokens: 1024, gpuLayers: 'all' });
    const denseFirst = estimateFootprint({ path: 'd', facts: await facts(join(dir, 'moe-dense-first.gguf')), contextTokens: 1024, gpuLayers: 'all' });
    if (!uniform.ok || !denseFirst.ok) throw new Error('estimate failed');
    expect(uniform.estimate.expertBytesPerBlock).toBe(experts);
    expect(denseFirst.estimate.expertBytesPerBlock).toBe(0);
    expect(denseFirst.estimate.blockWeightsBytes).toBe(uniform.estimate.blockWeightsBytes);
    // Four blocks of the largest: the dense first block is costed as a MoE block, on the large side.
    expect(denseFirst.estimate.weightsBytes).toBe((denseFirst.estimate.nonBlockWeightsBytes ?? 0) + 4 * (denseFirst.estimate.blockWeightsBytes ?? 0));
  });

  test("the catalog's estimate costs the same through footprintAt's old sum and through layerCostAt: weights + KV + compute", () => {
    const factsArb = fc.record({
      blockCount: fc.integer({ min: 1, max: 80 }),
      blockBytes: fc.array(fc.nat(1 << 28), { minLength: 1, maxLength: 80 }),
      nonBlockBytes: fc.nat(1 << 30),
      headCountKv: fc.integer({ min: 1, max: 64 }),
      keyLength: fc.integer({ min: 1, max: 256 }),
      valueLength: fc.integer({ min: 1, max: 256 }),
    });
    const gpuLayers = fc.oneof(fc.constant<'all'>('all'), fc.integer({ min: 0, max: 100 }));
    fc.assert(
      fc.property(factsArb, gpuLayers, fc.integer({ min: 1, max: 1 << 17 }), fc.constantFrom<'full' | 'smaller-context'>('full', 'smaller-context'), (shape, layers, ctx, level) => {
        const f: GgufFacts = {
          architecture: 'llama', embeddingLength: 4096, headCount: 32, feedForwardLength: 11008, contextLength: null, fileType: null,
          vocabulary: null, vision: null, blockExpertBytes: shape.blockBytes.map(() => 0),
          tensorDataBytes: shape.nonBlockBytes + shape.blockBytes.reduce((a, b) => a + b, 0), ...shape,
        };
        const result = estimateFootprint({ path: 'p', facts: f, contextTokens: ctx, gpuLayers: layers });
        if (!result.ok) throw new Error(result.error);
        const e = result.estimate;
        const context = footprintAt(level, e).contextTokens;
        expect(footprintAt(level, e).deviceBytes).toBe(e.weightsBytes + e.kvBytesPerToken * context + e.computeBytes);
        const cost = layerCostAt(level, e);
        if (cost !== undefined) expect(cost.mainBytes + cost.computeBytesPerDevice + cost.layers * cost.perLayerBytes).toBe(footprintAt(level, e).deviceBytes);
        else expect(e.layers).toBe(0);
      }),
      { numRuns: 2000 },
    );
  });

  test('a header without the layer count cannot be estimated, and says which key is missing', async () => {
    const f = { ...(await facts(join(dir, 'tiny-f16.gguf'))), blockCount: null };
    expect(estimateFootprint({ path: '/m/x.gguf', facts: f, contextTokens: 512, gpuLayers: 'all' })).toEqual({
      ok: false, error: '/m/x.gguf: cannot estimate its memory: the header has no llama.block_count (architecture "llama")',
    });
  });
});
