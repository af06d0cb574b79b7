// `npm run gpu-check`: is the daemon's memory estimate true on this machine's GPUs?
//
// Runs the real daemon (dist/core/cli.js) on whatever GPUs the machine has, loads the demo
// models at each placement the machine allows — whole on one GPU; split over two GPUs of one
// class (on llama-server: the daemon never splits a model on the embedded engine, which takes no
// tensorSplit); part on a GPU and the rest in host RAM — and prints, per model and GPU, the bytes the
// placement put there (the daemon's estimate) against the driver's figure for the engine's
// process on that GPU. Exit codes (checks.ts, EXIT): 0 every check within 10 %; 1 one is off by
// more; 2 the check could not run as planned; 3 no GPU, nothing checked. Never "pass" for a
// check that did not happen: on a machine without a GPU this says so and exits 3.
//
// How each placement is made to happen on cards far bigger than the demo models: a split and a
// partial launch are forced by the config's `budget.limit`, which caps every GPU in proportion;
// the limit is the middle of the range under which the daemon's own `place` gives that
// placement (forced-limit.ts). One daemon per placement, each with a fresh data dir, so what one
// run measured and learned (the catalog raises an estimate a measurement exceeds) cannot make
// the next run's estimate agree by construction.
//
// The first server of an engine kind teaches the daemon that engine's runtime on a GPU (its
// driver figure less its model's estimate; core/engine/runtime-overhead.ts). That server's
// estimate then agrees with the driver by construction, so it is the calibration and not a
// check: demo-tiny, loaded first and alone. The later runs are configured with the runtime it
// taught (`budget.engineOverhead`), as a person who measured it would.
//
// Then the speed phase, with every layer on the GPU, on demo-chat and the real-shape Llama 3.2 1B
// (Q8_0; Q4_K_M too where a llama-quantize is found): the engine race of `npm run bench`
// (speed.ts), LLMTRAY_RACE_ROUNDS rounds (default 3); then its returning conversation
// (returning.ts): ~1,500 tokens swapped out and back, and ~8,000 where the model's context
// allows, on both engines, LLMTRAY_RETURN_ROUNDS and LLMTRAY_RETURN_REAL_ROUNDS rounds
// (default 2 and 1), within LLMTRAY_RETURN_BUDGET_S (default 240) and before
// LLMTRAY_GPU_CHECK_ENDS_AT where the caller set one (on-device.sh does). It prints and never
// changes the exit code of the memory checks; where no GPU is found it does not run at all
// (exit 3 as before).
//
// Options (options.ts): --placements gpu,split,partial (default all three); --work-dir DIR (kept;
// default a temporary folder, removed after a pass); --no-speed (the memory checks alone);
// --only speed (the speed phase alone, after the same look for a GPU: exit 0 when every planned
// model was raced and every planned returning conversation that started ran, 2 when one did
// not; no memory check is claimed); --no-return (the race without the returning conversation).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Catalog } from '../../core/catalog/catalog.js';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { demoConfigText, type DemoConfigOptions } from '../../core/daemon/demo-config.js';
import { isServing } from '../../core/contracts/model-status.js';
import type { ModelView, Snapshot } from '../../core/contracts/snapshot.js';
import { RUNTIME_PRIOR_BYTES } from '../../core/engine/runtime-overhead.js';
import { computeBudget, type Budget, type GpuDevice } from '../../core/gpu/compute-budget.js';
import { createGpuProbe } from '../../core/gpu/gpu-probe.js';
import { engineDeviceName } from '../../core/gpu/engine-identity.js';
import { DEFAULT_BUDGET_CONFIG } from '../../core/gpu/live-budget.js';
import type { Placement } from '../../core/contracts/plan.js';
import { formatBytes } from '../../core/contracts/format-bytes.js';
import { checkLine, checksOf, EXIT, verdictOf, type Check } from './checks.js';
import { sleep, startDaemon, type DaemonChild } from './daemon-child.js';
import { driverFiguresOf } from './driver-figures.js';
import { desiredAlone, limitForcing } from './forced-limit.js';
import { parseOptions, type Kind, type Options } from './options.js';
import { returnBudget, type ReturnBudget } from './return-budget.js';
import { returnRounds } from './return-plan.js';
import { runReturnPhase } from './returning.js';
import { raceRounds, runSpeedPhase, speedPlan } from './speed.js';
import { llamaQuantizePath } from '../../test/bench/real-shape/real-shape-models.js';

/** Loaded first and alone: it teaches the daemon the engine's runtime on a GPU, so it is not a check. */
const CALIBRATOR = 'demo-tiny';
/** Whole on one GPU, after the calibration. */
const ON_ONE_GPU = ['demo-draft', 'demo-chat'];
/** Split and partial: the one demo model with layers enough for both (8). */
const FORCED = 'demo-chat';
/** A model load, bounded for the message only: the demo models load in seconds on a GPU. */
const LOAD_TIMEOUT_MS = 300_000;
const CALIBRATION_TIMEOUT_MS = 30_000;

const CLI = resolve(import.meta.dirname, '../../core/cli.js');
const say = (line: string): void => console.log(line);

/** The demo's models as `serve --demo` configures them, less its fallback and its corrupt model. */
function configText(models: DemoModels, budget: Pick<DemoConfigOptions, 'limitBytes' | 'engineOverheadBytes'> = {}): string {
  return demoConfigText(models, { comment: ['Written by npm run gpu-check.'], ...budget, fallbackAndAliases: false, broken: false, embed: false });
}

/** A run's folder: its config, its daemon's data dir and log. */
async function runDir(work: string, name: string, config: string): Promise<{ dir: string; configPath: string }> {
  const dir = join(work, name);
  await mkdir(dir, { recursive: true });
  const configPath = join(dir, 'config.yaml');
  await writeFile(configPath, config);
  return { dir, configPath };
}

async function daemonIn(dir: string, configPath: string): Promise<DaemonChild> {
  return startDaemon({ cliPath: CLI, configPath, dataDir: join(dir, 'data'), logPath: join(dir, 'daemon.log') });
}

/** The machine's GPUs and their budgets as the daemon computes them, from this process's own probe (which also gives each card's bus address). */
async function probeBudget(reserveBytes: number): Promise<{ gpus: GpuDevice[]; budget: Budget }> {
  const probed = await createGpuProbe().probe();
  const budget = computeBudget({
    gpus: probed.gpus,
    host: probed.host,
    reserveBytes,
    limitBytes: null,
    ourUsageByGpu: new Map(),
    platform: process.platform,
    unifiedShare: DEFAULT_BUDGET_CONFIG.unifiedShare,
    ...(probed.notes === undefined ? {} : { probeNotes: probed.notes }),
    ...(probed.displays === undefined ? {} : { displays: probed.displays }),
  });
  return { gpus: probed.gpus, budget };
}

const find = (s: Snapshot, id: string): ModelView => {
  const m = s.models.find((model) => model.id === id);
  if (m === undefined) throw new Error(`the daemon has no model '${id}'`);
  return m;
};

/**
 * Loads `id` and waits until it serves with a placement; throws with the daemon's reason when it
 * fails. A degraded model serves too (isServing): it is measured as placed, and checkModel
 * reports its level as making the run incomplete rather than waiting out the timeout for it.
 */
async function loadAndWait(daemon: DaemonChild, id: string): Promise<ModelView & { placement: Placement; upstream: NonNullable<ModelView['upstream']> }> {
  const load = await daemon.admin.runCommand({ id, command: 'load' });
  if (!load.ok) throw new Error(`${id} could not be loaded: ${load.message}`);
  const deadline = Date.now() + LOAD_TIMEOUT_MS;
  for (;;) {
    const m = await daemon.model(id);
    if (isServing(m.status.state) && m.placement !== null && m.upstream !== null) return { ...m, placement: m.placement, upstream: m.upstream };
    if (m.status.state === 'quarantined' || m.status.state === 'fallback' || m.status.recovery.attempts > 0) {
      throw new Error(`${id} did not load: ${m.status.recovery.lastError ?? m.status.state}`);
    }
    if (m.status.unschedulableReason !== null) throw new Error(`${id} was left out: ${m.status.unschedulableReason}`);
    if (Date.now() > deadline) throw new Error(`${id} was not ready within ${LOAD_TIMEOUT_MS / 1000} s (state ${m.status.state})`);
    await sleep(250);
  }
}

/** Polls `probe` every 250 ms until it returns a value; throws after a minute naming `what`. */
async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs / 1000} s for ${what}`);
    await sleep(250);
  }
}

/** One short completion, so the engine holds what it holds while serving (libraries some backends load at the first request). */
async function warm(daemon: DaemonChild, id: string): Promise<void> {
  const res = await fetch(`${daemon.endpoint}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: id, prompt: 'Hello', max_tokens: 4 }),
  });
  if (!res.ok) throw new Error(`a request to ${id} answered ${res.status}: ${await res.text()}`);
}

/** The driver's figures for `pid`, the largest of three samples a second apart per GPU (what the process peaks at is what must fit). */
async function settledFigures(pid: number, gpus: readonly GpuDevice[]): Promise<Map<number, number>> {
  const peak = new Map<number, number>();
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(1000);
    for (const [index, bytes] of await driverFiguresOf(pid, gpus)) peak.set(index, Math.max(peak.get(index) ?? 0, bytes));
  }
  return peak;
}

/** What checkAll found before it returned or threw: whether there is a GPU, and the demo models once written. */
interface Found {
  gpu: boolean;
  models: DemoModels | null;
}

/** The speed phase's settings, read from the environment before anything starts. */
interface SpeedSettings {
  raceRounds: number;
  /** null with --no-return. */
  returning: { rounds: { demo: number; real: number }; budget: ReturnBudget } | null;
}

async function main(options: Options, speed: SpeedSettings): Promise<number> {
  const work = options.workDir ?? (await mkdtemp(join(tmpdir(), 'llmtray-gpu-check-')));
  await mkdir(work, { recursive: true });
  const found: Found = { gpu: false, models: null };
  let code: number | null;
  try {
    code = await checkAll(options, work, found);
  } catch (error) {
    say(`gpu-check: could not run: ${error instanceof Error ? error.message : String(error)}`);
    say(`gpu-check: nothing is claimed; this is not a pass (exit ${EXIT.incomplete}). Configs and daemon logs are in ${work}`);
    code = EXIT.incomplete;
  }
  // The speed phase runs only where the daemon found a GPU: with none, exit 3 says nothing was checked.
  if (found.gpu && options.speed) {
    let raced = false;
    let returned = speed.returning === null;
    let models: DemoModels | null = found.models;
    try {
      models ??= await writeDemoModels(work);
      const outcome = await runSpeedPhase(models.chat.path, speed.raceRounds, say);
      raced = outcome.failed.length === 0;
    } catch (error) {
      say(`speed: could not run: ${error instanceof Error ? error.message : String(error)}; no speed figure is claimed`);
    }
    // After the race whatever became of it: a race that could not start says nothing of the return.
    if (speed.returning !== null && models !== null) {
      try {
        const outcome = await runReturnPhase(speedPlan(llamaQuantizePath()).models, models, speed.returning.rounds, speed.returning.budget, say);
        returned = outcome.failed.length === 0;
      } catch (error) {
        say(`return: could not run: ${error instanceof Error ? error.message : String(error)}; no returning-conversation figure is claimed`);
      }
    }
    if (code === null) {
      code = raced && returned ? EXIT.pass : EXIT.incomplete;
      const missed = [...(raced ? [] : ['a planned race did not run']), ...(returned ? [] : ['a planned returning conversation did not run'])];
      say(`gpu-check: --only speed: no memory check was run; exit ${code}: ${missed.length === 0 ? 'the speed phase ran what it planned' : missed.join('; ')}`);
    } else say(`gpu-check: exit ${code}, the memory checks' verdict above (the speed phase changes no exit code)`);
  }
  code ??= EXIT.incomplete;
  if (options.workDir === null) {
    if (code === EXIT.pass || code === EXIT.noGpu) await rm(work, { recursive: true, force: true });
    else say(`gpu-check: configs and daemon logs kept in ${work}`);
  }
  return code;
}

async function writeDemoModels(work: string): Promise<DemoModels> {
  await mkdir(join(work, 'models'), { recursive: true });
  return generateDemoModels(join(work, 'models'));
}

/** The memory checks' exit code; null when none were asked for (--only speed) and a GPU was found. */
async function checkAll(options: Options, work: string, found: Found): Promise<number | null> {
  const checks: Check[] = [];
  const incomplete: string[] = [];
  let names = new Map<number, string>();
  let gpus: GpuDevice[] = [];

  const checkModel = async (daemon: DaemonChild, id: string, expected: Kind): Promise<void> => {
    say(`loading ${id} (${expected})…`);
    const m = await loadAndWait(daemon, id);
    if (m.placement.kind !== expected) incomplete.push(`${id} was placed '${m.placement.kind}' where '${expected}' was meant; its figures are compared as placed`);
    if (m.status.level !== 'full') incomplete.push(`${id} runs at the ${m.status.level} level, not full (a failed launch before?)`);
    await warm(daemon, id);
    for (const check of checksOf(id, m.placement, names, await settledFigures(m.upstream.pid, gpus))) {
      checks.push(check);
      say(`  ${checkLine(check)}`);
    }
  };

  // Run 1: whole on one GPU, after the calibration. The daemon starts without models, so that a
  // machine without a GPU hears so before 50 MB of demo models are written for nothing; the
  // models come in through the config, which the daemon watches.
  const one = await runDir(work, 'run-1-gpu', 'modelDirs: []\nmodels: []\n');
  let daemon = await daemonIn(one.dir, one.configPath);
  let runtimeBytes: number;
  let models: DemoModels;
  /** The engine the daemon runs the forced model on: only llama-server splits by the plan's shares. */
  let forcedEngine: ModelView['engine'];
  try {
    const empty = await daemon.state();
    if (empty.budget.mode !== 'gpu' || empty.budget.gpus.length === 0) {
      const line = daemon.log().split('\n').find((l) => l.includes('memory budget:'))?.replace(/^.*memory budget: /, '') ?? `${empty.budget.mode} mode`;
      say(`gpu-check: the daemon found no GPU whose memory it can measure (memory budget: ${line}).`);
      say(`gpu-check: nothing was checked; this is not a pass (exit ${EXIT.noGpu}).`);
      await daemon.stop();
      return EXIT.noGpu;
    }
    found.gpu = true;
    if (!options.memory) {
      await daemon.stop();
      return null;
    }
    models = await writeDemoModels(work);
    found.models = models;
    await writeFile(one.configPath, configText(models));
    const start = await until('the daemon to read the demo models from its config', async () => {
      const s = await daemon.state();
      return s.models.length === 3 && s.models.every((m) => m.estimateBytes.full > 0) ? s : undefined;
    });
    const catalogReserve = (await Catalog.open({ configPath: one.configPath, dataDir: join(one.dir, 'catalog') })).config().budget.reserveBytes;
    const probed = await probeBudget(catalogReserve);
    gpus = probed.gpus;
    names = new Map(start.budget.gpus.map((g) => [g.index, g.name]));
    const mismatch = start.budget.gpus.some((g) => probed.budget.perGpu.find((p) => p.index === g.index)?.name !== g.name);
    if (mismatch) throw new Error(`this probe and the daemon's see different GPUs (${probed.budget.perGpu.map((g) => `${g.index} ${g.name}`).join(', ')} against ${start.budget.gpus.map((g) => `${g.index} ${g.name}`).join(', ')})`);
    // The driver's numbers the engines are told (core/gpu/README.md, "Device numbers"); the checks
    // below then find each engine, by the driver's per-process figures, on the card its placement named.
    for (const g of probed.budget.perGpu) {
      say(`GPU ${g.index} ${g.name} (${g.deviceClass}), the engine's ${engineDeviceName(g) ?? 'device unknown'} ${JSON.stringify(g.driverIndex ?? {})}: ${formatBytes(g.totalBytes)}, ${formatBytes(g.budgetBytes)} budget`);
    }
    for (const d of probed.budget.displays ?? []) say(`display controller ${d.name} (${d.busAddress ?? 'no address'}): no backend computes on it, numbered nowhere`);

    const tiny = find(start, CALIBRATOR);
    forcedEngine = find(start, FORCED).engine;
    const prior = RUNTIME_PRIOR_BYTES.device[tiny.engine];
    say(`loading ${CALIBRATOR} to calibrate the ${tiny.engine} engine's runtime on a GPU…`);
    const calibrator = await loadAndWait(daemon, CALIBRATOR);
    const deadline = Date.now() + CALIBRATION_TIMEOUT_MS;
    let taught = (await daemon.model(CALIBRATOR)).estimateBytes.full;
    while (taught === tiny.estimateBytes.full && Date.now() < deadline) {
      await sleep(250);
      taught = (await daemon.model(CALIBRATOR)).estimateBytes.full;
    }
    const where = `GPU ${calibrator.placement.devices[0]?.index} ${names.get(calibrator.placement.devices[0]?.index ?? -1) ?? ''}`;
    if (taught === tiny.estimateBytes.full) {
      runtimeBytes = prior;
      incomplete.push(`the daemon did not learn the ${tiny.engine} engine's runtime on a GPU from ${CALIBRATOR} within ${CALIBRATION_TIMEOUT_MS / 1000} s (does the driver list its pid?); its prior of ${formatBytes(prior)} stands`);
    } else {
      // The estimate was the model plus the prior; now it is the model plus what was learned.
      runtimeBytes = taught - (tiny.estimateBytes.full - prior);
      say(`calibration: ${CALIBRATOR} on ${where} taught the daemon the ${tiny.engine} engine's runtime on a GPU: ${formatBytes(runtimeBytes)} (the driver's figure for its process less its model's estimate); not counted as a check`);
    }

    if (options.placements.includes('gpu')) for (const id of ON_ONE_GPU) await checkModel(daemon, id, 'gpu');
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  await daemon.stop();

  // Runs 2 and 3: forced by a limit, priced with the runtime run 1 taught.
  for (const kind of ['split', 'partial'] as const) {
    if (!options.placements.includes(kind)) continue;
    const run = await runDir(work, `run-${kind === 'split' ? 2 : 3}-${kind}`, configText(models, { engineOverheadBytes: runtimeBytes }));
    const catalog = await Catalog.open({ configPath: run.configPath, dataDir: join(run.dir, 'catalog') });
    const { budget } = await probeBudget(catalog.config().budget.reserveBytes);
    const classes = new Map<string, number>();
    for (const g of budget.perGpu) classes.set(g.deviceClass, (classes.get(g.deviceClass) ?? 0) + 1);
    if (kind === 'split' && ![...classes.values()].some((n) => n >= 2)) {
      say(`split: not checked: this machine has no two GPUs of one class (${[...classes.keys()].join(', ')}), so the daemon never splits here`);
      continue;
    }
    if (kind === 'split' && forcedEngine !== 'llama-server') {
      say(`split: not checked: ${FORCED} runs on the ${forcedEngine} engine, which node-llama-cpp cannot tell a split's shares (no tensorSplit), so the daemon never splits it; with a llama-server (engines.llamaServer, or on PATH) the split is checked`);
      continue;
    }
    const forced = limitForcing(kind, desiredAlone(catalog.models(), FORCED, runtimeBytes, forcedEngine === 'llama-server'), FORCED, budget);
    if (forced === null) {
      incomplete.push(`${kind}: no budget limit makes the daemon place ${FORCED} '${kind}' on these GPUs`);
      continue;
    }
    await writeFile(run.configPath, configText(models, { engineOverheadBytes: runtimeBytes, limitBytes: forced.limitBytes }));
    const on = forced.placement.devices.map((d) => d.index).sort((a, b) => a - b);
    say(`${kind}: budget.limit ${formatBytes(forced.limitBytes)} (${forced.limitBytes} bytes; every GPU capped in proportion), under which the daemon should place ${FORCED} on GPU ${on.join(' and ')}`);
    daemon = await daemonIn(run.dir, run.configPath);
    try {
      await checkModel(daemon, FORCED, kind);
    } finally {
      await daemon.stop();
    }
  }

  const verdict = verdictOf(checks, incomplete);
  for (const line of verdict.lines) say(line);
  return verdict.exitCode;
}

let options: Options;
let speed: SpeedSettings = { raceRounds: 0, returning: null };
try {
  options = parseOptions(process.argv.slice(2));
  // Read before anything starts, so that a wrong LLMTRAY_RACE_ROUNDS (or return variable) is refused at once, not after the memory checks.
  if (options.speed) speed = { raceRounds: raceRounds(), returning: options.returning ? { rounds: returnRounds(), budget: returnBudget() } : null };
} catch (error) {
  console.error(`gpu-check: ${(error as Error).message}`);
  process.exit(EXIT.incomplete);
}
main(options, speed).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`gpu-check: could not run: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = EXIT.incomplete;
  },
);
