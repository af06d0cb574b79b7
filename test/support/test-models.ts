// Real generated GGUF models for tests, written once per test process into a temp folder.
//
// Why generate instead of committing fixtures: the writer is deterministic and fast (a tiny
// model takes milliseconds), so fixtures would only add binary churn to the repository.
// The cache below lives as long as the test file's module graph (vitest isolates each file);
// the folder is removed after the file's tests. Not on process 'exit': vitest ends its
// workers without it, and every file that used demoModels() left 50 MB behind in /tmp.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { writeTruncatedLlamaGguf } from '../../core/catalog/demo/corrupt-gguf.js';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { writeLlamaGguf, type LlamaModelShape } from '../../core/catalog/demo/gguf-writer.js';

/** The smallest useful model: loads and decodes in milliseconds on one thread. */
export const TINY_SHAPE: LlamaModelShape = {
  name: 'test-tiny', nLayer: 2, nEmbd: 64, nHead: 4, nHeadKv: 2, nFf: 128, contextLength: 4096, fileType: 'f16', seed: 7,
};
/**
 * A draft for TINY_SHAPE: the same weights (same shape and seed), so it agrees with the target
 * whenever it is confident enough to draft. A smaller random draft is too unsure to draft at
 * all (node-llama-cpp drafts only above 0.6 probability), which would leave the speculative
 * path untested.
 */
export const TINY_DRAFT_SHAPE: LlamaModelShape = { ...TINY_SHAPE, name: 'test-tiny-draft' };

let folder: string | undefined;
const pending = new Map<string, Promise<string>>();

/** This test file's model folder, created on first use and removed after the file's tests. */
export function testModelDir(): string {
  folder ??= mkdtempSync(join(tmpdir(), 'llmtray-models-'));
  return folder;
}

afterAll(() => {
  if (folder) rmSync(folder, { recursive: true, force: true });
  folder = undefined;
  pending.clear();
  demo = undefined;
});

function once(file: string, write: (path: string) => Promise<unknown>): Promise<string> {
  let p = pending.get(file);
  if (!p) {
    const path = join(testModelDir(), file);
    p = write(path).then(() => path);
    pending.set(file, p);
  }
  return p;
}

/** Path of the tiny model (TINY_SHAPE). */
export function tinyModel(): Promise<string> {
  return once('tiny.gguf', (p) => writeLlamaGguf(p, TINY_SHAPE));
}

/** Path of the tiny model's draft (TINY_DRAFT_SHAPE). */
export function tinyDraftModel(): Promise<string> {
  return once('tiny-draft.gguf', (p) => writeLlamaGguf(p, TINY_DRAFT_SHAPE));
}

/** Path of a model with any shape, cached by its name; the name must be unique per shape. */
export function modelWithShape(shape: LlamaModelShape): Promise<string> {
  return once(`shape-${shape.name}.gguf`, (p) => writeLlamaGguf(p, shape));
}

/** Path of a corrupt model: valid header, tensor data cut short ("not within the file bounds"). */
export function corruptModel(): Promise<string> {
  return once('corrupt.gguf', (p) => writeTruncatedLlamaGguf(p, TINY_SHAPE));
}

let demo: Promise<DemoModels> | undefined;
/** The full demo set (demo-chat is ~48 MB; use it only where size matters). */
export function demoModels(): Promise<DemoModels> {
  demo ??= generateDemoModels(testModelDir());
  return demo;
}
