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
import { benchModels, scratchDir } from './bench-models.js';
import { observeSpawns, pollUntilHealthy, readyLineOf, recordLines, startDirectEngine } from './engine-process.js';
import { chatBody, timedStream } from './http-client.js';
import { fixed, median, printTable, signed, verdict } from './stats.js';

const CHAT = 'swap-chat';
const TINY = 'swap-tiny';
/** Measured swaps; two more run first, unmeasured (one each way), to warm the page cache. */
const SWAPS = 8;
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

function configText(models: { chat: string; tiny: string }, limitBytes: number): string {
  return `modelDirs: []
budget:
  reserve: 0
  limit: ${limitBytes}
engines:
  warmSpare: false
models:
  - id: ${CHAT}
    path: ${JSON.stringify(models.chat)}
    ctx: 2048
    gpuLayers: 0
    engine: embedded
  - id: ${TINY}
    path: ${JSON.stringify(models.tiny)}
    ctx: 2048
    gpuLayers: 0
    engine: embedded
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

async function direct(spec: LaunchSpec): Promise<{ answerMs: number; totalMs: number }> {
  const engine = await startDirectEngine(spec);
  try {
    await pollUntilHealthy(engine, POLL_MS);
    const times = await timedStream(false, { port: engine.port, apiKey: engine.apiKey }, '/v1/chat/completions', chatBody(spec.modelId, true));
    return { answerMs: times.firstTokenAt - times.startedAt, totalMs: times.firstTokenAt - engine.spawnedAt };
  } finally {
    await engine.stop();
  }
}

export async function runSwapBench(): Promise<void> {
  const models = await benchModels();
  const dataDir = await scratchDir('swap-data');
  const configPath = join(dataDir, 'config.yaml');
  // The limit from the catalog's own estimates, as the demo's: each model with its engine's runtime
  // (host RAM is the budget here) fits alone, the two together do not.
  await writeFile(configPath, configText({ chat: models.chat.path, tiny: models.tiny.path }, 1));
  const catalog = await Catalog.open({ configPath, dataDir: await scratchDir('swap-catalog') });
  const priced = (id: string): number => {
    const estimate = catalog.resolve(id)?.estimate;
    if (estimate == null) throw new Error(`no estimate for ${id}`);
    return footprintAt('full', estimate).deviceBytes + RUNTIME_PRIOR_BYTES.host.embedded;
  };
  const limit = priced(CHAT) + Math.floor(priced(TINY) / 2);
  await writeFile(configPath, configText({ chat: models.chat.path, tiny: models.tiny.path }, limit));
  await catalog.reload();
  const specs = new Map<string, LaunchSpec>(
    [CHAT, TINY].map((id) => [id, launchSpecFor(id, { resolve: (m) => catalog.resolve(m), cpuOnly: () => true, llamaServerPath: null, threads: 1 })]),
  );
  const pathOf = (id: string): string => specs.get(id)?.modelPath ?? '';

  const daemonLog: string[] = [];
  const daemon = await startDaemon({ configPath, dataDir, port: 0, threads: 1, log: (subsystem) => createLogger(subsystem, (line) => daemonLog.push(line)) });
  const runs: SwapRun[] = [];
  try {
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
      const reference = await direct(spec);
      if (i >= 2) runs.push({ ...swap.run, directAnswerMs: reference.answerMs, directTotalMs: reference.totalMs });
    }
  } catch (error) {
    console.error(daemonLog.slice(-30).join('\n'));
    throw error;
  } finally {
    await daemon.stop();
  }

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
  console.log(`swap overhead: a request for the model that is not resident, right after the last token of the one that is (demo-chat ⇄ demo-tiny, ctx 2048, 1 thread, a budget that holds one; ms)`);
  for (const [name, , , meaning] of columns) console.log(`  ${name}: ${meaning}`);
  const cell = (value: number, isSigned: boolean): string => (isSigned ? signed(value, 1) : fixed(value, 1));
  printTable(
    ['swap to', ...columns.map(([name]) => name)],
    [
      ...runs.map((run) => [run.to === CHAT ? 'demo-chat' : 'demo-tiny', ...columns.map(([, pick, isSigned]) => cell(pick(run), isSigned))]),
      ...[CHAT, TINY].map((id) => {
        const some = runs.filter((r) => r.to === id);
        return [`median, to ${id === CHAT ? 'demo-chat' : 'demo-tiny'}`, ...columns.map(([, pick, isSigned]) => cell(median(some.map(pick)), isSigned))];
      }),
      ['median, all', ...columns.map(([, pick, isSigned]) => cell(median(runs.map(pick)), isSigned))],
    ],
  );
  console.log();
  const addedMedian = median(runs.map(added));
  console.log(`added by a swap over a fresh engine's start (median): ${signed(addedMedian, 1)} ms (target ≤ ${TARGET_ADDED_MS} ms): ${verdict(addedMedian <= TARGET_ADDED_MS)}`);
}
