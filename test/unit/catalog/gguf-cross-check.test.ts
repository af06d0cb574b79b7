// Our GGUF reader against node-llama-cpp's, which the catalog used before it had its own: the
// same files, read by both, must agree on everything the catalog takes from a header. Here
// only: the daemon no longer imports node-llama-cpp to read headers.
import { open, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { GgufFileType, readGgufFileInfo, type GgufFileInfo } from 'node-llama-cpp';
import { beforeAll, describe, expect, it } from 'vitest';
import { writeSplitLlamaGguf, type LlamaModelShape } from '../../../core/catalog/demo/gguf-writer.js';
import { fileTypeName } from '../../../core/catalog/gguf-file-type.js';
import { readGgufFacts, type GgufFacts } from '../../../core/catalog/gguf-metadata.js';
import { readGgufHeader, type GgufHeader, type GgufValue } from '../../../core/catalog/gguf-reader.js';
import { writeMoeGguf } from '../../support/moe-gguf.js';
import { demoModels, modelWithShape, testModelDir } from '../../support/test-models.js';

const SKIPPED = ['tokenizer.ggml.scores', 'tokenizer.ggml.token_type', 'tokenizer.ggml.merges', 'tokenizer.ggml.precompiled_charsmap'];
const SHAPES: LlamaModelShape[] = [
  { name: 'cross-q8', nLayer: 3, nEmbd: 96, nHead: 6, nHeadKv: 2, nFf: 160, contextLength: 4096, fileType: 'q8_0', seed: 21 },
  { name: 'cross-f32-mha', nLayer: 1, nEmbd: 48, nHead: 4, nHeadKv: 4, nFf: 72, contextLength: 1024, fileType: 'f32', seed: 22 },
];

/** Every file to compare, by a name for the test table. */
const files: Record<string, string> = {};

beforeAll(async () => {
  const demo = await demoModels();
  for (const model of [demo.chat, demo.draft, demo.tiny, demo.broken]) files[model.id] = model.path;
  for (const shape of SHAPES) files[shape.name] = await modelWithShape(shape);
  const [first] = await writeSplitLlamaGguf(join(testModelDir(), 'cross-split'), SHAPES[0] as LlamaModelShape, (name) => (name === 'token_embd.weight' ? 0 : name.startsWith('blk.') ? 1 : 2));
  files['split in 3'] = first as string;
  files['moe'] = join(testModelDir(), 'cross-moe.gguf');
  await writeMoeGguf(files['moe'], { nLayer: 4, denseFirst: 1, nEmbd: 64, nExpert: 8, nFfExpert: 32, nFfDense: 128, nVocab: 300, type: 'q8_0' });
});

async function ours(path: string): Promise<{ facts: GgufFacts; headers: GgufHeader[] }> {
  const result = await readGgufFacts(path);
  if (!result.ok) throw new Error(result.error);
  const theirs = await readGgufFileInfo(path, { logWarnings: false, ignoreKeys: SKIPPED });
  const headers: GgufHeader[] = [];
  for (const source of theirs.sourceData) {
    if (source.type !== 'path') throw new Error('expected file parts');
    const file = await open(source.path, 'r');
    try {
      headers.push(await readGgufHeader(file, source.path, { skipKeys: new Set(SKIPPED) }));
    } finally {
      await file.close();
    }
  }
  return { facts: result.facts, headers };
}

/** A dotted key in node-llama-cpp's nested metadata. */
function lookup(info: GgufFileInfo, key: string): unknown {
  let node: unknown = info.metadata;
  for (const part of key.split('.')) node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
  return node;
}

/** node-llama-cpp gives 64-bit integers as numbers where they are exact; we always give bigints. */
function comparable(value: GgufValue | unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (Array.isArray(value)) return value.map(comparable);
  return value;
}

describe('our GGUF reader agrees with node-llama-cpp', () => {
  it.each(['demo-chat', 'demo-draft', 'demo-tiny', 'demo-broken', ...SHAPES.map((s) => s.name), 'split in 3', 'moe'])('%s', async (name) => {
    const path = files[name] as string;
    const theirs = await readGgufFileInfo(path, { logWarnings: false, ignoreKeys: SKIPPED });
    const { facts, headers } = await ours(path);

    // Every key-value pair of the first part, skipped ones aside, with its value.
    const first = headers[0] as GgufHeader;
    for (const [key, value] of first.metadata) expect([key, comparable(lookup(theirs, key))]).toEqual([key, comparable(value)]);
    for (const key of SKIPPED) expect(first.metadata.has(key)).toBe(false);

    // What the catalog takes from them.
    const arch = String(lookup(theirs, 'general.architecture'));
    expect(facts.architecture).toBe(arch);
    expect(facts.blockCount).toBe(lookup(theirs, `${arch}.block_count`));
    expect(facts.embeddingLength).toBe(lookup(theirs, `${arch}.embedding_length`));
    expect(facts.contextLength).toBe(Number(lookup(theirs, `${arch}.context_length`)));
    expect(facts.fileType).toBe(GgufFileType[Number(lookup(theirs, 'general.file_type'))]);
    const tokens = lookup(theirs, 'tokenizer.ggml.tokens') as string[] | undefined;
    expect(facts.vocabulary?.tokenCount).toBe(tokens?.length);
    expect(facts.vocabulary?.bosId).toBe(lookup(theirs, 'tokenizer.ggml.bos_token_id'));

    // The tensor table, across parts, and the bytes of tensor data.
    const tables = headers.flatMap((h) => h.tensors);
    expect(tables.length).toBe(Number(theirs.totalTensorCount));
    expect(tables.map((t) => [t.name, t.dims, t.ggmlType, t.offset])).toEqual((theirs.fullTensorInfo ?? []).map((t) => [t.name, t.dimensions.map(Number), t.ggmlType, Number(t.offset)]));
    headers.forEach((h, i) => expect(h.dataOffset).toBe(theirs.sourceData[i]?.type === 'path' ? theirs.sourceData[i].length : -1));
    let theirData = 0;
    for (const source of theirs.sourceData) if (source.type === 'path') theirData += (await stat(source.path)).size - source.length;
    expect(facts.tensorDataBytes).toBe(theirData);
    expect(facts.blockBytes.reduce((a, b) => a + b, 0) + facts.nonBlockBytes).toBe(theirData);
  });

  it('names every file type as node-llama-cpp does', () => {
    for (let n = 0; n <= 45; n++) expect(fileTypeName(n)).toBe(GgufFileType[n] ?? `type ${n}`);
  });
});
