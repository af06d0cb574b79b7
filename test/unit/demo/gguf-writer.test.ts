import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaCompletion, readGgufFileInfo, type Llama } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { llamaGgufLayout, writeLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { spmVocab } from '../../../core/catalog/demo/spm-vocab.js';

const SHAPE: LlamaModelShape = { name: 'writer-test', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 96, contextLength: 2048, fileType: 'f16', seed: 42 };
const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;

let dir: string;
let llama: Llama;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-writer-'));
  llama = await getLlama({ build: 'never', gpu: false });
});
afterAll(async () => {
  await llama.dispose();
  await rm(dir, { recursive: true, force: true });
});

describe('writeLlamaGguf', () => {
  it('writes metadata that node-llama-cpp reads back', async () => {
    const path = join(dir, 'meta.gguf');
    const { bytes } = await writeLlamaGguf(path, SHAPE);
    expect((await stat(path)).size).toBe(bytes);
    expect(llamaGgufLayout(SHAPE).totalBytes).toBe(bytes);

    const info = await readGgufFileInfo(path);
    expect(info.version).toBe(3);
    expect(info.metadata.general.architecture).toBe('llama');
    expect(info.metadata.general.name).toBe('writer-test');
    expect(info.metadata.general.file_type).toBe(1);
    const llm = info.metadata.llama as Record<string, unknown> & { attention: Record<string, unknown>; rope: Record<string, unknown> };
    expect(llm.context_length).toBe(2048);
    expect(llm.embedding_length).toBe(64);
    expect(llm.block_count).toBe(2);
    expect(llm.feed_forward_length).toBe(96);
    expect(llm.attention.head_count).toBe(4);
    expect(llm.attention.head_count_kv).toBe(2);
    expect(llm.rope.dimension_count).toBe(16);
    expect(info.metadata.tokenizer.ggml.model).toBe('llama');
    expect(info.metadata.tokenizer.ggml.tokens).toHaveLength(spmVocab().tokens.length);
    expect(info.metadata.tokenizer.ggml.tokens).toContain('<0xFF>');
    expect(info.tensorInfo?.find((t) => t.name === 'blk.1.ffn_down.weight')?.dimensions).toEqual([96, 64]);
    expect(info.tensorInfo?.find((t) => t.name === 'blk.0.attn_k.weight')?.dimensions).toEqual([64, 32]);
    expect(info.tensorInfo).toHaveLength(3 + 9 * 2);
  });

  it('is deterministic: same seed, same bytes; another seed, other bytes', async () => {
    const a = join(dir, 'a.gguf');
    const b = join(dir, 'b.gguf');
    const c = join(dir, 'c.gguf');
    await writeLlamaGguf(a, SHAPE);
    await writeLlamaGguf(b, SHAPE);
    await writeLlamaGguf(c, { ...SHAPE, seed: 43 });
    const [ba, bb, bc] = await Promise.all([readFile(a), readFile(b), readFile(c)]);
    expect(ba.equals(bb)).toBe(true);
    expect(ba.equals(bc)).toBe(false);
    expect(bc.length).toBe(ba.length);
  });

  it('rejects a shape llama.cpp cannot run, naming the numbers', async () => {
    await expect(writeLlamaGguf(join(dir, 'bad.gguf'), { ...SHAPE, nHead: 5 })).rejects.toThrow(/nEmbd \(64\) must be a multiple of nHead \(5\)/);
    await expect(writeLlamaGguf(join(dir, 'bad.gguf'), { ...SHAPE, nLayer: 0 })).rejects.toThrow(/nLayer must be a positive integer, got 0/);
    await expect(writeLlamaGguf(join(dir, 'bad.gguf'), { ...SHAPE, fileType: 'q8_0', nFf: 80 })).rejects.toThrow(/q8_0 needs nEmbd and nFf to be multiples of 32, got 64 and 80/);
  });

  it.each(['f16', 'f32', 'q8_0'] as const)('makes a %s model that llama.cpp runs and that prints only printable ASCII', async (fileType) => {
    const path = join(dir, `run-${fileType}.gguf`);
    await writeLlamaGguf(path, { ...SHAPE, fileType });
    const model = await llama.loadModel({ modelPath: path });
    const context = await model.createContext({ contextSize: 1024, threads: 1 });
    try {
      const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
      for (const temperature of [0, 1, 4]) {
        const text = await completion.generateCompletion('Bonjour, ça va? ', { maxTokens: 200, temperature, seed: 1 });
        expect(PRINTABLE_ASCII.test(text)).toBe(true);
        // eos is never emitted, so every generation runs to max_tokens (one character each at most).
        expect(model.tokenize(text).length).toBeGreaterThanOrEqual(150);
      }
    } finally {
      await context.dispose();
      await model.dispose();
    }
  });
});
