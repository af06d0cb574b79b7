// The catalog's estimate against llama.cpp's own account of what it allocated (the
// "… buffer size = N MiB" lines), in real engine processes: the embedded engine always, and a
// real llama-server too when LLMTRAY_LLAMA_SERVER names one.
//
// The model is demo-chat (at f16, and at q4_0, which AVX2 and ARM CPUs repack) split in three files (the embeddings and blocks 0–3, blocks 4–7, the
// output) and loaded mapped, so llama.cpp logs one model buffer per file: the middle one is
// four blocks' weights as llama.cpp holds them, which is what the per-block estimate (and so
// every layer split place() makes) stands on. A CPU build has one device; what a split over
// devices costs is measured in `npm run bench` where a device is there (BENCHMARKS.md).
//
// Beside the mapped files, a CPU may get extra weight buffers (an Intel Xeon with AMX copies
// demo-chat's f16 blocks into an `AMX` buffer; AVX2 and ARM CPUs repack Q4_0 into `CPU_REPACK`):
// the test reads which this CPU's llama.cpp printed instead of expecting one layout.
import { spawn } from 'node:child_process';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { writeSplitLlamaGguf } from '../../core/catalog/demo/gguf-writer.js';
import { learnCpuBufferRatios, totalMatrixBytes } from '../../core/catalog/cpu-buffers.js';
import { estimateFootprint } from '../../core/catalog/footprint.js';
import { readGgufFacts } from '../../core/catalog/gguf-metadata.js';
import { readGgufHeader } from '../../core/catalog/gguf-reader.js';
import { probeCapabilities } from '../../core/engine/llama-server/capabilities.js';
import { freeLoopbackPort } from '../../core/engine/supervisor/free-port.js';
import { isCpuExtraBuffer, parseBufferSize, type BufferSize } from '../../core/engine/supervisor/memory/memory-measure.js';
import { estimateOnCpu, type FootprintEstimate } from '../../core/policy/levels.js';
import type { GgufFacts } from '../../core/catalog/gguf-metadata.js';
import { testModelDir } from '../support/test-models.js';

const MAIN = fileURLToPath(new URL('../../dist/core/engine/embedded/main.js', import.meta.url));
const LLAMA_SERVER = process.env['LLMTRAY_LLAMA_SERVER'];
const ENGINES = ['embedded', ...(LLAMA_SERVER ? (['llama-server'] as const) : [])] as const;
const CONTEXT = 2048;
const MiB = 1024 * 1024;
/** llama.cpp prints buffer sizes to two decimals of a MiB. */
const PRINTED = 0.005 * MiB;

const FILE_TYPES = ['f16', 'q4_0'] as const;

interface SplitModel {
  parts: string[];
  partBytes: number[];
  facts: GgufFacts;
  estimate: FootprintEstimate;
}

/** demo-chat at `fileType` in three files, what the reader sizes in each, and the estimate. */
async function splitModel(fileType: (typeof FILE_TYPES)[number], engine: (typeof ENGINES)[number]): Promise<SplitModel> {
  const parts = await writeSplitLlamaGguf(join(testModelDir(), `estimate-chat-${fileType}`), { ...DEMO_SHAPES['demo-chat'], fileType }, (name) =>
    name.startsWith('blk.') ? (Number(name.split('.')[1]) < 4 ? 0 : 1) : name === 'token_embd.weight' ? 0 : 2,
  );
  const partBytes: number[] = [];
  for (const part of parts) {
    const file = await open(part, 'r');
    try {
      partBytes.push((await readGgufHeader(file, part)).dataBytes);
    } finally {
      await file.close();
    }
  }
  const read = await readGgufFacts(parts[0] as string);
  if (!read.ok) throw new Error(read.error);
  // Priced for the engine it runs on, with no -np, as the catalog prices it (footprint.ts's logitsRows).
  const result = estimateFootprint({ path: parts[0] as string, facts: read.facts, contextTokens: CONTEXT, gpuLayers: 'all', logits: { engine, drafted: false, embeddings: false } });
  if (!result.ok) throw new Error(result.error);
  return { parts, partBytes, facts: read.facts, estimate: result.estimate };
}

/** Starts the engine on the split model, CPU only, and gives back its buffer lines once it has logged its compute buffer. */
async function bufferLines(engine: (typeof ENGINES)[number], parts: readonly string[]): Promise<BufferSize[]> {
  const common = ['-m', parts[0] as string, '-c', String(CONTEXT), '-ngl', '0', '-t', '1', '--host', '127.0.0.1', '--port', String(await freeLoopbackPort())];
  let command = process.execPath;
  let args = [MAIN, ...common, '--api-key', 'test-key'];
  if (engine === 'llama-server') {
    const flags = (await probeCapabilities(LLAMA_SERVER as string)).flags;
    command = LLAMA_SERVER as string;
    // Builds of late 2026 print buffer sizes only at verbosity 4.
    args = [...common, ...(flags.has('--log-verbosity') ? ['--log-verbosity', '4'] : []), ...(flags.has('--fit') ? ['--fit', 'off'] : [])];
  }
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const sizes: BufferSize[] = [];
  let log = '';
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      // The compute buffer is the last one llama.cpp reserves before it serves.
      if (/compute buffer size/.test(log) && /model loaded/.test(log)) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then(() => reject(new Error(`${engine} exited before it logged its buffers:\n${log}`)));
  });
  child.kill('SIGTERM');
  await exited;
  for (const line of log.split('\n')) {
    const size = parseBufferSize(line);
    if (size !== null) sizes.push(size);
  }
  return sizes;
}

describe.each(ENGINES.flatMap((engine) => FILE_TYPES.map((fileType) => [engine, fileType] as const)))('the estimate against llama.cpp\'s buffer lines: %s, %s', (engine, fileType) => {
  let sizes: BufferSize[];
  let parts: string[];
  let partBytes: number[];
  let facts: GgufFacts;
  let estimate: FootprintEstimate;
  beforeAll(async () => {
    ({ parts, partBytes, facts, estimate } = await splitModel(fileType, engine));
    sizes = await bufferLines(engine, parts);
  });

  it('each file has one mapped model buffer; where this CPU copies nothing beside them, each is the tensor data the reader sizes in it, and the middle one four of the estimate\'s blocks', () => {
    const model = sizes.filter((s) => s.purpose === 'model');
    const mapped = model.filter((s) => !isCpuExtraBuffer(s.buffer)).map((s) => s.bytes);
    const extra = model.filter((s) => isCpuExtraBuffer(s.buffer));
    // Every file keeps a mapped range: its norms are never copied.
    expect(mapped).toHaveLength(3);
    if (extra.length > 0) {
      // A file's mapped range is its tensors less the copied ones at its ends: never more than the file.
      mapped.forEach((bytes, i) => expect(bytes).toBeLessThanOrEqual((partBytes[i] as number) + PRINTED));
      return;
    }
    mapped.forEach((bytes, i) => expect(Math.abs(bytes - (partBytes[i] as number))).toBeLessThanOrEqual(PRINTED));
    expect(Math.abs((mapped[1] as number) - 4 * (estimate.blockWeightsBytes as number))).toBeLessThanOrEqual(PRINTED);
    // Four blocks are 22.5 MiB at f16, 6.3 MiB at q4_0: the comparison is at a block's scale, not lost in the rounding.
    expect(mapped[1]).toBeGreaterThan(6 * MiB);
    expect(Math.abs(mapped.reduce((a, b) => a + b, 0) - estimate.weightsBytes)).toBeLessThanOrEqual(3 * PRINTED);
  });

  it('the weights on the CPU, with the extra buffers this CPU\'s llama.cpp printed learned as the daemon learns them, are never priced under what it allocated', () => {
    const model = sizes.filter((s) => s.purpose === 'model');
    const extraBytes = model.filter((s) => isCpuExtraBuffer(s.buffer)).reduce((sum, s) => sum + s.bytes, 0);
    const ratios = learnCpuBufferRatios({}, totalMatrixBytes(facts.cpuMatrixBytes!), extraBytes);
    const learned = estimateFootprint({ path: parts[0] as string, facts, contextTokens: CONTEXT, gpuLayers: 'all', cpuBufferRatios: ratios });
    if (!learned.ok) throw new Error(learned.error);
    const onCpu = estimateOnCpu(learned.estimate).weightsBytes;
    const allocated = model.reduce((sum, s) => sum + s.bytes, 0);
    expect(onCpu).toBeGreaterThanOrEqual(allocated - 4 * PRINTED);
    // Large by at most the copied tensors at a file's very end, which llama.cpp unmaps: under a block per file.
    expect(onCpu - allocated).toBeLessThanOrEqual(parts.length * (estimate.blockWeightsBytes as number));
  });

  it('the KV cache is the estimate\'s KV per token at the context, and the compute buffer within 10 % of the estimate', () => {
    const of = (purpose: string) => sizes.filter((s) => s.purpose === purpose).reduce((sum, s) => sum + s.bytes, 0);
    expect(Math.abs(of('KV') - estimate.kvBytesPerToken * CONTEXT)).toBeLessThanOrEqual(PRINTED);
    expect(Math.abs(estimate.computeBytes - of('compute')) / of('compute')).toBeLessThanOrEqual(0.1);
  });
});
