// What a request-driven swap adds: two models that cannot share the budget, a request for the
// one that is not resident right after the last token of the one that is, until its first token.
//
// The daemon runs in this process (startDaemon, demo-chat and demo-tiny, each alone within a
// budget limit that cannot hold both, the embedded engine, 1 thread, no warm spare kept idle:
// this measures the swap's own machinery, which a spare would hide behind a faster start). Each
// swap: a streaming 8-token chat to the resident model A, then, the moment its stream ends (A's
// last token), a streaming one-token chat to B. Between the two: the router's wait, a controller
// pass, A's eviction — SIGTERM, its exit, and the wait for its memory (on the CPU, the process's
// exit; on a GPU, the driver's figure) — and B's spawn, load, readiness and first token. On the
// CPU the supervisor starts B's engine process (its runtime, no model) as the pass begins A's
// eviction, and hands it B's launch once A's memory is back (warm-spare.ts, startForLaunch): B's
// model never loads beside A's, but B's runtime start overlaps A's exit.
// B's engine is observed as in the activation benchmark (the child_process diagnostics channel:
// the moment before its spawn, its lines as they arrive), which splits the swap into
//   A's last token → B spawned (router, pass, supervisor setup; A's eviction too where B's
//     process is started only after it)
//   + B's own load (spawn → "model loaded": not the swap's cost, and the noisiest part), less
//   + the memory wait inside it: how long B's runtime, ready, waited for its launch (A's exit
//     and memory); zero when A was gone first, and counted as the swap's
//   + B's "model loaded" → first token (readiness detection, forwarding, the first answer).
// The reference is B on a fresh engine started directly with the daemon's own argv: its /health
// polled every millisecond, then the same one-token request; its request → first token is the
// part of "after" that is the engine's. added = before spawn + memory wait + after ready −
// reference answer. The plain difference of B's spawn → first token on the fresh engine and the
// whole swap is printed too, as a cross-check that carries the load noise. Swaps alternate
// direction (chat → tiny, tiny → chat), each with its own reference run right after it.
// Target: at most 20 ms added (issue 14).
//
// Then the same with a real-shape model as one side (issue 41: the first non-MoE one
// LLMTRAY_REAL_SHAPES chooses, llama-3.2-1b Q4_K_M by default; none with `none`) ⇄ demo-tiny, on
// each engine (llama-server where one is found: it has no warm spare, so B starts after A's
// exit). There the limit is the daemon's own: it starts without one, serves the real-shape model
// once (learning its engine's runtime, which reprices both), and is given the larger price and
// half the smaller. LLMTRAY_SWAP_ROUNDS sets the measured swaps (8 by default).
import type { ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { Catalog } from '../../core/catalog/catalog.js';
import { startDaemon, type RunningDaemon } from '../../core/daemon.js';
import { launchSpecFor } from '../../core/daemon/launch-specs.js';
import { createLogger } from '../../core/daemon/logger.js';
import type { LaunchSpec } from '../../core/engine/launch-spec.js';
import { RUNTIME_PRIOR_BYTES } from '../../core/engine/runtime-overhead.js';
import { footprintAt } from '../../core/policy/levels.js';
import { llamaServerPath, machineLoad, roundsFromEnv, waitForQuietIfAsked } from './bench-env.js';
import { benchModels, scratchDir } from './bench-models.js';
import { chosenRealShapes, realShapeModel } from './real-shape/real-shape-models.js';
import { observeSpawns, pollUntilHealthy, readyLineOf, recordLines, startDirectEngine } from './engine-process.js';
import { chatBody, timedStream } from './http-client.js';
import { fixed, median, printTable, signed, verdict } from './stats.js';

const CHAT = 'swap-chat';
const TINY = 'swap-tiny';
/** Measured swaps (LLMTRAY_SWAP_ROUNDS); two more run first, unmeasured (one each way), to warm the page cache. */
const SWAPS = roundsFromEnv('LLMTRAY_SWAP_ROUNDS', 8);
/** A limit above any machine's memory: none, while the daemon learns its engine's runtime. */
const UNLIMITED_BYTES = 2 ** 50;

type Engine = 'embedded' | 'llama-server';

/** One table: which engine, which files, what the table calls them. */
interface Pair {
  engine: Engine;
  llamaServer: string | null;
  chat: { label: string; path: string };
  tiny: { label: string; path: string };
  /** 'catalog': the demo rows' limit from the catalog's estimates and the embedded runtime's prior; 'daemon': the daemon's own prices once it has served the chat side. */
  limit: 'catalog' | 'daemon';
}
const TARGET_ADDED_MS = 20;
const POLL_MS = 1;

interface SwapRun {
  to: string;
  /** A's last token → B's first token. */
  swapMs: number;
  /** A's last token → B spawned. */
  beforeSpawnMs: number;
  /** B spawned → A's process exited (negative: A was gone before B spawned). */
  aExitAfterSpawnMs: number;
  /** B spawned → its "model loaded". */
  loadMs: number;
  /** Within B's load: its runtime ready → its launch arrived (the wait for A's memory); 0 when the launch came first. */
  memoryWaitMs: number;
  /** B's "model loaded" → its first token through the daemon. */
  afterReadyMs: number;
  /** Reference: B's request → first token on a fresh engine. */
  directAnswerMs: number;
  /** Reference: B spawned → first token on a fresh engine. */
  directTotalMs: number;
}

/** B's engine process as the swap saw it: spawned at `at`; its launch's and its runtime's lines when it began as a spare. */
interface SwappedIn {
  child: ChildProcess;
  at: number;
  readyLine: Promise<number>;
  adoptedAt: number | null;
  runtimeReadyAt: number | null;
}

function configText(pair: Pair, limitBytes: number): string {
  return `modelDirs: []
budget:
  reserve: 0
  limit: ${limitBytes}
engines:
  warmSpare: false
${pair.llamaServer === null ? '' : `  llamaServer: ${JSON.stringify(pair.llamaServer)}\n`}models:
  - id: ${CHAT}
    path: ${JSON.stringify(pair.chat.path)}
    ctx: 2048
    gpuLayers: 0
    engine: ${pair.engine}
  - id: ${TINY}
    path: ${JSON.stringify(pair.tiny.path)}
    ctx: 2048
    gpuLayers: 0
    engine: ${pair.engine}
`;
}

/** Calls `onSpawn` for the next engine process started for `path`'s model, or started as a spare (which a launch adopts). */
function observeEngineOf(path: string, onSpawn: (engine: SwappedIn) => void): () => void {
  let seen = false;
  return observeSpawns((child, at) => {
    if (seen || !(child.spawnargs.includes(path) || child.spawnargs.includes('--spare'))) return;
    seen = true;
    const engine: SwappedIn = { child, at, readyLine: readyLineOf(child), adoptedAt: null, runtimeReadyAt: null };
    recordLines(child, (line) => {
      if (line.text.startsWith('spare: adopted by a launch')) engine.adoptedAt ??= line.at;
      if (line.text.startsWith('spare: runtime ready')) engine.runtimeReadyAt ??= line.at;
    });
    onSpawn(engine);
  });
}

/** When `child` exits (performance.now()). */
function exitOf(child: ChildProcess): Promise<number> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.reject(new Error(`pid ${child.pid} had exited before the swap`));
  return new Promise((resolve) => child.once('exit', () => resolve(performance.now())));
}

async function swapTo(daemon: RunningDaemon, from: string, fromEngine: SwappedIn, to: string, toPath: string): Promise<{ run: Omit<SwapRun, 'directAnswerMs' | 'directTotalMs'>; engine: SwappedIn }> {
  // A, resident: its stream's end is its last token.
  const last = await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(from, true, 8));
  const aExited = exitOf(fromEngine.child);
  let spawned: SwappedIn | null = null;
  const stopObserving = observeEngineOf(toPath, (engine) => (spawned = engine));
  try {
    const first = await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(to, true));
    const engine = spawned as SwappedIn | null;
    if (engine === null) throw new Error(`${to} answered without a spawn: it was not swapped in`);
    const readyAt = await engine.readyLine;
    const memoryWaitMs = engine.adoptedAt !== null && engine.runtimeReadyAt !== null ? Math.max(0, engine.adoptedAt - engine.runtimeReadyAt) : 0;
    return {
      engine,
      run: {
        to,
        swapMs: first.firstTokenAt - last.endedAt,
        beforeSpawnMs: engine.at - last.endedAt,
        aExitAfterSpawnMs: (await aExited) - engine.at,
        loadMs: readyAt - engine.at,
        memoryWaitMs,
        afterReadyMs: first.firstTokenAt - readyAt,
      },
    };
  } finally {
    stopObserving();
  }
}

async function direct(spec: LaunchSpec, llamaServer: string | null): Promise<{ answerMs: number; totalMs: number }> {
  const engine = await startDirectEngine(spec, 'full', llamaServer);
  try {
    await pollUntilHealthy(engine, POLL_MS);
    const times = await timedStream(false, { port: engine.port, apiKey: engine.apiKey }, '/v1/chat/completions', chatBody(spec.modelId, true));
    return { answerMs: times.firstTokenAt - times.startedAt, totalMs: times.firstTokenAt - engine.spawnedAt };
  } finally {
    await engine.stop();
  }
}

async function swapsOn(pair: Pair): Promise<SwapRun[]> {
  const dataDir = await scratchDir('swap-data');
  const configPath = join(dataDir, 'config.yaml');
  // The limit from the catalog's own estimates, as the demo's: each model with its engine's runtime
  // (host RAM is the budget here) fits alone, the two together do not.
  await writeFile(configPath, configText(pair, pair.limit === 'daemon' ? UNLIMITED_BYTES : 1));
  const catalog = await Catalog.open({ configPath, dataDir: await scratchDir('swap-catalog') });
  const catalogPrice = (id: string): number => {
    const estimate = catalog.resolve(id)?.estimate;
    if (estimate == null) throw new Error(`no estimate for ${id}`);
    return footprintAt('full', estimate).deviceBytes + RUNTIME_PRIOR_BYTES.host[pair.engine];
  };
  if (pair.limit === 'catalog') {
    await writeFile(configPath, configText(pair, catalogPrice(CHAT) + Math.floor(catalogPrice(TINY) / 2)));
    await catalog.reload();
  }
  const specs = new Map<string, LaunchSpec>(
    [CHAT, TINY].map((id) => [id, launchSpecFor(id, { resolve: (m) => catalog.resolve(m), cpuOnly: () => true, llamaServerPath: pair.llamaServer, threads: 1 })]),
  );
  const pathOf = (id: string): string => specs.get(id)?.modelPath ?? '';

  const daemonLog: string[] = [];
  const daemon = await startDaemon({ configPath, dataDir, port: 0, threads: 1, log: (subsystem) => createLogger(subsystem, (line) => daemonLog.push(line)) });
  const runs: SwapRun[] = [];
  try {
    if (pair.limit === 'daemon') {
      // The chat side served once: the daemon learns its engine's runtime from that server
      // (runtime-overhead.ts) and reprices both; the limit then holds either alone, as it prices them, and not both.
      await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(CHAT, true));
      const priced = (id: string): number => {
        const model = daemon.admin.snapshot().models.find((m) => m.id === id);
        if (model === undefined) throw new Error(`no model ${id}`);
        return model.estimateBytes.full;
      };
      const limit = Math.max(priced(CHAT), priced(TINY)) + Math.floor(Math.min(priced(CHAT), priced(TINY)) / 2);
      await writeFile(configPath, configText(pair, limit));
      for (let waited = 0; daemon.admin.snapshot().budget.limitBytes !== limit; waited += 50) {
        if (waited > 30_000) throw new Error(`the daemon did not take the limit of ${limit} bytes from its config`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    // Make one resident first; from then on every request for the other is a swap.
    let residentEngine: SwappedIn | null = null;
    const stopObserving = observeEngineOf(pathOf(TINY), (engine) => (residentEngine = engine));
    await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(TINY, true)).finally(stopObserving);
    let resident = TINY;
    for (let i = 0; i < SWAPS + 2; i++) {
      const to = resident === TINY ? CHAT : TINY;
      if (residentEngine === null) throw new Error(`${resident}'s engine process was not seen starting`);
      const swap = await swapTo(daemon, resident, residentEngine, to, pathOf(to));
      resident = to;
      residentEngine = swap.engine;
      const spec = specs.get(to);
      if (spec === undefined) throw new Error(`no spec for ${to}`);
      const reference = await direct(spec, pair.llamaServer);
      if (i >= 2) runs.push({ ...swap.run, directAnswerMs: reference.answerMs, directTotalMs: reference.totalMs });
    }
  } catch (error) {
    console.error(daemonLog.slice(-30).join('\n'));
    throw error;
  } finally {
    await daemon.stop();
  }
  return runs;
}

function printSwaps(pair: Pair, runs: readonly SwapRun[], load: string): void {
  const labelOf = (id: string): string => (id === CHAT ? pair.chat.label : pair.tiny.label);

  const added = (run: SwapRun): number => run.beforeSpawnMs + run.memoryWaitMs + run.afterReadyMs - run.directAnswerMs;
  const crossCheck = (run: SwapRun): number => run.swapMs - run.directTotalMs;
  type Column = [string, (run: SwapRun) => number, boolean, string];
  const columns: Column[] = [
    ['before spawn', (r) => r.beforeSpawnMs, false, "A's last token → B spawned (router, controller pass, supervisor setup; A's eviction too where B starts after it)"],
    ['A exit', (r) => r.aExitAfterSpawnMs, true, "B spawned → A's process exited (positive: B's runtime started while A exited)"],
    ['B load', (r) => r.loadMs, false, 'B spawned → its "model loaded" (its own, with the memory wait)'],
    ['memory wait', (r) => r.memoryWaitMs, false, "inside B load: B's runtime ready → its launch (A's exit and memory still pending); 0: A was gone first"],
    ['after ready', (r) => r.afterReadyMs, false, 'B\'s "model loaded" → its first token through the daemon'],
    ['swap', (r) => r.swapMs, false, "A's last token → B's first token"],
    ['fresh answer', (r) => r.directAnswerMs, false, 'reference: B\'s request → first token on a fresh engine'],
    ['fresh total', (r) => r.directTotalMs, false, 'reference: B spawned → first token on a fresh engine'],
    ['added', added, true, 'before spawn + memory wait + after ready − fresh answer: what the swap adds'],
    ['swap − fresh total', crossCheck, true, 'cross-check: carries the noise of two loads'],
  ];
  console.log(`### ${pair.engine}: swap overhead: a request for the model that is not resident, right after the last token of the one that is (${pair.chat.label} ⇄ ${pair.tiny.label}, ctx 2048, 1 thread, a budget that holds one; ${runs.length} swaps; ${load}; ms)`);
  for (const [name, , , meaning] of columns) console.log(`  ${name}: ${meaning}`);
  const cell = (value: number, isSigned: boolean): string => (isSigned ? signed(value, 1) : fixed(value, 1));
  printTable(
    ['swap to', ...columns.map(([name]) => name)],
    [
      ...runs.map((run) => [labelOf(run.to), ...columns.map(([, pick, isSigned]) => cell(pick(run), isSigned))]),
      ...[CHAT, TINY].map((id) => {
        const some = runs.filter((r) => r.to === id);
        return [`median, to ${labelOf(id)}`, ...columns.map(([, pick, isSigned]) => cell(median(some.map(pick)), isSigned))];
      }),
      ['median, all', ...columns.map(([, pick, isSigned]) => cell(median(runs.map(pick)), isSigned))],
    ],
  );
  console.log();
  const addedMedian = median(runs.map(added));
  console.log(`added by a swap over a fresh engine's start (median): ${signed(addedMedian, 1)} ms (target ≤ ${TARGET_ADDED_MS} ms): ${verdict(addedMedian <= TARGET_ADDED_MS)}`);
  console.log();
}

async function measure(pair: Pair): Promise<void> {
  await waitForQuietIfAsked();
  const before = machineLoad().label;
  const runs = await swapsOn(pair);
  printSwaps(pair, runs, `${before} before, ${machineLoad().label} after`);
}

export async function runSwapBench(): Promise<void> {
  const models = await benchModels();
  const chat = { label: 'demo-chat', path: models.chat.path };
  const tiny = { label: 'demo-tiny', path: models.tiny.path };
  await measure({ engine: 'embedded', llamaServer: null, chat, tiny, limit: 'catalog' });
  const choice = chosenRealShapes().find((m) => !m.shape.includes('moe'));
  if (choice === undefined) return;
  const model = await realShapeModel(choice.shape, choice.quant);
  const binary = llamaServerPath();
  const engines: [Engine, string | null][] = [['embedded', null], ...(binary === null ? [] : [['llama-server', binary] as [Engine, string]])];
  for (const [engine, path] of engines) await measure({ engine, llamaServer: path, chat: { label: model.label, path: model.path }, tiny, limit: 'daemon' });
  if (binary === null) console.log('(no llama-server: set LLMTRAY_LLAMA_SERVER or run npm run build:llama-server; the llama-server rows are not run)');
}
