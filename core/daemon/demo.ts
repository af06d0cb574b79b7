// `llmtray serve --demo`: generated models and a config whose budget makes every behaviour
// visible on any machine — swapping, fallback and quarantine — without a GPU or a download.
//
// The config is written only when it is absent, and afterwards the demo changes only the one
// field it owns, budget.limit: a person who edited the file (another listen.port because the
// default is taken, a model's ctx) keeps the edit, and an error message may point at the file.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { generateDemoModels, type DemoModels } from '../catalog/demo/demo-models.js';
import type { Catalog, CatalogModel } from '../catalog/catalog.js';
import type { Log } from '../controller/effects.js';
import { errorMessage } from '../contracts/error-message.js';
import type { RuntimeOverhead, RuntimePlace } from '../engine/runtime-overhead.js';
import type { LaunchSpec } from '../engine/launch-spec.js';
import { computeBudget } from '../gpu/compute-budget.js';
import type { GpuProbe } from '../gpu/gpu-probe.js';
import { DEFAULT_BUDGET_CONFIG } from '../gpu/live-budget.js';
import { estimateOnCpu, footprintAt } from '../policy/levels.js';
import { demoConfigText } from './demo-config.js';

export interface DemoSetup {
  configPath: string;
  models: DemoModels;
}

/** What the demo shows a person: everything; the budget limit is set once the catalog has priced the models (writeDemoLimit). */
function serveDemoConfig(models: DemoModels): string {
  return demoConfigText(models, {
    comment: [
      'Written by llmtray\'s demo when it was absent. Your edits are kept; the demo itself only sets budget.limit.',
      'The budget fits demo-chat with its draft, or the smaller models, but not all at once,',
      'so on-demand swapping, fallback (demo-chat -> demo-tiny) and quarantine (demo-broken) show.',
      'demo-embed answers /v1/embeddings (an encoder: its file names its pooling).',
      'Every model has the same priority, so the most recently requested one wins the memory.',
    ],
    reserveBytes: 0,
    fallbackAndAliases: true,
    broken: true,
    embed: true,
  });
}

/** Generates the demo models into DATA_DIR/demo and, when there is none yet, writes a config without a budget limit. */
export async function prepareDemo(dataDir: string): Promise<DemoSetup> {
  const dir = join(dataDir, 'demo');
  await mkdir(dir, { recursive: true });
  const models = await generateDemoModels(dir);
  const configPath = join(dir, 'config.yaml');
  // 'wx': an existing file is the person's, as they left it.
  await writeFile(configPath, serveDemoConfig(models), { flag: 'wx' }).catch((error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  });
  return { configPath, models };
}

const MIB = 2 ** 20;
/** The demo writes its limit in whole steps of this: "260MiB" reads at a glance, 272193280 does not. */
const LIMIT_STEP = 10 * MIB;

/**
 * Where the demo's budget limit may lie, from the catalog's own estimates: `wanted` is room for
 * demo-chat with its draft plus half of demo-tiny, so the two never sit together and asking for
 * one evicts the other; any limit from `low` to `high` (the middle half between demo-chat alone
 * and demo-chat beside demo-tiny) shows that too, with a margin either side for the estimates.
 * `runtimeBytes` is what each engine process itself costs where it counts (its runtime in host
 * RAM, its backend's context on a GPU), since every model's footprint includes it.
 */
export interface DemoLimitRange {
  wanted: number;
  low: number;
  high: number;
}

export function demoLimitRange(models: readonly CatalogModel[], runtimeBytes = 0, weightsOnCpu = false): DemoLimitRange | null {
  const bytes = (id: string) => {
    const estimate = models.find((m) => m.id === id)?.estimate;
    return estimate == null ? null : footprintAt('full', weightsOnCpu ? estimateOnCpu(estimate) : estimate).deviceBytes + runtimeBytes;
  };
  const chat = bytes('demo-chat');
  const tiny = bytes('demo-tiny');
  if (chat === null || tiny === null) return null;
  return demoLimitRangeOf({ chat, tiny, draft: bytes('demo-draft') });
}

/**
 * The range from the models' footprints, bytes (each with its engine's runtime). Its low end is
 * also where demo-tiny and demo-draft fit side by side, as the demo's config promises ("or the
 * smaller models"): a limit kept from an earlier runtime figure near chat + tiny/4 left them
 * 3.4 MiB short, and the concurrency case that serves both at once lost its premise.
 */
export function demoLimitRangeOf(sizes: { chat: number; tiny: number; draft: number | null }): DemoLimitRange {
  const { chat, tiny, draft } = sizes;
  const high = chat + Math.floor((3 * tiny) / 4);
  const low = Math.max(chat + Math.ceil(tiny / 4), draft === null ? 0 : tiny + draft);
  return { wanted: Math.max(chat + Math.floor(tiny / 2), low), low, high };
}

/**
 * The limit to write, or null to leave the file's as it is. A limit already in the range, in
 * whole MiB, stays: the engine's runtime is first a prior, then measured (and measured again
 * each start), and a limit that followed every figure changed between starts for nothing a
 * person could see. Otherwise `wanted` rounded up to a step, or to a whole MiB where the step
 * would leave the range.
 */
export function demoLimitToWrite(range: DemoLimitRange, current: number | undefined): number | null {
  if (current !== undefined && current % MIB === 0 && current >= range.low && current <= range.high) return null;
  const stepped = Math.ceil(range.wanted / LIMIT_STEP) * LIMIT_STEP;
  return stepped <= range.high ? stepped : Math.ceil(range.wanted / MIB) * MIB;
}

/** "260MiB" for a whole number of MiB, the bytes otherwise: the size as the config file spells it. */
export function demoLimitText(limitBytes: number): string | number {
  return limitBytes % MIB === 0 ? `${limitBytes / MIB}MiB` : limitBytes;
}

/**
 * Sets budget.limit in the demo config, leaving every other line (and comment) as it is; the
 * caller reloads the catalog. A file that is not YAML any more is the person's to fix: the
 * catalog's own error names the field, so it is left alone here.
 */
export async function writeDemoLimit(setup: DemoSetup, limitBytes: number): Promise<void> {
  const document = parseDocument(await readFile(setup.configPath, 'utf8'));
  if (document.errors.length > 0) return;
  document.setIn(['budget', 'limit'], demoLimitText(limitBytes));
  await writeFile(setup.configPath, document.toString());
}

/**
 * Keeps the demo's budget limit fitted to its engine's runtime: set now, and again whenever the
 * runtime is learned. Every model's footprint includes its engine's own cost, so the demo's limit
 * does too, and follows it as it is measured: sized with the prior, a runtime measured lower let
 * demo-chat and demo-tiny fit together, and the demo stopped showing a swap. Resolves once the
 * first fit is written; the returned teardown stops following and waits for a fit under way.
 */
export async function fitDemoBudget(deps: {
  setup: DemoSetup;
  catalog: Catalog;
  runtime: RuntimeOverhead;
  engine: LaunchSpec['engine'];
  probe: GpuProbe;
  log: Log;
}): Promise<() => Promise<void>> {
  const { setup, catalog, runtime, engine } = deps;
  const place = await runtimePlaceAtStart(deps.probe);
  // One fit at a time: two learned figures in a row must not write the file at once.
  let fitting: Promise<void> = Promise.resolve();
  const fit = (): Promise<void> =>
    (fitting = fitting.then(async () => {
      const range = demoLimitRange(catalog.models(), runtime.bytes(engine, place), place === 'host');
      const limit = range === null ? null : demoLimitToWrite(range, catalog.config().budget.limitBytes);
      if (limit === null) return;
      await writeDemoLimit(setup, limit);
      await catalog.reload();
    }));
  await fit();
  const unsubscribe = runtime.onLearned(() => {
    fit().catch((error: unknown) => deps.log.warn(`resizing the demo's budget limit failed: ${errorMessage(error)}`));
  });
  return async () => {
    unsubscribe();
    await fitting.catch(() => undefined);
  };
}

/** Where the engines' runtime will count, from one probe before the live budget runs: the demo sizes its limit with it. */
async function runtimePlaceAtStart(probe: GpuProbe): Promise<RuntimePlace> {
  const { gpus, host } = await probe.probe().catch(() => ({ gpus: [], host: { totalBytes: 0, availableBytes: 0 } }));
  const budget = computeBudget({ gpus, host, reserveBytes: 0, limitBytes: null, ourUsageByGpu: new Map(), platform: process.platform, unifiedShare: DEFAULT_BUDGET_CONFIG.unifiedShare });
  return budget.mode === 'gpu' ? 'device' : 'host';
}
