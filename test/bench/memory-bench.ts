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
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Catalog } from '../../core/catalog/catalog.js';
import { parseBufferSize } from '../../core/engine/supervisor/memory-measure.js';
import { treeResidentBytes } from '../../core/engine/supervisor/process-tree.js';
import { footprintAt } from '../../core/policy/levels.js';
import { benchModels, scratchDir } from './bench-models.js';
import { benchSpec, pollUntilHealthy, startDirectEngine, type DirectEngine } from './engine-process.js';
import { chatBody, timedPost } from './http-client.js';
import { fixed, mib, printTable, signed, verdict } from './stats.js';

const TARGET_ERROR = 0.1;
const GENERATED_TOKENS = 8;
/** node-llama-cpp hands llama.cpp's log lines over in batches, some after "model loaded"; wait this long for the compute line. */
const LOG_WAIT_MS = 3_000;

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
  rssAfterLoad: number;
  rssAfterGeneration: number;
}

function allocationOf(engine: DirectEngine): Allocation {
  const sum: Allocation = { model: 0, kv: 0, compute: 0, other: 0, total: 0 };
  for (const { text } of engine.lines) {
    const size = parseBufferSize(text);
    if (size === null) continue;
    if (size.purpose === 'model') sum.model += size.bytes;
    else if (size.purpose === 'KV') sum.kv += size.bytes;
    else if (size.purpose === 'compute') sum.compute += size.bytes;
    else sum.other += size.bytes;
    sum.total += size.bytes;
  }
  return sum;
}

async function measure(modelPath: string, contextTokens: number): Promise<Measurement> {
  const engine = await startDirectEngine(benchSpec('bench', modelPath, contextTokens, ['--no-mmap']));
  try {
    await engine.readyLine;
    await pollUntilHealthy(engine, 5);
    const rssAfterLoad = await treeResidentBytes(engine.pid);
    await timedPost(false, { port: engine.port, apiKey: engine.apiKey }, '/v1/chat/completions', chatBody('bench', false, GENERATED_TOKENS));
    const rssAfterGeneration = await treeResidentBytes(engine.pid);
    const deadline = Date.now() + LOG_WAIT_MS;
    while (allocationOf(engine).compute === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    return { allocated: allocationOf(engine), rssAfterLoad, rssAfterGeneration };
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

export async function runMemoryBench(): Promise<void> {
  const models = await benchModels();
  const paths = { chat: models.chat.path, tiny: models.tiny.path };
  const dir = await scratchDir('memory');
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, configText([BASELINE, ...CASES], paths));
  const catalog = await Catalog.open({ configPath, dataDir: dir });
  const estimateOf = (c: Case) => {
    const estimate = catalog.resolve(c.id)?.estimate;
    if (estimate == null) throw new Error(`the catalog has no estimate for ${c.id}: ${catalog.resolve(c.id)?.metadataError ?? 'not in the catalog'}`);
    const total = footprintAt('full', estimate).deviceBytes;
    return { weights: estimate.weightsBytes, kv: estimate.kvBytesPerToken * c.contextTokens, compute: estimate.computeBytes, total };
  };

  const baseline = await measure(paths[BASELINE.file], BASELINE.contextTokens);
  const runtimeBytes = baseline.rssAfterGeneration - baseline.allocated.total;
  const measured = [];
  for (const c of CASES) measured.push({ c, estimate: estimateOf(c), m: await measure(paths[c.file], c.contextTokens) });

  console.log('memory truth: the catalog\'s estimate (footprintAt full) against llama.cpp\'s logged allocation and the engine\'s RSS (--no-mmap, -ngl 0, 1 thread; MiB)');
  printTable(
    ['model @ context', 'source', 'weights', 'KV cache', 'compute', 'other', 'total'],
    measured.flatMap(({ c, estimate, m }) => [
      [`demo-${c.file} @ ${c.contextTokens}`, 'estimate', mib(estimate.weights), mib(estimate.kv), mib(estimate.compute), '', mib(estimate.total)],
      ['', 'llama.cpp allocated', mib(m.allocated.model), mib(m.allocated.kv), mib(m.allocated.compute), mib(m.allocated.other), mib(m.allocated.total)],
      ['', 'estimate − allocated', signed((estimate.weights - m.allocated.model) / 2 ** 20, 1), signed((estimate.kv - m.allocated.kv) / 2 ** 20, 1), signed((estimate.compute - m.allocated.compute) / 2 ** 20, 1), '', signed((estimate.total - m.allocated.total) / 2 ** 20, 1)],
    ]),
  );
  console.log();
  console.log(
    `runtime baseline: demo-tiny @ ${BASELINE.contextTokens} has RSS ${mib(baseline.rssAfterGeneration)} MiB after a generation, of which its logged buffers are ${mib(baseline.allocated.total)} MiB: ${mib(runtimeBytes)} MiB is Node + node-llama-cpp + llama.cpp, not model`,
  );
  printTable(
    ['model @ context', 'RSS after load', 'RSS after generation', 'minus baseline', 'estimate', 'estimate vs RSS − baseline', 'estimate vs allocated'],
    measured.map(({ c, estimate, m }) => [
      `demo-${c.file} @ ${c.contextTokens}`,
      mib(m.rssAfterLoad),
      mib(m.rssAfterGeneration),
      mib(m.rssAfterGeneration - runtimeBytes),
      mib(estimate.total),
      errorOf(estimate.total, m.rssAfterGeneration - runtimeBytes),
      errorOf(estimate.total, m.allocated.total),
    ]),
  );
  console.log();
  // The verdict is against llama.cpp's own allocation: it is what a device must hold (buffers
  // are allocated whole) and it does not move run to run; RSS counts only touched pages (a KV
  // cache is touched as the context fills) and is printed above as the cross-check.
  for (const { c, estimate, m } of measured) {
    const error = (estimate.total - m.allocated.total) / m.allocated.total;
    console.log(`demo-${c.file} @ ${c.contextTokens}: estimate ${errorOf(estimate.total, m.allocated.total)} of what llama.cpp allocated (goal within ±${fixed(TARGET_ERROR * 100, 0)} %): ${verdict(Math.abs(error) <= TARGET_ERROR)}`);
  }
}
