import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { writeTruncatedLlamaGguf } from '../../../core/catalog/demo/corrupt-gguf.js';
import { writeLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { computeBufferBytes, estimateFootprint, projectorComputeBytes } from '../../../core/catalog/footprint.js';
import { cachedMetadataReader, readGgufFacts, type GgufFacts, type MetadataResult } from '../../../core/catalog/gguf-metadata.js';

let dir: string;
const shape: LlamaModelShape = { name: 'tiny', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128, contextLength: 512, fileType: 'f16', seed: 1 };
const VOCAB = 356; // the writer's shared SPM byte vocabulary

/** Tensor bytes of the writer's llama layout, by hand (every tensor is a multiple of the 32-byte alignment). */
function tensorBytesByHand(s: LlamaModelShape): number {
  const el = s.fileType === 'f16' ? 2 : 4;
  const kvWidth = (s.nEmbd / s.nHead) * s.nHeadKv;
  const perLayer = 2 * s.nEmbd * 4 + (2 * s.nEmbd * s.nEmbd + 2 * s.nEmbd * kvWidth + 3 * s.nEmbd * s.nFf) * el;
  return 2 * VOCAB * s.nEmbd * el + s.nLayer * perLayer + s.nEmbd * 4;
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
        /cut-header\.gguf: not a readable GGUF model \(a header of 23 key-value pairs and 21 tensors needs at least \d+ bytes, but the file has only 16 bytes left; the file is corrupt or cut short\)$/,
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
      estimate: { weightsBytes: tensorBytesByHand(shape), kvBytesPerToken: kvByHand, contextTokens: 512, computeBytes: computeByHand, layers: 2 },
    });
  });

  test('without grouped-query attention the KV cache is proportionally larger', async () => {
    const result = estimateFootprint({ path: 'f32', facts: await facts(join(dir, 'tiny-f32.gguf')), contextTokens: 256, gpuLayers: 'all' });
    expect(result.ok && result.estimate.kvBytesPerToken).toBe(2 * 2 * (16 * 4) * 2);
  });

  test('fewer GPU layers than blocks put the offloaded share of weights and KV on the device, and count only those layers', async () => {
    const f = await facts(join(dir, 'tiny-f16.gguf'));
    const full = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 'all' });
    const half = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 1 });
    const none = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 0 });
    const beyond = estimateFootprint({ path: 't', facts: f, contextTokens: 512, gpuLayers: 99 });
    if (!full.ok || !half.ok || !none.ok || !beyond.ok) throw new Error('estimate failed');
    expect(half.estimate.weightsBytes).toBe(Math.ceil(full.estimate.weightsBytes / 2));
    expect(half.estimate.kvBytesPerToken).toBe(full.estimate.kvBytesPerToken / 2);
    expect(none.estimate).toMatchObject({ weightsBytes: 0, kvBytesPerToken: 0 });
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

  test('a header without the layer count cannot be estimated, and says which key is missing', async () => {
    const f = { ...(await facts(join(dir, 'tiny-f16.gguf'))), blockCount: null };
    expect(estimateFootprint({ path: '/m/x.gguf', facts: f, contextTokens: 512, gpuLayers: 'all' })).toEqual({
      ok: false, error: '/m/x.gguf: cannot estimate its memory: the header has no llama.block_count (architecture "llama")',
    });
  });
});
