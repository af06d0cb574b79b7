// A model's card as Ollama's /api/show quotes it, read from a generated GGUF (the demo writer's
// llama shape): every header key, the weights counted from the tensor table, the file type's
// name, the chat template; arrays only when verbose; a re-read only when the file changed.
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { spmVocab } from '../../../core/catalog/demo/spm-vocab.js';
import { cachedGgufCardReader } from '../../../core/catalog/gguf-card.js';

const SHAPE: LlamaModelShape = { name: 'card', nLayer: 2, nEmbd: 32, nHead: 2, nHeadKv: 2, nFf: 64, contextLength: 512, fileType: 'f16', seed: 3 };

describe('the GGUF card', () => {
  let dir: string;
  let path: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gguf-card-'));
    path = join(dir, 'card.gguf');
    await writeLlamaGguf(path, SHAPE);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('quotes the header: architecture, file type, keys, template, and the weights counted', async () => {
    const { card, modifiedAt } = await cachedGgufCardReader()(path, { verbose: false });
    expect(modifiedAt).toBeGreaterThan(0);
    expect(card?.architecture).toBe('llama');
    expect(card?.fileType).toBe('F16');
    expect(card?.metadata['llama.block_count']).toBe(2);
    expect(card?.metadata['llama.context_length']).toBe(512);
    expect(card?.chatTemplate).toEqual(expect.any(String));
    // Plain: the vocabulary's arrays are neither read nor quoted; other arrays are null.
    expect(card?.metadata).not.toHaveProperty('tokenizer.ggml.tokens');
    // Every block's attention and feed-forward matrices, norms, the embeddings and output.
    const perBlock = 4 * SHAPE.nEmbd * SHAPE.nEmbd + 3 * SHAPE.nEmbd * SHAPE.nFf + 2 * SHAPE.nEmbd;
    const vocabulary = spmVocab().tokens.length * SHAPE.nEmbd;
    const withTiedOutput = SHAPE.nLayer * perBlock + vocabulary + SHAPE.nEmbd;
    expect([withTiedOutput, withTiedOutput + vocabulary]).toContain(card?.parameterCount);
  });

  it('quotes arrays when verbose', async () => {
    const { card } = await cachedGgufCardReader()(path, { verbose: true });
    expect(Array.isArray(card?.metadata['tokenizer.ggml.tokens'])).toBe(true);
  });

  it('reads a file again once it changed, and has no card for what is not a GGUF', async () => {
    const read = cachedGgufCardReader();
    const other = join(dir, 'other.gguf');
    await writeLlamaGguf(other, SHAPE);
    expect((await read(other, { verbose: false })).card?.architecture).toBe('llama');
    await writeFile(other, 'not a model');
    await utimes(other, new Date(), new Date(Date.now() + 5_000));
    expect((await read(other, { verbose: false })).card).toBeNull();
    expect(await read(join(dir, 'missing.gguf'), { verbose: false })).toEqual({ card: null, modifiedAt: 0 });
  });
});
