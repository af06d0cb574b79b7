// Memory truth: the catalog's estimate for a model against what its engine really takes.
//
// The estimate is the one the scheduler budgets with: footprintAt('full', estimate) over the
// catalog's own reading of the GGUF header (weights + KV cache at the configured context +
// compute buffer). Two measurements stand against it:
// - llama.cpp's allocation: the "… buffer size = N MiB" lines the engine logs per buffer (what a
//   GPU would have to hold, and what the supervisor learns from on a GPU);
// - the resident memory (RSS) of the engine's process tree, started with --no-mmap so the
//   weights are read into the process instead of mapped from the page cache, after the load and
//   after one short generation. RSS also holds Node, node-llama-cpp and llama.cpp's own code and
//   heaps, which are not the model's; that runtime baseline is measured with demo-tiny at a
//   512-token context (its RSS minus the buffers it logged) and subtracted. RSS counts only
//   pages that were touched, so a buffer reserved for the worst case and used only in part
//   shows less than it allocates: that is the difference between the two measurements.
// Goal: the estimate within ±10 % of the measured model memory.
//
// Then the layer costs (layerCostAt), which place() splits models with:
// - per block: demo-chat split in three files (embeddings and blocks 0–3, blocks 4–7, the
//   output), loaded mapped, so llama.cpp logs one model buffer per file: the middle one is four
//   blocks' weights as llama.cpp holds them, against four of the estimate's blocks;
// - per device, where a device is there: -ngl all, a partial -ngl and a split over two devices,
//   each device's buffers against what layerCostAt says its blocks cost. A CPU build has one
//   device, so this needs a GPU, or Vulkan on the CPU: mesa's lavapipe (LLMTRAY_BENCH_VULKAN=1,
//   see BENCHMARKS.md).
// Then the CPU's extra weight buffers (AMX, CPU_REPACK): demo-chat at q4_0 teaches this (engine
// build, CPU) what it copies beside the mapped file, as the daemon learns it, and a second q4_0
// model is priced with it and loaded mapped, against its own buffer lines and its RSS.
// llama-server is measured beside the embedded engine when LLMTRAY_LLAMA_SERVER names one.
import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Catalog } from '../../core/catalog/catalog.js';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { cpuBufferPrior } from '../../core/catalog/cpu-buffer-prior.js';
import { learnCpuBufferRatios, totalMatrixBytes, type CpuBufferRatios } from '../../core/catalog/cpu-buffers.js';
import { writeLlamaGguf, writeSplitLlamaGguf, type LlamaModelShape } from '../../core/catalog/demo/gguf-writer.js';
import { estimateFootprint } from '../../core/catalog/footprint.js';
import { readGgufFacts, type GgufFacts } from '../../core/catalog/gguf-metadata.js';
import { readGgufHeader } from '../../core/catalog/gguf-reader.js';
import type { LaunchSpec } from '../../core/engine/launch-spec.js';
import { probeCapabilities } from '../../core/engine/llama-server/capabilities.js';
import { isCpuExtraBuffer, isDeviceBuffer, parseBufferSize } from '../../core/engine/supervisor/memory/memory-measure.js';
import { treeResidentBytes } from '../../core/engine/supervisor/process-tree.js';
import { estimateOnCpu, footprintAt, layerCostAt, type FootprintEstimate } from '../../core/policy/levels.js';
import { llamaServerPath, machineLoad, waitForQuietIfAsked } from './bench-env.js';
import { benchModels, scratchDir } from './bench-models.js';
import { benchSpec, pollUntilHealthy, startDirectEngine, type DirectEngine } from './engine-process.js';
import { chatBody, timedPost } from './http-client.js';
import { chosenRealShapes, realShapeModel } from './real-shape/real-shape-models.js';
import { fixed, MIB, mib, printTable, signed, verdict } from './stats.js';
import type { EngineKind } from '../../core/contracts/snapshot.js';
import { thisCpuFeatures } from '../../core/common/this-cpu.js';

const TARGET_ERROR = 0.1;
const GENERATED_TOKENS = 8;
/** node-llama-cpp hands llama.cpp's log lines over in batches, some after "model loaded"; wait this long for the compute line. */
const LOG_WAIT_MS = 3_000;
const LLAMA_SERVER = process.env['LLMTRAY_LLAMA_SERVER'] ?? null;
const VULKAN = process.env['LLMTRAY_BENCH_VULKAN'] === '1';

interface Case {
  id: string;
  file: 'chat' | 'tiny';
  contextTokens: number;
}

const BASELINE: Case = { id: 'tiny-512', file: 'tiny', contextTokens: 512 };
const CASES: Case[] = [
  { id: 'chat-2048', file: 'chat', contextTokens: 2048 },
  { id: 'chat-8192', file: 'chat', contextTokens: 8192 },
];

interface Allocation {
  model: number;
  kv: number;
  compute: number;
  /** Output and any other buffers llama.cpp names. */
  other: number;
  total: number;
}

interface Measurement {
  allocated: Allocation;
  /** Every buffer line, in log order. */
  buffers: { buffer: string; purpose: string; bytes: number }[];
  rssAfterLoad: number;
  rssAfterGeneration: number;
}

function buffersOf(engine: DirectEngine): Measurement['buffers'] {
  return engine.lines.map(({ text }) => parseBufferSize(text)).filter((size) => size !== null);
}

function allocationOf(buffers: Measurement['buffers']): Allocation {
  const sum: Allocation = { model: 0, kv: 0, compute: 0, other: 0, total: 0 };
  for (const size of buffers) {
    if (size.purpose === 'model') sum.model += size.bytes;
    else if (size.purpose === 'KV') sum.kv += size.bytes;
    else if (size.purpose === 'compute') sum.compute += size.bytes;
    else sum.other += size.bytes;
    sum.total += size.bytes;
  }
  return sum;
}

/**
 * The spec the supervisor would launch on a CPU-only machine with one thread. llama-server
 * builds of late 2026 print their buffer lines only at verbosity 4 (the default is 3), so it is
 * asked for where the build has the flag.
 */
async function specFor(engine: EngineKind, modelPath: string, contextTokens: number, extraArgs: string[], server: string | null = LLAMA_SERVER): Promise<LaunchSpec> {
  const spec = benchSpec('bench', modelPath, contextTokens, extraArgs);
  if (engine === 'embedded' || server === null) return spec;
  const verbose = (await probeCapabilities(server)).flags.has('--log-verbosity') ? ['--log-verbosity', '4'] : [];
  return { ...spec, engine: 'llama-server', extraArgs: [...extraArgs, ...verbose] };
}

async function measure(spec: LaunchSpec, generate: boolean, server: string | null = LLAMA_SERVER): Promise<Measurement> {
  const engine = await startDirectEngine(spec, 'full', server);
  try {
    await engine.readyLine;
    await pollUntilHealthy(engine, 5);
    const rssAfterLoad = await treeResidentBytes(engine.pid);
    if (generate) await timedPost(false, { port: engine.port, apiKey: engine.apiKey }, '/v1/chat/completions', chatBody('bench', false, GENERATED_TOKENS));
    const rssAfterGeneration = await treeResidentBytes(engine.pid);
    const deadline = Date.now() + LOG_WAIT_MS;
    while (allocationOf(buffersOf(engine)).compute === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    const buffers = buffersOf(engine);
    return { allocated: allocationOf(buffers), buffers, rssAfterLoad, rssAfterGeneration };
  } finally {
    await engine.stop();
  }
}

function configText(cases: readonly Case[], paths: Record<Case['file'], string>): string {
  const entries = cases.map((c) => `  - id: ${c.id}\n    path: ${JSON.stringify(paths[c.file])}\n    ctx: ${c.contextTokens}\n`);
  return `modelDirs: []\nmodels:\n${entries.join('')}`;
}

/** "+34.0 %": how far `estimate` is from `measured`, as a share of `measured`. */
function errorOf(estimate: number, measured: number): string {
  return `${signed(((estimate - measured) / measured) * 100, 1)} %`;
}

/** MiB with two decimals, as llama.cpp prints its buffer sizes. */
function mib2(bytes: number): string {
  return fixed(bytes / MIB, 2);
}

export async function runMemoryBench(): Promise<void> {
  const models = await benchModels();
  const paths = { chat: models.chat.path, tiny: models.tiny.path };
  const dir = await scratchDir('memory');
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, configText([BASELINE, ...CASES], paths));
  const catalog = await Catalog.open({ configPath, dataDir: dir });
  const estimateOf = (c: Case): FootprintEstimate => {
    const estimate = catalog.resolve(c.id)?.estimate;
    if (estimate == null) throw new Error(`the catalog has no estimate for ${c.id}: ${catalog.resolve(c.id)?.metadataError ?? 'not in the catalog'}`);
    return estimate;
  };
  const partsOf = (c: Case) => {
    const estimate = estimateOf(c);
    return { weights: estimate.weightsBytes, kv: estimate.kvBytesPerToken * c.contextTokens, compute: estimate.computeBytes, total: footprintAt('full', estimate).deviceBytes };
  };
  const engines: EngineKind[] = LLAMA_SERVER === null ? ['embedded'] : ['embedded', 'llama-server'];

  const baseline = await measure(await specFor('embedded', paths[BASELINE.file], BASELINE.contextTokens, ['--no-mmap']), true);
  const runtimeBytes = baseline.rssAfterGeneration - baseline.allocated.total;
  const measured = [];
  for (const c of CASES) {
    const byEngine = new Map<EngineKind, Measurement>();
    for (const engine of engines) byEngine.set(engine, await measure(await specFor(engine, paths[c.file], c.contextTokens, ['--no-mmap']), true));
    measured.push({ c, estimate: partsOf(c), byEngine });
  }

  console.log(`memory truth: the catalog's estimate (footprintAt full) against llama.cpp's logged allocation${LLAMA_SERVER === null ? '' : ' (the embedded engine and llama-server)'} and the embedded engine's RSS (--no-mmap, -ngl 0, 1 thread; MiB)`);
  printTable(
    ['model @ context', 'source', 'weights', 'KV cache', 'compute', 'other', 'total'],
    measured.flatMap(({ c, estimate, byEngine }) => [
      [`demo-${c.file} @ ${c.contextTokens}`, 'estimate', mib(estimate.weights), mib(estimate.kv), mib(estimate.compute), '', mib(estimate.total)],
      ...engines.flatMap((engine) => {
        const m = (byEngine.get(engine) as Measurement).allocated;
        return [
          ['', `${engine} allocated`, mib(m.model), mib(m.kv), mib(m.compute), mib(m.other), mib(m.total)],
          ['', `estimate − ${engine}`, signed((estimate.weights - m.model) / MIB, 1), signed((estimate.kv - m.kv) / MIB, 1), signed((estimate.compute - m.compute) / MIB, 1), '', signed((estimate.total - m.total) / MIB, 1)],
        ];
      }),
    ]),
  );
  console.log();
  console.log(
    `runtime baseline: demo-tiny @ ${BASELINE.contextTokens} has RSS ${mib(baseline.rssAfterGeneration)} MiB after a generation, of which its logged buffers are ${mib(baseline.allocated.total)} MiB: ${mib(runtimeBytes)} MiB is Node + node-llama-cpp + llama.cpp, not model`,
  );
  printTable(
    ['model @ context', 'RSS after load', 'RSS after generation', 'minus baseline', 'estimate', 'estimate vs RSS − baseline', 'estimate vs allocated'],
    measured.map(({ c, estimate, byEngine }) => {
      const m = byEngine.get('embedded') as Measurement;
      return [
        `demo-${c.file} @ ${c.contextTokens}`,
        mib(m.rssAfterLoad),
        mib(m.rssAfterGeneration),
        mib(m.rssAfterGeneration - runtimeBytes),
        mib(estimate.total),
        errorOf(estimate.total, m.rssAfterGeneration - runtimeBytes),
        errorOf(estimate.total, m.allocated.total),
      ];
    }),
  );
  console.log();
  // The verdict is against llama.cpp's own allocation: it is what a device must hold (buffers
  // are allocated whole) and it does not move run to run; RSS counts only touched pages (a KV
  // cache is touched as the context fills) and is printed above as the cross-check.
  for (const { c, estimate, byEngine } of measured) {
    for (const engine of engines) {
      const m = byEngine.get(engine) as Measurement;
      const error = (estimate.total - m.allocated.total) / m.allocated.total;
      console.log(`demo-${c.file} @ ${c.contextTokens}, ${engine}: estimate ${errorOf(estimate.total, m.allocated.total)} of what llama.cpp allocated (goal within ±${fixed(TARGET_ERROR * 100, 0)} %): ${verdict(Math.abs(error) <= TARGET_ERROR)}`);
    }
  }
  console.log();

  const chat = estimateOf(CASES[0] as Case);
  await perBlock(dir, chat, engines);
  await cpuBuffers(dir, runtimeBytes);
  if (VULKAN) await perDevice(paths.chat, chat);
  else console.log('per device: skipped (a CPU build has one device; set LLMTRAY_BENCH_VULKAN=1 with a Vulkan device, e.g. lavapipe, to measure -ngl and splits)');
  console.log();
  await realShapeMemory(dir, runtimeBytes);
}

/**
 * demo-chat in three files, loaded mapped: llama.cpp logs one model buffer per file, so the
 * middle file's is four blocks as llama.cpp holds them.
 */
async function perBlock(dir: string, estimate: FootprintEstimate, engines: readonly EngineKind[]): Promise<void> {
  const prefix = join(dir, 'chat-split');
  const parts = await writeSplitLlamaGguf(prefix, DEMO_SHAPES['demo-chat'], (name) => (name.startsWith('blk.') ? (Number(name.split('.')[1]) < 4 ? 0 : 1) : name === 'token_embd.weight' ? 0 : 2));
  const fileBytes: number[] = [];
  for (const part of parts) {
    const file = await open(part, 'r');
    try {
      fileBytes.push((await readGgufHeader(file, part)).dataBytes);
    } finally {
      await file.close();
    }
  }
  const mapped = new Map<EngineKind, number[]>();
  for (const engine of engines) {
    const m = await measure(await specFor(engine, parts[0] as string, 2048, []), false);
    // The mapped files' buffers; a CPU's extra ones (AMX on a Xeon) are §4's.
    mapped.set(engine, m.buffers.filter((b) => b.purpose === 'model' && !isCpuExtraBuffer(b.buffer)).map((b) => b.bytes));
  }
  const block = estimate.blockWeightsBytes ?? Number.NaN;
  const nonBlock = estimate.nonBlockWeightsBytes ?? Number.NaN;
  const holds = ['token_embd, blocks 0–3', 'blocks 4–7', 'output_norm, output'];
  const estimated = [Number.NaN, 4 * block, Number.NaN];
  console.log(`per block: demo-chat split in three files, loaded mapped (one model buffer per file); the estimate: ${mib2(block)} MiB a block, ${mib2(nonBlock)} MiB outside the blocks (MiB)`);
  printTable(
    ['file', 'holds', 'tensor data in the file', 'estimate', ...engines.map((e) => `${e} model buffer`)],
    [
      ...parts.map((_, i) => [`part ${i + 1}`, holds[i] as string, mib2(fileBytes[i] as number), Number.isNaN(estimated[i] as number) ? '' : mib2(estimated[i] as number), ...engines.map((e) => mib2(mapped.get(e)?.[i] ?? Number.NaN))]),
      ['all', '8 blocks and the rest', mib2(fileBytes.reduce((a, b) => a + b, 0)), mib2(nonBlock + 8 * block), ...engines.map((e) => mib2((mapped.get(e) ?? []).reduce((a, b) => a + b, 0)))],
    ],
  );
  console.log();
  // llama.cpp prints two decimals of a MiB; a block's bytes are exact or they are not.
  for (const engine of engines) {
    const logged = mapped.get(engine)?.[1] ?? Number.NaN;
    console.log(`four blocks, ${engine}: the estimate ${signed((4 * block - logged) / MIB, 3)} MiB from llama.cpp's buffer (goal: within its 0.005 MiB rounding): ${verdict(Math.abs(4 * block - logged) <= 0.005 * MIB)}`);
  }
  console.log();
}

async function factsAt(path: string): Promise<GgufFacts> {
  const read = await readGgufFacts(path);
  if (!read.ok) throw new Error(read.error);
  return read.facts;
}

function estimateWith(path: string, facts: GgufFacts, ratios: CpuBufferRatios, engine: EngineKind = 'embedded'): FootprintEstimate {
  // As the catalog prices a model with no -np and no draft on that engine.
  const result = estimateFootprint({ path, facts, contextTokens: 2048, gpuLayers: 'all', cpuBufferRatios: ratios, logits: { engine, drafted: false, embeddings: false } });
  if (!result.ok) throw new Error(result.error);
  return estimateOnCpu(result.estimate);
}

/**
 * The CPU's extra weight buffers: demo-chat at q4_0 teaches the ratios (learnCpuBufferRatios, as
 * the daemon learns them from a first load), a second q4_0 model of another shape is priced
 * with them, loaded mapped (as the daemon loads), and compared with its buffer lines, and with
 * its RSS less the runtime baseline: the kernel's count, the repacked tensors' file pages in it.
 */
async function cpuBuffers(dir: string, runtimeBytes: number): Promise<void> {
  const chatShape: LlamaModelShape = { ...DEMO_SHAPES['demo-chat'], name: 'demo-chat-q4_0', fileType: 'q4_0' };
  // Wider than demo-chat, so that its weights, not its compute buffer, are most of what it holds.
  const wideShape: LlamaModelShape = { ...chatShape, name: 'q4-wide', nLayer: 6, nEmbd: 1024, nHead: 8, nHeadKv: 4, nFf: 2816, seed: 77 };
  const teacherPath = join(dir, 'demo-chat-q4_0.gguf');
  const learnerPath = join(dir, 'q4-wide.gguf');
  await writeLlamaGguf(teacherPath, chatShape);
  await writeLlamaGguf(learnerPath, wideShape);
  const extraOf = (m: Measurement) => m.buffers.filter((b) => b.purpose === 'model' && isCpuExtraBuffer(b.buffer));
  const teacher = await measure(await specFor('embedded', teacherPath, 2048, []), false);
  const taught = extraOf(teacher);
  const ratios = learnCpuBufferRatios({}, totalMatrixBytes((await factsAt(teacherPath)).cpuMatrixBytes ?? { blocks: [], nonBlock: {} }), taught.reduce((sum, b) => sum + b.bytes, 0));
  const learnerFacts = await factsAt(learnerPath);
  const before = estimateWith(learnerPath, learnerFacts, {});
  const withPrior = estimateWith(learnerPath, learnerFacts, cpuBufferPrior(thisCpuFeatures()));
  const after = estimateWith(learnerPath, learnerFacts, ratios);
  const learner = await measure(await specFor('embedded', learnerPath, 2048, []), true);
  const extra = extraOf(learner).reduce((sum, b) => sum + b.bytes, 0);
  const kernel = learner.rssAfterGeneration - runtimeBytes;
  console.log(
    `the CPU's extra weight buffers: demo-chat at q4_0 taught ${taught.map((b) => `${b.buffer} ${mib2(b.bytes)} MiB`).join(', ') || 'none'} (Q4_0 share ${fixed(ratios['2'] ?? 0, 4)}); q4-wide (q4_0, 6 blocks × 1024) @ 2048, loaded mapped (MiB)`,
  );
  const row = (source: string, e: FootprintEstimate) => {
    const total = footprintAt('full', e).deviceBytes;
    return [source, mib2(e.weightsBytes), errorOf(e.weightsBytes, learner.allocated.model), mib2(e.kvBytesPerToken * 2048), mib2(e.computeBytes), mib2(total), errorOf(total, learner.allocated.total), errorOf(total, kernel)];
  };
  printTable(
    ['source', 'weights', 'weights vs allocated', 'KV cache', 'compute', 'total', 'total vs allocated', 'total vs RSS − baseline'],
    [
      row('estimate, nothing learned, no prior', before),
      row('estimate, nothing learned, this CPU\'s prior', withPrior),
      row('estimate, this CPU\'s buffers learned', after),
      ['llama.cpp allocated', `${mib2(learner.allocated.model - extra)} mapped + ${mib2(extra)} ${extraOf(learner).map((b) => b.buffer).join(', ') || 'extra'}`, '', mib2(learner.allocated.kv), mib2(learner.allocated.compute), mib2(learner.allocated.total), '', ''],
      ['RSS after generation − baseline', '', '', '', '', mib2(kernel), '', ''],
    ],
  );
  console.log();
}

interface DeviceCase {
  name: string;
  /** GGML_VK_VISIBLE_DEVICES: "0,0" makes one Vulkan device two, for a layer split. */
  visible: string;
  gpuLayers: number | 'all';
}

/**
 * Each device's buffers against layerCostAt: a device that holds k blocks costs the compute
 * buffer (twice over in a split: pipeline parallelism) and k blocks (weights and their KV), and the one that holds the output layer the
 * non-block weights too. How many blocks each device got is read from its KV buffer (one
 * block's KV is the same on every device), so the split llama.cpp chose is the one costed.
 */
async function perDevice(modelPath: string, estimate: FootprintEstimate): Promise<void> {
  const cost = layerCostAt('full', estimate);
  if (cost === undefined) throw new Error('the demo-chat estimate has no layer cost');
  const kvPerBlock = (estimate.kvBytesPerToken * estimate.contextTokens) / cost.layers;
  const blockWeights = cost.perLayerBytes - kvPerBlock;
  const cases: DeviceCase[] = [
    { name: 'one device, -ngl all', visible: '0', gpuLayers: 'all' },
    { name: 'one device, -ngl 5 (output + 4 blocks)', visible: '0', gpuLayers: 5 },
    { name: 'two devices, -ngl all', visible: '0,0', gpuLayers: 'all' },
  ];
  const rows: string[][] = [];
  const verdicts: string[] = [];
  for (const c of cases) {
    const spec = { ...benchSpec('bench', modelPath, estimate.contextTokens, []), gpuLayers: c.gpuLayers, env: { GGML_VK_VISIBLE_DEVICES: c.visible } };
    const m = await measure(spec, false);
    const devices = [...new Set(m.buffers.filter((b) => isDeviceBuffer(b.buffer)).map((b) => b.buffer))];
    // llama.cpp puts the output layer with the last layer: on the last device of a split.
    let worst = 0;
    devices.forEach((device, i) => {
      const of = (purpose: string) => m.buffers.filter((b) => b.buffer === device && b.purpose === purpose).reduce((sum, b) => sum + b.bytes, 0);
      const blocks = Math.round(of('KV') / kvPerBlock);
      const main = i === devices.length - 1 ? cost.mainBytes : 0;
      // A split runs as a pipeline: each of its devices keeps a compute buffer per stage in
      // flight, which layerCostAt prices as pipelineComputeBytes on top (place.ts pays it too).
      const compute = cost.computeBytesPerDevice + (devices.length > 1 ? (cost.pipelineComputeBytes ?? 0) : 0);
      const predicted = { model: main + blocks * blockWeights, kv: blocks * kvPerBlock, compute };
      const measuredTotal = of('model') + of('KV') + of('compute');
      const predictedTotal = predicted.model + predicted.kv + predicted.compute;
      worst = Math.max(worst, Math.abs(predictedTotal - measuredTotal) / measuredTotal);
      rows.push([i === 0 ? c.name : '', `${device}: ${blocks} blocks${main > 0 ? ' + output' : ''}`, mib2(predicted.model), mib2(of('model')), mib2(predicted.kv), mib2(of('KV')), mib2(predicted.compute), mib2(of('compute')), errorOf(predictedTotal, measuredTotal)]);
    });
    const host = m.buffers.filter((b) => !isDeviceBuffer(b.buffer));
    const hostOf = (purpose: string) => host.filter((b) => b.purpose === purpose).reduce((sum, b) => sum + b.bytes, 0);
    rows.push(['', `host: ${[...new Set(host.map((b) => b.buffer))].join(', ')}`, '', mib2(hostOf('model')), '', mib2(hostOf('KV')), '', mib2(hostOf('compute')), '']);
    verdicts.push(`${c.name}: every device within ${fixed(worst * 100, 1)} % of layerCostAt (goal within ±${fixed(TARGET_ERROR * 100, 0)} %): ${verdict(worst <= TARGET_ERROR)}`);
  }
  console.log(`per device: the embedded engine on Vulkan (${process.env['VK_ICD_FILENAMES'] ?? 'the system\'s Vulkan driver'}), demo-chat @ ${estimate.contextTokens}, against layerCostAt (MiB)`);
  printTable(['launch', 'buffer', 'weights: layerCostAt', 'logged', 'KV: layerCostAt', 'logged', 'compute: layerCostAt', 'logged', 'device total vs logged'], rows);
  console.log();
  for (const line of verdicts) console.log(line);
  console.log();
}

/** The real-shape models' context: the demo rows' first case, so the two tables read alike. */
const REAL_CONTEXT = 2048;

/**
 * Memory truth on the real-shape models (issue 41): billion-parameter GGUFs of real
 * architectures and vocabularies, loaded mapped as the daemon loads them, so that what llama.cpp
 * copies beside the mapped file (CPU_REPACK for the quants it repacks on this CPU) shows as its
 * own buffer line. Each model on the embedded engine and, where one is found, llama-server.
 * Three estimates stand against the buffers: the catalog's with this CPU's prior for the extra
 * buffers (cpu-buffer-prior.ts; footprintAt full on the CPU: what the daemon budgets a model's
 * first load with), the same without the prior (nothing learned, what it budgeted before the
 * prior), and the same with the ratios the daemon would have learned from the real-shape loads
 * before this one in the run (learnCpuBufferRatios, load by load, as the daemon learns from
 * first loads).
 */
async function realShapeMemory(dir: string, runtimeBytes: number): Promise<void> {
  const chosen = chosenRealShapes();
  if (chosen.length === 0) return;
  const server = llamaServerPath();
  const engines: EngineKind[] = server === null ? ['embedded'] : ['embedded', 'llama-server'];
  const models = [];
  for (const { shape, quant } of chosen) models.push(await realShapeModel(shape, quant));
  // One entry per engine, each naming it, so the catalog prices each as the daemon would price
  // a model that engine runs (its compute buffer's logits rows differ: footprint.ts's logitsRows).
  const idOf = (label: string, engine: EngineKind) => `real-${label.replace(/\W+/g, '-').toLowerCase()}-${engine}`;
  const configPath = join(dir, 'real-shapes.yaml');
  const entries = models.flatMap((m) => engines.map((engine) => `  - id: ${idOf(m.label, engine)}\n    path: ${JSON.stringify(m.path)}\n    ctx: ${REAL_CONTEXT}\n    engine: ${engine}\n`));
  await writeFile(configPath, `modelDirs: []\nmodels:\n${entries.join('')}`);
  const prior = cpuBufferPrior(thisCpuFeatures());
  const catalog = await Catalog.open({ configPath, dataDir: join(dir, 'real-shapes-data'), cpuBufferPrior: prior });
  console.log(
    `## memory truth on the real-shape models: the catalog's estimate (footprintAt full) against llama.cpp's logged buffers, loaded mapped as the daemon loads (-ngl 0, 1 thread, ctx ${REAL_CONTEXT}; MiB)${server === null ? ' (no llama-server found: the embedded engine only)' : ''}`,
  );
  console.log();
  let learned: CpuBufferRatios = {};
  for (const model of models) {
    const estimateFor = (engine: EngineKind): FootprintEstimate => {
      const estimate = catalog.resolve(idOf(model.label, engine))?.estimate;
      if (estimate == null) throw new Error(`the catalog has no estimate for ${model.label} on ${engine}: ${catalog.resolve(idOf(model.label, engine))?.metadataError ?? 'not in the catalog'}`);
      // Loaded with -ngl 0: the weights are the CPU's, with its extra buffers, as the daemon prices them on a CPU.
      return estimateOnCpu(estimate);
    };
    const estimates = new Map(engines.map((engine) => [engine, estimateFor(engine)]));
    const facts = await factsAt(model.path);
    const matrixBytes = totalMatrixBytes(facts.cpuMatrixBytes ?? { blocks: [], nonBlock: {} });
    const learnedFor = (engine: EngineKind) => (Object.keys(learned).length === 0 ? null : estimateWith(model.path, facts, learned, engine));
    const withoutPrior = (engine: EngineKind) => estimateWith(model.path, facts, {}, engine);
    await waitForQuietIfAsked();
    const loadBefore = machineLoad().label;
    const byEngine = new Map<EngineKind, Measurement>();
    for (const engine of engines) byEngine.set(engine, await measure(await specFor(engine, model.path, REAL_CONTEXT, [], server), true, server));
    const loadAfter = machineLoad().label;

    const extraOf = (m: Measurement) => m.buffers.filter((b) => b.purpose === 'model' && isCpuExtraBuffer(b.buffer));
    const sumOf = (buffers: Measurement['buffers']) => buffers.reduce((sum, b) => sum + b.bytes, 0);
    const estimateRow = (source: string, e: FootprintEstimate) => {
      const total = footprintAt('full', e).deviceBytes;
      return [source, mib2(e.weightsBytes), '', mib2(e.kvBytesPerToken * REAL_CONTEXT), mib2(e.computeBytes), '', mib2(total)];
    };
    console.log(`### ${model.label} @ ${REAL_CONTEXT} (${loadBefore} before, ${loadAfter} after)`);
    printTable(
      ['source', 'weights (mapped)', 'CPU extra (repack)', 'KV cache', 'compute', 'other', 'total'],
      [
        ...engines.flatMap((engine) => {
          const withLearned = learnedFor(engine);
          return [
            estimateRow(`estimate for ${engine}, nothing learned, no prior`, withoutPrior(engine)),
            estimateRow(`estimate for ${engine}, nothing learned, this CPU's prior`, estimates.get(engine) as FootprintEstimate),
            ...(withLearned === null ? [] : [estimateRow(`estimate for ${engine}, CPU buffers learned from the loads above`, withLearned)]),
          ];
        }),
        ...engines.map((engine) => {
          const m = byEngine.get(engine) as Measurement;
          const extra = sumOf(extraOf(m));
          return [`${engine} allocated`, mib2(m.allocated.model - extra), mib2(extra), mib2(m.allocated.kv), mib2(m.allocated.compute), mib2(m.allocated.other), mib2(m.allocated.total)];
        }),
      ],
    );
    for (const engine of engines) {
      const m = byEngine.get(engine) as Measurement;
      console.log(`  ${engine}'s buffer lines: ${m.buffers.map((b) => `${b.buffer} ${b.purpose || '?'} ${mib2(b.bytes)}`).join(', ')}`);
      const extra = extraOf(m);
      console.log(
        extra.length === 0
          ? `  ${engine}: no CPU extra buffer in the log: llama.cpp repacks none of ${model.quant}'s tensors on this CPU`
          : `  ${engine}: ${extra.map((b) => `${b.buffer} ${mib2(b.bytes)} MiB`).join(', ')} beside the mapped file: ${fixed((100 * sumOf(extra)) / Math.max(1, m.allocated.model - sumOf(extra)), 1)} % of the mapped weights copied again`,
      );
    }
    if (byEngine.has('embedded')) {
      const m = byEngine.get('embedded') as Measurement;
      console.log(`  embedded RSS after a generation, less the runtime baseline: ${mib2(m.rssAfterGeneration - runtimeBytes)} (mapped pages count only as touched)`);
    }
    for (const engine of engines) {
      const m = byEngine.get(engine) as Measurement;
      const withLearned = learnedFor(engine);
      const sources = [
        ['estimate, nothing learned, no prior', withoutPrior(engine)],
        ['estimate, nothing learned, this CPU\'s prior', estimates.get(engine)],
        ...(withLearned === null ? [] : [['estimate, CPU buffers learned', withLearned]]),
      ] as [string, FootprintEstimate][];
      for (const [source, e] of sources) {
        const total = footprintAt('full', e).deviceBytes;
        const error = (total - m.allocated.total) / m.allocated.total;
        console.log(`${model.label} @ ${REAL_CONTEXT}, ${engine}, ${source}: ${errorOf(total, m.allocated.total)} of what llama.cpp allocated (goal within ±${fixed(TARGET_ERROR * 100, 0)} %): ${verdict(Math.abs(error) <= TARGET_ERROR)}`);
      }
    }
    console.log();
    // What the daemon would learn from this first load (the embedded engine's buffers: the daemon's
    // default engine), shared among its new types by the prior as the daemon shares it.
    learned = learnCpuBufferRatios(learned, matrixBytes, sumOf(extraOf(byEngine.get('embedded') as Measurement)), prior);
  }
}
