import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { Catalog, type CatalogModel } from '../../../core/catalog/catalog.js';
import { cpuBufferPrior } from '../../../core/catalog/cpu-buffer-prior.js';
import { writeLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { readGgufFacts, type MetadataReader } from '../../../core/catalog/gguf-metadata.js';
import type { PlatformFacts } from '../../../core/catalog/paths.js';
import { vocabularyFingerprint } from '../../../core/catalog/vocabulary.js';
import { estimateOnCpu, footprintAt } from '../../../core/policy/levels.js';

let root: string;
let facts: PlatformFacts;
let configPath: string;
let dataDir: string;
const shape: LlamaModelShape = { name: 'tiny', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128, contextLength: 2048, fileType: 'f16', seed: 1 };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'llmtray-catalog-'));
  // homeDir = root, so the default model dirs (~/models, …) are inside the temp tree.
  facts = { platform: 'linux', env: {}, homeDir: root };
  await mkdir(join(root, 'models'), { recursive: true });
  await writeLlamaGguf(join(root, 'models/Tiny-Main-F16.gguf'), shape);
  await writeLlamaGguf(join(root, 'models/Tiny-Draft-F16.gguf'), { ...shape, name: 'draft', nLayer: 1, seed: 2 });
  await writeFile(join(root, 'models/corrupt.gguf'), 'a text file saved with the wrong extension\n');
  configPath = join(root, 'config/config.yaml');
  dataDir = join(root, 'data');
  await mkdir(join(root, 'config'));
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

beforeEach(async () => {
  await rm(configPath, { force: true });
  await rm(dataDir, { recursive: true, force: true });
});

// settleMs 0: the files this suite writes a moment before are finished, not being downloaded.
const open = (readMetadata?: MetadataReader) => Catalog.open({ configPath, dataDir, facts, settleMs: 0, ...(readMetadata ? { readMetadata } : {}) });
const byId = (catalog: Catalog, id: string): CatalogModel => {
  const model = catalog.models().find((m) => m.id === id);
  if (!model) throw new Error(`no ${id} in ${catalog.models().map((m) => m.id).join(', ')}`);
  return model;
};
const MAIN_CONFIG = `models:
  - id: main
    path: ~/models/Tiny-Main-F16.gguf
    ctx: 1024
    aliases: [gpt-4o]
    priority: 5
    draft: tiny-draft-f16
`;

describe('Catalog', () => {
  test('without a config file: every model in the default folders, ids from names, trained context capped', async () => {
    const catalog = await open();
    expect(catalog.models().map((m) => [m.id, m.source])).toEqual([
      ['corrupt', 'discovered'], ['tiny-draft-f16', 'discovered'], ['tiny-main-f16', 'discovered'],
    ]);
    const main = byId(catalog, 'tiny-main-f16');
    expect(main).toMatchObject({ ctx: 2048, gpuLayers: 'all', engine: 'auto', pinnedByDefault: false, metadataError: null });
    expect(main.estimate).toMatchObject({ contextTokens: 2048, kvBytesPerToken: 2 * 2 * 16 * 2 * 2 });
  });

  test('an unreadable model is listed with the reason and no estimate; the others are unaffected', async () => {
    const catalog = await open();
    const corrupt = byId(catalog, 'corrupt');
    expect(corrupt.estimate).toBeNull();
    expect(corrupt.metadataError).toMatch(new RegExp(`^${join(root, 'models/corrupt.gguf')}: not a readable GGUF model`));
  });

  test('a configured model replaces the discovered one with the same file, and carries its draft', async () => {
    await writeFile(configPath, MAIN_CONFIG);
    const catalog = await open();
    expect(catalog.models().map((m) => m.id)).toEqual(['main', 'corrupt', 'tiny-draft-f16']);
    const main = byId(catalog, 'main');
    expect(main).toMatchObject({ source: 'config', ctx: 1024, priority: 5, draftId: 'tiny-draft-f16', metadataError: null });
    // The draft runs at the primary's context, with its own (one-layer) shape.
    expect(main.estimate?.draft).toMatchObject({ contextTokens: 1024, kvBytesPerToken: 1 * 2 * 16 * 2 * 2 });
    expect(catalog.resolve('GPT-4O')?.id).toBe('main');
    expect(catalog.resolve('main')?.id).toBe('main');
    expect(catalog.resolve('nothing')).toBeUndefined();
  });

  test('a draft with another vocabulary is a config error; the last good config stays', async () => {
    // The demo writer has one vocabulary, so the draft's is replaced here to simulate another model family.
    const draftPath = join(root, 'models/Tiny-Draft-F16.gguf');
    const otherVocabulary: MetadataReader = async (path) => {
      const result = await readGgufFacts(path);
      if (!result.ok || path !== draftPath) return result;
      const vocabulary = vocabularyFingerprint({ model: 'llama', tokens: Array.from({ length: 600 }, (_, i) => `x${i}`), bosId: 1, eosId: 2, addBos: true });
      return { ok: true, facts: { ...result.facts, vocabulary } };
    };
    await writeFile(configPath, 'models:\n  - {id: main, path: ~/models/Tiny-Main-F16.gguf}\n');
    const catalog = await open(otherVocabulary);
    await writeFile(configPath, MAIN_CONFIG);
    const result = await catalog.reload();
    expect(result).toEqual({
      ok: false,
      errors: [`${configPath}: models[0].draft: expected a draft with the same vocabulary as "main", got "tiny-draft-f16" (vocabulary sizes differ by 242 tokens (358 vs 600; llama.cpp allows 128))`],
    });
    expect(byId(catalog, 'main').draftId).toBeUndefined();
    expect(catalog.problems()).toEqual(!result.ok ? result.errors : []);
  });

  test('a bad edit keeps the last good models; the fix takes effect and is announced', async () => {
    await writeFile(configPath, MAIN_CONFIG);
    const catalog = await open();
    const changes: (readonly CatalogModel[])[] = [];
    catalog.onDidChange((models) => changes.push(models));
    await writeFile(configPath, MAIN_CONFIG.replace('ctx: 1024', 'ctx: -5').replace('tiny-draft-f16', 'nope'));
    const bad = await catalog.reload();
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.errors).toEqual([`${configPath}: models[0].ctx: expected a positive integer (context tokens), got -5`]);
    expect(byId(catalog, 'main').ctx).toBe(1024);
    expect(changes).toEqual([]);
    await writeFile(configPath, MAIN_CONFIG.replace('ctx: 1024', 'ctx: 512'));
    expect(await catalog.reload()).toEqual({ ok: true });
    expect(byId(catalog, 'main').ctx).toBe(512);
    expect(changes).toHaveLength(1);
  });

  test('a rescan that throws fails that reload only: the models stay, and the next reload takes the new config', async () => {
    await writeFile(configPath, MAIN_CONFIG);
    let failing = false;
    const catalog = await open(async (path) => {
      if (failing) throw new Error('EIO: i/o error, read');
      return readGgufFacts(path);
    });
    failing = true;
    await writeFile(configPath, MAIN_CONFIG.replace('ctx: 1024', 'ctx: 512'));
    const failed = await catalog.reload();
    expect(failed.ok).toBe(false);
    expect(!failed.ok && failed.errors.at(-1)).toBe(`${configPath}: the models could not be rescanned, the last list stays: EIO: i/o error, read`);
    expect(byId(catalog, 'main').ctx).toBe(1024);
    failing = false;
    expect(await catalog.reload()).toEqual({ ok: true });
    expect(byId(catalog, 'main').ctx).toBe(512);
  });

  test('an unknown draft id is refused with the ids that exist', async () => {
    await writeFile(configPath, MAIN_CONFIG.replace('draft: tiny-draft-f16', 'draft: tiny-draft'));
    const catalog = await open();
    expect(catalog.problems()).toEqual([
      `${configPath}: models[0].draft: expected another model's id, got "tiny-draft" (no model has that id; known ids: corrupt, main, tiny-draft-f16)`,
    ]);
    expect(catalog.models().map((m) => m.id)).toEqual(['corrupt', 'tiny-draft-f16', 'tiny-main-f16']);
  });

  test('the definition hash follows what can fix a failed launch, and nothing else', async () => {
    const hashWith = async (config: string) => {
      await writeFile(configPath, config);
      const catalog = await open();
      return byId(catalog, 'main').definitionHash;
    };
    const base = await hashWith(MAIN_CONFIG);
    expect(await hashWith(MAIN_CONFIG)).toBe(base);
    expect(await hashWith(MAIN_CONFIG.replace('priority: 5', 'priority: 9').replace('[gpt-4o]', '[gpt-5]'))).toBe(base);
    const changed = [
      await hashWith(MAIN_CONFIG.replace('ctx: 1024', 'ctx: 512')),
      await hashWith(`${MAIN_CONFIG}    args: [--flash-attn, on]\n`),
      await hashWith(`${MAIN_CONFIG}    engineArgs: { llama-server: [--flash-attn, on] }\n`),
      await hashWith(`${MAIN_CONFIG}    gpuLayers: 1\n`),
      await hashWith(MAIN_CONFIG.replace('    draft: tiny-draft-f16\n', '')),
    ];
    expect(new Set([base, ...changed]).size).toBe(6);
    // A re-download of the same file (new mtime) is a new definition too.
    const modelPath = join(root, 'models/Tiny-Main-F16.gguf');
    await utimes(modelPath, new Date(), new Date(Date.now() + 60_000));
    expect(await hashWith(MAIN_CONFIG)).not.toBe(base);
  });

  test("a projector named in args, or in llama-server's engineArgs (only it takes --mmproj), is the model's", async () => {
    for (const named of ['    args: [--mmproj, /p/proj.gguf]\n', '    engineArgs: { llama-server: [--mmproj, /p/proj.gguf] }\n']) {
      await writeFile(configPath, `${MAIN_CONFIG}${named}`);
      expect(byId(await open(), 'main').projectorPath, named).toBe('/p/proj.gguf');
    }
  });

  test('a measurement raises the estimate to at least what was measured, survives a restart, and ends with the definition', async () => {
    await writeFile(configPath, MAIN_CONFIG);
    const catalog = await open();
    const estimated = footprintAt('full', byId(catalog, 'main').estimate!).deviceBytes;
    const changes: number[] = [];
    catalog.onDidChange(() => changes.push(1));

    await catalog.learnFromMeasurement('main', estimated - 1000);
    expect(footprintAt('full', byId(catalog, 'main').estimate!).deviceBytes).toBe(estimated);
    expect(changes).toEqual([]);

    await catalog.learnFromMeasurement('main', estimated + 5_000_000);
    const raised = byId(catalog, 'main').estimate!;
    expect(footprintAt('full', raised).deviceBytes).toBe(estimated + 5_000_000);
    expect(changes).toHaveLength(1);
    expect(JSON.parse(await readFile(join(dataDir, 'measurements.json'), 'utf8')).models.main.bytes).toBe(estimated + 5_000_000);

    const reopened = await open();
    expect(byId(reopened, 'main').estimate).toEqual(raised);

    await writeFile(configPath, MAIN_CONFIG.replace('ctx: 1024', 'ctx: 512'));
    await reopened.reload();
    expect(footprintAt('full', byId(reopened, 'main').estimate!).deviceBytes).toBeLessThan(estimated);
    await expect(reopened.learnFromMeasurement('ghost', 1)).rejects.toThrow('Cannot learn a measurement for "ghost": no such model in the catalog');
  });

  test('parallel is a new definition priced for every slot; queueLimit is neither; engines: gives a discovered model its defaults', async () => {
    await writeFile(configPath, MAIN_CONFIG);
    const one = byId(await open(), 'main');
    expect(one.limits).toEqual({});
    await writeFile(configPath, `engines:\n  parallel: 2\n  queueLimit: 4\n${MAIN_CONFIG}    parallel: 3\n`);
    const catalog = await open();
    const three = byId(catalog, 'main');
    expect(three.limits).toEqual({ parallel: 3, queueLimit: 4 });
    expect(byId(catalog, 'tiny-draft-f16').limits).toEqual({ parallel: 2, queueLimit: 4 });
    // Each request keeps its 1024 tokens; the engine holds them three times, and the plan prices that, the draft's cache too.
    expect(three.ctx).toBe(1024);
    expect(three.estimate).toMatchObject({ contextTokens: 3 * 1024, draft: { contextTokens: 3 * 1024 } });
    const kv = (model: CatalogModel) => model.estimate!.kvBytesPerToken * model.estimate!.contextTokens;
    expect(kv(three)).toBe(3 * kv(one));
    expect(footprintAt('full', three.estimate!).deviceBytes).toBeGreaterThan(footprintAt('full', one.estimate!).deviceBytes);
    expect(three.definitionHash).not.toBe(one.definitionHash);
    // The queue is llmtray's own count, never the engine's: no relaunch for it, no quarantine released.
    await writeFile(configPath, `engines:\n  parallel: 2\n  queueLimit: 9\n${MAIN_CONFIG}    parallel: 3\n`);
    expect(byId(await open(), 'main').definitionHash).toBe(three.definitionHash);
  });

  test('a configured model whose file is missing is listed with the reason', async () => {
    await writeFile(configPath, 'models:\n  - {id: gone, path: /nonexistent/gone.gguf}\n');
    const catalog = await open();
    expect(byId(catalog, 'gone')).toMatchObject({
      estimate: null, sizeBytes: 0, metadataError: expect.stringMatching(/^\/nonexistent\/gone\.gguf: cannot read the model file: ENOENT/),
    });
  });
});

describe('the compute buffer in the catalog is priced for the engine that runs the model', () => {
  const config = (engine: string) => `models:
  - id: main
    path: ~/models/Tiny-Main-F16.gguf
    ctx: 1024
    engine: ${engine}
    draft: tiny-draft-f16
`;
  const VOCAB = 358; // the writer's shared vocabulary
  // ubatch 512 at ctx 1024: the graph without its logits, then rows × n_vocab f32s of them.
  const graph = 4 * 512 * (3 * 128 + 4 * 64) + 2 * 512 * 1024;
  const compute = (model: CatalogModel) => [model.estimate?.computeBytes, model.estimate?.draft?.computeBytes];

  test('auto: a micro-batch of logits until a llama-server is said to be found, then a row a slot, the draft\'s tokens with it', async () => {
    await writeFile(configPath, config('auto'));
    expect(compute(byId(await open(), 'main'))).toEqual([graph + 4 * 512 * VOCAB, graph + 4 * 512 * VOCAB]);
    const onServer = await Catalog.open({ configPath, dataDir, facts, settleMs: 0, engineOf: () => 'llama-server' });
    // No -np: 4 slots; the model verifies 1 + 16 drafted tokens a slot, its draft samples one.
    expect(compute(byId(onServer, 'main'))).toEqual([graph + 4 * 4 * 17 * VOCAB, graph + 4 * 4 * VOCAB]);
  });

  test('engine: llama-server is priced for it without being told; engine: embedded never is', async () => {
    await writeFile(configPath, config('llama-server'));
    expect(compute(byId(await open(), 'main'))).toEqual([graph + 4 * 4 * 17 * VOCAB, graph + 4 * 4 * VOCAB]);
    await writeFile(configPath, config('embedded'));
    const embedded = await Catalog.open({ configPath, dataDir, facts, settleMs: 0, engineOf: (m) => (m.engine === 'auto' ? 'llama-server' : m.engine) });
    expect(compute(byId(embedded, 'main'))).toEqual([graph + 4 * 512 * VOCAB, graph + 4 * 512 * VOCAB]);
  });
});

describe('the CPU\'s extra weight buffers in the catalog', () => {
  const config = (repack: boolean) => `models:
  - id: main
    path: ~/models/Tiny-Main-F16.gguf
    ctx: 1024
    engine: embedded
    repack: ${repack}
    draft: tiny-draft-f16
`;
  // As if this (engine build, CPU) had been seen to copy every f16 matrix (ggml type 1) into an extra buffer.
  const f16Copied: Record<string, number> = { '1': 1 };
  const learned = () => Catalog.open({ configPath, dataDir, facts, settleMs: 0, cpuBufferRatios: (model) => (model.engine === 'embedded' ? f16Copied : {}) });

  test('prices the learned buffers for the model and its draft on the CPU, and none with repack: false, which is a new definition', async () => {
    await writeFile(configPath, config(true));
    const repacked = byId(await learned(), 'main');
    expect(repacked.repack).toBe(true);
    const f16 = repacked.cpuMatrixBytes?.['1'] ?? 0;
    expect(f16).toBeGreaterThan(0);
    const estimate = repacked.estimate!;
    // Every f16 matrix but the input embeddings: its blocks and its output.
    expect((estimate.cpuBufferBytesPerBlock ?? 0) * (estimate.layers ?? 0) + (estimate.cpuBufferNonBlockBytes ?? 0)).toBe(f16);
    expect(estimate.draft?.cpuBufferBytesPerBlock ?? 0).toBeGreaterThan(0);

    await writeFile(configPath, config(false));
    const plain = byId(await learned(), 'main');
    expect(plain.repack).toBe(false);
    expect(plain.estimate?.cpuBufferBytesPerBlock).toBeUndefined();
    expect(plain.estimate?.draft?.cpuBufferBytesPerBlock).toBeUndefined();
    expect(plain.definitionHash).not.toBe(repacked.definitionHash);
  });

  // The tiny f16 files read as a Q4_K_M: Q4_K matrices in the blocks, a Q6_K output (ggml types 12 and 14).
  const asQ4KM: MetadataReader = async (path) => {
    const read = await readGgufFacts(path);
    if (!read.ok || read.facts.cpuMatrixBytes === undefined) return read;
    const retype = (bytes: Record<string, number>, type: string) => ({ [type]: Object.values(bytes).reduce((a, b) => a + b, 0) });
    const { blocks, nonBlock } = read.facts.cpuMatrixBytes;
    return { ok: true, facts: { ...read.facts, cpuMatrixBytes: { blocks: blocks.map((block) => retype(block, '12')), nonBlock: retype(nonBlock, '14') } } };
  };
  const avx2Prior = cpuBufferPrior({ arch: 'x64', flags: ['avx', 'avx2'] });
  const cpuBuffersOf = (model: CatalogModel) => (model.estimate?.cpuBufferBytesPerBlock ?? 0) * (model.estimate?.layers ?? 0) + (model.estimate?.cpuBufferNonBlockBytes ?? 0);

  test('prices a Q4_K_M\'s Q4_K matrices by the CPU\'s prior before any load has taught them, a learned ratio instead once one has, and nothing with repack: false', async () => {
    await writeFile(configPath, config(true));
    const withPrior = (learned: Record<string, number>) =>
      Catalog.open({ configPath, dataDir, facts, settleMs: 0, readMetadata: asQ4KM, cpuBufferPrior: avx2Prior, cpuBufferRatios: () => learned });
    const bare = byId(await Catalog.open({ configPath, dataDir, facts, settleMs: 0, readMetadata: asQ4KM }), 'main');
    const first = byId(await withPrior({}), 'main');
    const q4k = first.cpuMatrixBytes?.['12'] ?? 0;
    const q6k = first.cpuMatrixBytes?.['14'] ?? 0;
    expect(q4k).toBeGreaterThan(0);
    expect(q6k).toBeGreaterThan(0);
    // AVX2 repacks every Q4_K matrix and no Q6_K one: the blocks' Q4_K once more, on the CPU.
    expect(cpuBuffersOf(bare)).toBe(0);
    expect(cpuBuffersOf(first)).toBe(q4k);
    expect(footprintAt('full', estimateOnCpu(first.estimate!)).deviceBytes - footprintAt('full', estimateOnCpu(bare.estimate!)).deviceBytes).toBe(q4k + (first.estimate?.draft?.cpuBufferBytesPerBlock ?? 0) * (first.estimate?.draft?.layers ?? 0));
    // A load taught a share for both types (their average, as learnCpuBufferRatios learns two new types at once): it wins.
    const taught = byId(await withPrior({ '12': 0.5, '14': 0.5 }), 'main');
    expect(cpuBuffersOf(taught)).toBe(Math.ceil(0.5 * q4k) + Math.ceil(0.5 * q6k));

    await writeFile(configPath, config(false));
    expect(cpuBuffersOf(byId(await withPrior({}), 'main'))).toBe(0);
  });
});
