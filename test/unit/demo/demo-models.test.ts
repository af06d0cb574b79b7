import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, readGgufFileInfo } from 'node-llama-cpp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SHAPES, generateDemoModels } from '../../../core/catalog/demo/demo-models.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-demo-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('generateDemoModels', () => {
  it('writes the four demo files with the sizes it reports', async () => {
    const demo = await generateDemoModels(dir);
    for (const m of [demo.chat, demo.draft, demo.tiny, demo.broken]) {
      expect(m.path).toBe(join(dir, `${m.id}.gguf`));
      expect((await stat(m.path)).size).toBe(m.bytes);
      expect(m.description.length).toBeGreaterThan(20);
    }
    expect(demo.chat.bytes).toBeGreaterThan(40e6);
    expect(demo.chat.bytes).toBeLessThan(60e6);
    expect(demo.draft.bytes).toBeLessThan(demo.chat.bytes / 10);
  });

  it('gives the draft the same vocabulary as demo-chat', async () => {
    const demo = await generateDemoModels(dir);
    const [chat, draft] = await Promise.all([readGgufFileInfo(demo.chat.path), readGgufFileInfo(demo.draft.path)]);
    expect(draft.metadata.tokenizer.ggml.tokens).toEqual(chat.metadata.tokenizer.ggml.tokens);
    expect(chat.metadata.general.name).toBe(DEMO_SHAPES['demo-chat'].name);
  });

  it('skips files already right and rewrites a file of the wrong size', async () => {
    const first = await generateDemoModels(dir);
    const chatBefore = (await stat(first.chat.path)).mtimeMs;
    await writeFile(first.tiny.path, 'partial');
    const again = await generateDemoModels(dir);
    expect((await stat(again.chat.path)).mtimeMs).toBe(chatBefore);
    expect((await stat(again.tiny.path)).size).toBe(first.tiny.bytes);
  });

  it('makes demo-broken a file that llama.cpp refuses with its own reason', async () => {
    const demo = await generateDemoModels(dir);
    const lines: string[] = [];
    const llama = await getLlama({ build: 'never', gpu: false, logLevel: LlamaLogLevel.error, logger: (_level, message) => lines.push(message) });
    try {
      await expect(llama.loadModel({ modelPath: demo.broken.path })).rejects.toThrow(/Failed to load model/);
      // llama.cpp's own line arrives after the JS error.
      for (let i = 0; i < 50 && !lines.some((l) => l.includes('not within the file bounds')); i++) await new Promise((r) => setTimeout(r, 20));
      expect(lines.join('\n')).toMatch(/tensor '[^']+' data is not within the file bounds/);
    } finally {
      await llama.dispose();
    }
    // getLlama loads and checks node-llama-cpp's native binding in this process: over a minute
    // with two busy processes beside the suite (stress-ng --cpu 2), seconds on an idle machine.
  }, 240_000);
});
