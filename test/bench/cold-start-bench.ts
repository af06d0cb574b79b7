// What an engine's start costs beyond loading its model, and what a person feels of it: a cold
// request for demo-chat (with its draft) until its first token.
//
// Part 1, the engine's own overhead. Supervisor.launch() of demo-chat + demo-draft (ctx 2048,
// -ngl 0, 1 thread), from launch() called to resolved, on
//   - llama-server (a CPU build; LLMTRAY_LLAMA_SERVER names it, as for the tests),
//   - the embedded engine adopting a warm spare (started ahead, waited for untimed),
//   - the embedded engine spawned cold (engines.warmSpare: false),
//   - with LLMTRAY_BENCH_BASELINE=DIR (a build of an earlier commit), that build's embedded engine
//     spawned cold under this supervisor: "before".
// The model load itself is taken out with the two lines both engines print around it,
// `load_model: loading model` and `load_model: initializing` (llama-server's and the embedded
// engine's words are the same there), stamped on arrival by the spawn function the supervisor
// is given: between them the GGUF is read, the weights mapped and the contexts made; before
// them the process, its runtime and backend start; after them come the slots, the chat template,
// the HTTP side and readiness detection. overhead = launch → ready − (initializing − loading).
// Why through the supervisor and not a bare spawn: a spare exists only there, and the same path
// for every engine keeps the comparison fair.
//
// Part 2, what a person feels: the whole daemon (startDaemon in this process) sent a streaming
// one-token chat for demo-chat while it is not loaded, request → first token, one daemon per
// engine as above (the baseline's own startDaemon for "before"), unloaded through the admin API
// between runs and, for the spare, waited for until its replacement's runtime is up.
//
// Runs rotate their order every round, so a stall on the shared machine lands on each alike.
// Target: the embedded engine's overhead at most 150 ms above llama-server's (issue 14).
import { spawn as nodeSpawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { ADMIN_TOKEN_FILE } from '../../core/admin/admin-token.js';
import { startDaemon, type RunningDaemon } from '../../core/daemon.js';
import { createLogger } from '../../core/daemon/logger.js';
import { EMBEDDED_CAPABILITIES, type LaunchSpec } from '../../core/engine/launch-spec.js';
import { defaultEngineCommand, embeddedEngineCommand, type EngineCommand } from '../../core/engine/supervisor/engine-command.js';
import { isRunning } from '../../core/engine/supervisor/process-tree.js';
import { Supervisor } from '../../core/engine/supervisor/supervisor.js';
import { SPARE_RECORD_ID } from '../../core/engine/supervisor/warm-spare.js';
import { benchModels, scratchDir } from './bench-models.js';
import { isModelLoadedLine, observeSpawns, recordLines, type TimedLine } from './engine-process.js';
import { chatBody, timedStream } from './http-client.js';
import { fixed, median, printTable, signed, verdict } from './stats.js';
import type { EngineKind } from '../../core/contracts/snapshot.js';
import { llamaServerPath, machineLoad, roundsFromEnv, waitForQuietIfAsked } from './bench-env.js';
import { chosenRealShapes, realShapeModel } from './real-shape/real-shape-models.js';

const MODEL_ID = 'bench-chat';
const DRAFT_ID = 'bench-draft';
/** Measured rounds (LLMTRAY_COLD_START_ROUNDS shortens a run); one more runs first, unmeasured, to warm the page cache and the daemons. */
const ROUNDS = roundsFromEnv('LLMTRAY_COLD_START_ROUNDS', 5);
/** On the real-shape model each cold request loads a gigabyte: fewer rounds. */
const REAL_ROUNDS = roundsFromEnv('LLMTRAY_COLD_START_ROUNDS', 3);
const REAL_MODEL_ID = 'bench-real';
const TARGET_ABOVE_LLAMA_SERVER_MS = 150;
const WAIT_MS = 60_000;

type Variant = 'llama-server' | 'embedded, warm spare' | 'embedded, cold' | 'embedded, before';

interface Overhead {
  totalMs: number;
  loadMs: number;
  overheadMs: number;
}

const LOADING = /load_model: loading model/;
const INITIALIZING = /load_model: initializing/;
const SPARE_READY = /^spare: runtime ready\b/;

/** An earlier build to compare with (LLMTRAY_BENCH_BASELINE=DIR, a checkout with dist/ built), or null. */
function baselineDir(): string | null {
  const dir = process.env.LLMTRAY_BENCH_BASELINE;
  return dir !== undefined && dir !== '' && existsSync(join(dir, 'dist', 'core', 'daemon.js')) ? resolve(dir) : null;
}

/** Every line of every child spawned through it, stamped on arrival, by pid. */
class LineLog {
  readonly byPid = new Map<number, TimedLine[]>();
  readonly spawn = (command: string, args: readonly string[], options: SpawnOptions): ChildProcess => {
    const child = nodeSpawn(command, args, options);
    const lines: TimedLine[] = [];
    if (child.pid !== undefined) this.byPid.set(child.pid, lines);
    recordLines(child, (line) => lines.push(line));
    return child;
  };

  /** When `pattern` first arrived from `pid` at or after `since`; rejects when it never did. */
  at(pid: number, pattern: RegExp, since: number): number {
    const line = this.byPid.get(pid)?.find((l) => l.at >= since && pattern.test(l.text));
    if (line === undefined) throw new Error(`pid ${pid} printed no line matching ${pattern}`);
    return line.at;
  }
}

async function until(what: string, probe: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = performance.now() + WAIT_MS;
  while (!(await probe())) {
    if (performance.now() > deadline) throw new Error(`not within ${WAIT_MS} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// ── Part 1 ─────────────────────────────────────────────────────────────────────────────────────

interface Launcher {
  variant: Variant;
  supervisor: Supervisor;
  lines: LineLog;
  /** Untimed: what must be true before a cold launch (the spare's runtime up). */
  prepare(): Promise<void>;
}

async function launcher(variant: Variant, spec: LaunchSpec, command: (spec: LaunchSpec) => Promise<EngineCommand>, spare: boolean): Promise<Launcher> {
  const lines = new LineLog();
  const supervisor = await Supervisor.start({
    dataDir: await scratchDir(`cold-start-${variant.replace(/\W+/g, '-')}`),
    specFor: () => spec,
    engineCommand: command,
    footprint: () => 0,
    spawn: lines.spawn,
    ...(spare ? { warmSpare: { command: async () => embeddedEngineCommand(), env: {} } } : {}),
  });
  if (spare) supervisor.setSpareWanted(true);
  const prepare = async (): Promise<void> => {
    if (!spare) return;
    await until(`a warm spare for ${variant}`, () => {
      const status = supervisor.spareStatus();
      return status !== null && status.phase === 'ready';
    });
  };
  return { variant, supervisor, lines, prepare };
}

async function launchOnce(l: Launcher): Promise<Overhead> {
  await l.prepare();
  const launchedAt = performance.now();
  await l.supervisor.launch(MODEL_ID, 'full');
  const readyAt = performance.now();
  const pid = l.supervisor.endpointFor(MODEL_ID)?.pid ?? -1;
  const loadMs = l.lines.at(pid, INITIALIZING, launchedAt) - l.lines.at(pid, LOADING, launchedAt);
  await l.supervisor.evict(MODEL_ID);
  return { totalMs: readyAt - launchedAt, loadMs, overheadMs: readyAt - launchedAt - loadMs };
}

// ── Part 2 ─────────────────────────────────────────────────────────────────────────────────────

interface ColdDaemon {
  variant: Variant;
  /** The model its cold requests ask for. */
  modelId: string;
  daemon: RunningDaemon;
  token: string;
  spare: boolean;
}

function configText(models: { chat: string; draft: string }, engine: EngineKind, options: { spare: boolean; llamaServer: string | null }): string {
  const engines = [`  warmSpare: ${options.spare}`, ...(options.llamaServer === null ? [] : [`  llamaServer: ${JSON.stringify(options.llamaServer)}`])];
  return `modelDirs: []
budget:
  reserve: 0
engines:
${engines.join('\n')}
models:
  - id: ${MODEL_ID}
    path: ${JSON.stringify(models.chat)}
    ctx: 2048
    gpuLayers: 0
    engine: ${engine}
    draft: ${DRAFT_ID}
  - id: ${DRAFT_ID}
    path: ${JSON.stringify(models.draft)}
    ctx: 2048
    gpuLayers: 0
    engine: ${engine}
`;
}

/** The baseline's config: the same, without engines.warmSpare, which it does not know. */
function baselineConfigText(models: { chat: string; draft: string }): string {
  return configText(models, 'embedded', { spare: false, llamaServer: null }).replace(/engines:\n {2}warmSpare: false\n/, '');
}

type StartDaemon = typeof startDaemon;

async function coldDaemon(variant: Variant, config: string, start: StartDaemon, spare: boolean, log: string[], modelId = MODEL_ID): Promise<ColdDaemon> {
  const dataDir = await scratchDir(`cold-daemon-${variant.replace(/\W+/g, '-')}`);
  const configPath = join(dataDir, 'config.yaml');
  await writeFile(configPath, config);
  const daemon = await start({ configPath, dataDir, port: 0, threads: 1, log: (subsystem) => createLogger(subsystem, (line) => log.push(`${variant}: ${line}`)) });
  const token = (await readFile(join(dataDir, ADMIN_TOKEN_FILE), 'utf8')).trim();
  return { variant, modelId, daemon, token, spare };
}

/** Spares (of any daemon here) whose runtime is up, by pid: observed through the child_process diagnostics channel. */
const readySpares = new Set<number>();
/** When engines (of any daemon here) said "model loaded": the moment each became ready. */
const readyLines: number[] = [];

interface ColdRun {
  /** Request sent → first token. */
  totalMs: number;
  /** Request sent → the engine's "model loaded" line. */
  readyMs: number;
}

async function unload(d: ColdDaemon): Promise<void> {
  const upstream = (): number | null => d.daemon.admin.snapshot().models.find((m) => m.id === d.modelId)?.upstream?.pid ?? null;
  const pid = upstream();
  await new Promise<void>((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port: d.daemon.port, method: 'POST', path: `/api/models/${d.modelId}/unload`, headers: { authorization: `Bearer ${d.token}` }, agent: false }, (res) => {
      res.resume();
      res.once('end', () => (res.statusCode === 200 ? done() : fail(new Error(`unload answered ${res.statusCode}`))));
    });
    req.once('error', fail);
    req.end();
  });
  await until(`${d.variant}: ${d.modelId} unloaded`, async () => upstream() === null && (pid === null || !(await isRunning(pid))));
}

/** The cold requests' table: each variant's medians, split at "model loaded", and each against llama-server's. */
function printColdRequests(variants: readonly Variant[], coldRuns: ReadonlyMap<Variant, ColdRun[]>): void {
  const llama = median((coldRuns.get('llama-server') ?? []).map((r) => r.totalMs));
  printTable(
    ['engine', 'request → ready', 'ready → first token', 'request → first token', 'over llama-server', 'each run'],
    variants.map((variant) => {
      const runs = coldRuns.get(variant) ?? [];
      const total = median(runs.map((r) => r.totalMs));
      return [
        variant,
        fixed(median(runs.map((r) => r.readyMs)), 1),
        fixed(median(runs.map((r) => r.totalMs - r.readyMs)), 1),
        fixed(total, 1),
        variant === 'llama-server' || !Number.isFinite(llama) ? '' : signed(total - llama, 1),
        runs.map((r) => fixed(r.totalMs, 0)).join(' '),
      ];
    }),
  );
}

async function coldRequest(d: ColdDaemon): Promise<ColdRun> {
  if (d.spare) {
    // The spare the last run's launch left is replaced once that launch is done; wait for the replacement's runtime.
    await until(`${d.variant}: a warm spare is up`, () => {
      const spare = d.daemon.admin.snapshot().budget.holders.some((h) => h.kind === 'spare');
      return spare && [...readySpares].some((pid) => liveSpareOf(d, pid));
    });
  }
  const times = await timedStream(false, { port: d.daemon.port }, '/v1/chat/completions', chatBody(d.modelId, true));
  await unload(d);
  const readyAt = readyLines.find((at) => at >= times.startedAt && at <= times.firstTokenAt) ?? Number.NaN;
  return { totalMs: times.firstTokenAt - times.startedAt, readyMs: readyAt - times.startedAt };
}

/** Whether `pid` is a spare of this daemon still waiting (engines.json records it as the spare). Read in a poll, so synchronous. */
function liveSpareOf(d: ColdDaemon, pid: number): boolean {
  try {
    const engines = (JSON.parse(readFileSync(join(d.daemon.dataDir, 'engines.json'), 'utf8')) as { engines: { modelId: string; pid: number }[] }).engines;
    return engines.some((e) => e.pid === pid && e.modelId === SPARE_RECORD_ID);
  } catch {
    return false;
  }
}

// ── The run ────────────────────────────────────────────────────────────────────────────────────

function rotate<T>(items: readonly T[], by: number): T[] {
  return items.map((_, i) => items[(i + by) % items.length] as T);
}

export async function runColdStartBench(): Promise<void> {
  const models = await benchModels();
  const llamaServer = llamaServerPath();
  const baseline = baselineDir();
  const spec = (engine: EngineKind): LaunchSpec => ({
    modelId: MODEL_ID, engine, modelPath: models.chat.path, contextTokens: 2048, gpuLayers: 0, threads: 1, parallel: 1,
    draft: { modelPath: models.draft.path, gpuLayers: 0 }, aliases: [], extraArgs: [], env: {},
  });
  if (llamaServer === null) console.log('cold start: no llama-server (set LLMTRAY_LLAMA_SERVER, or npm run build:llama-server): its rows are left out');

  // Part 1.
  const launchers: Launcher[] = [];
  if (llamaServer !== null) launchers.push(await launcher('llama-server', spec('llama-server'), defaultEngineCommand({ llamaServerPath: llamaServer }), false));
  launchers.push(await launcher('embedded, warm spare', spec('embedded'), defaultEngineCommand({ llamaServerPath: null }), true));
  launchers.push(await launcher('embedded, cold', spec('embedded'), defaultEngineCommand({ llamaServerPath: null }), false));
  if (baseline !== null) {
    const entry = join(baseline, 'dist', 'core', 'engine', 'embedded', 'main.js');
    launchers.push(await launcher('embedded, before', spec('embedded'), async () => ({ command: process.execPath, args: [entry], capabilities: EMBEDDED_CAPABILITIES }), false));
  }
  const overheads = new Map<Variant, Overhead[]>(launchers.map((l) => [l.variant, []]));
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      for (const l of rotate(launchers, round)) {
        const run = await launchOnce(l);
        if (round > 0) overheads.get(l.variant)?.push(run);
      }
    }
  } finally {
    await Promise.all(launchers.map((l) => l.supervisor.close()));
  }

  console.log(`cold start, part 1: Supervisor.launch() of demo-chat + its draft (ctx 2048, -ngl 0, 1 thread) → ready, less the model load itself ("loading model" → "initializing"); medians of ${ROUNDS} (ms)`);
  const rows = launchers.map((l) => {
    const runs = overheads.get(l.variant) ?? [];
    return { variant: l.variant, total: median(runs.map((r) => r.totalMs)), load: median(runs.map((r) => r.loadMs)), overhead: median(runs.map((r) => r.overheadMs)), spread: runs.map((r) => fixed(r.overheadMs, 0)).join(' ') };
  });
  const reference = rows.find((r) => r.variant === 'llama-server')?.overhead ?? Number.NaN;
  printTable(
    ['engine', 'launch → ready', 'model load', 'overhead', 'over llama-server', 'overhead, each run'],
    rows.map((r) => [r.variant, fixed(r.total, 1), fixed(r.load, 1), fixed(r.overhead, 1), r.variant === 'llama-server' ? '' : signed(r.overhead - reference, 1), r.spread]),
  );
  const spare = rows.find((r) => r.variant === 'embedded, warm spare')?.overhead ?? Number.NaN;
  if (Number.isFinite(reference)) {
    console.log(`embedded engine (warm spare) overhead above llama-server's (median): ${signed(spare - reference, 1)} ms (target ≤ ${TARGET_ABOVE_LLAMA_SERVER_MS} ms): ${verdict(spare - reference <= TARGET_ABOVE_LLAMA_SERVER_MS)}`);
  }
  console.log();

  // Part 2.
  const daemonLog: string[] = [];
  const stopObserving = observeSpawns((child) => {
    recordLines(child, (line) => {
      if (SPARE_READY.test(line.text) && child.pid !== undefined) readySpares.add(child.pid);
      if (isModelLoadedLine(line.text)) readyLines.push(line.at);
    });
  });
  const paths = { chat: models.chat.path, draft: models.draft.path };
  const daemons: ColdDaemon[] = [];
  try {
    if (llamaServer !== null) daemons.push(await coldDaemon('llama-server', configText(paths, 'llama-server', { spare: false, llamaServer }), startDaemon, false, daemonLog));
    daemons.push(await coldDaemon('embedded, warm spare', configText(paths, 'embedded', { spare: true, llamaServer: null }), startDaemon, true, daemonLog));
    daemons.push(await coldDaemon('embedded, cold', configText(paths, 'embedded', { spare: false, llamaServer: null }), startDaemon, false, daemonLog));
    if (baseline !== null) {
      const module = (await import(pathToFileURL(join(baseline, 'dist', 'core', 'daemon.js')).href)) as { startDaemon: StartDaemon };
      daemons.push(await coldDaemon('embedded, before', baselineConfigText(paths), module.startDaemon, false, daemonLog));
    }
    const coldRuns = new Map<Variant, ColdRun[]>(daemons.map((d) => [d.variant, []]));
    for (let round = 0; round <= ROUNDS; round++) {
      for (const d of rotate(daemons, round)) {
        const run = await coldRequest(d);
        if (round > 0) coldRuns.get(d.variant)?.push(run);
      }
    }
    console.log(`cold start, part 2: a cold request for demo-chat (+ draft) through the whole daemon → first token, split at the engine's "model loaded" line; medians of ${ROUNDS} (ms)`);
    printColdRequests(daemons.map((d) => d.variant), coldRuns);
  } catch (error) {
    console.error(daemonLog.slice(-30).join('\n'));
    throw error;
  } finally {
    stopObserving();
    await Promise.all(daemons.map((d) => d.daemon.stop()));
  }
  console.log();
  await realShapeColdStart(llamaServer);
}

/** One real-shape model, no draft, as a person's config names it. */
function realConfigText(modelPath: string, engine: EngineKind, options: { spare: boolean; llamaServer: string | null }): string {
  const engines = [`  warmSpare: ${options.spare}`, ...(options.llamaServer === null ? [] : [`  llamaServer: ${JSON.stringify(options.llamaServer)}`])];
  return `modelDirs: []
budget:
  reserve: 0
engines:
${engines.join('\n')}
models:
  - id: ${REAL_MODEL_ID}
    path: ${JSON.stringify(modelPath)}
    ctx: 2048
    gpuLayers: 0
    engine: ${engine}
`;
}

/**
 * Part 2 on a real-shape model (issue 41): the first LLMTRAY_REAL_SHAPES chooses, which is
 * llama-3.2-1b Q4_K_M unless it names others (REAL_SHAPE_MODELS' order), where the load is a
 * gigabyte of weights and a 128,256-token vocabulary, not a few MiB: a cold request through the
 * whole daemon → first token, llama-server and the embedded engine with and without its warm
 * spare, as part 2 on demo-chat (no draft here). None with LLMTRAY_REAL_SHAPES=none.
 */
async function realShapeColdStart(llamaServer: string | null): Promise<void> {
  const first = chosenRealShapes()[0];
  if (first === undefined) return;
  const model = await realShapeModel(first.shape, first.quant);
  const daemonLog: string[] = [];
  const stopObserving = observeSpawns((child) => {
    recordLines(child, (line) => {
      if (SPARE_READY.test(line.text) && child.pid !== undefined) readySpares.add(child.pid);
      if (isModelLoadedLine(line.text)) readyLines.push(line.at);
    });
  });
  const daemons: ColdDaemon[] = [];
  try {
    if (llamaServer !== null) daemons.push(await coldDaemon('llama-server', realConfigText(model.path, 'llama-server', { spare: false, llamaServer }), startDaemon, false, daemonLog, REAL_MODEL_ID));
    daemons.push(await coldDaemon('embedded, warm spare', realConfigText(model.path, 'embedded', { spare: true, llamaServer: null }), startDaemon, true, daemonLog, REAL_MODEL_ID));
    daemons.push(await coldDaemon('embedded, cold', realConfigText(model.path, 'embedded', { spare: false, llamaServer: null }), startDaemon, false, daemonLog, REAL_MODEL_ID));
    await waitForQuietIfAsked();
    const loadBefore = machineLoad().label;
    const coldRuns = new Map<Variant, ColdRun[]>(daemons.map((d) => [d.variant, []]));
    for (let round = 0; round <= REAL_ROUNDS; round++) {
      for (const d of rotate(daemons, round)) {
        const run = await coldRequest(d);
        if (round > 0) coldRuns.get(d.variant)?.push(run);
      }
    }
    const loadAfter = machineLoad().label;
    console.log(`### cold start on ${model.label} (${loadBefore} before, ${loadAfter} after)`);
    console.log(`a cold request for ${model.label} (ctx 2048, -ngl 0, 1 thread) through the whole daemon → first token, split at the engine's "model loaded" line; medians of ${REAL_ROUNDS} (ms)`);
    printColdRequests(daemons.map((d) => d.variant), coldRuns);
    if (llamaServer === null) console.log('(no llama-server found: its row is left out)');
  } catch (error) {
    console.error(daemonLog.slice(-30).join('\n'));
    throw error;
  } finally {
    stopObserving();
    await Promise.all(daemons.map((d) => d.daemon.stop()));
  }
}
