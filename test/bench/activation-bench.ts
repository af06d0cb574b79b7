// What on-demand loading adds to a cold request: the whole daemon's request → first token for a
// model that is not resident, minus what the engine itself needs to start and answer.
//
// The daemon runs in this process (startDaemon, a temp data dir, one tiny model, port 0) and is
// sent a streaming one-token request for the model while it is not loaded. The engine it spawns
// is observed through Node's child_process diagnostics channel: the moment just before the
// spawn, and the moment its "model loaded" line arrives (the engine prints it right after its
// /health turns 200). That splits the cold request into
//   before the spawn (router, controller pass, supervisor setup)
//   + the engine's own load (spawn → "model loaded": not the daemon's cost)
//   + after it (readiness detection, forwarding, generating the first token).
// The reference spawns the very same engine command — the daemon's own launchSpecFor over a
// catalog of the same config, then argvFor — polls GET /health with the supervisor's
// checkHealth every millisecond until 200, and sends the same request: its request → first
// token is what a fresh engine needs to answer, the part of "after" that is not the daemon's.
//   added = before + after − reference's request → first token
// Each repetition pairs one daemon run with one reference run (daemon first in even ones) and
// unloads the model through the admin API between. The engine's own load time, which varies by
// hundreds of milliseconds when the machine is busy, is taken out within each run instead of
// between runs; the plain difference of the two end-to-end times is printed as a cross-check.
// Target: at most 15 ms added; llama.cpp's router mode adds 15–20 ms.
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { ADMIN_TOKEN_FILE } from '../../core/admin/admin-token.js';
import { Catalog } from '../../core/catalog/catalog.js';
import { startDaemon, type RunningDaemon } from '../../core/daemon.js';
import { launchSpecFor } from '../../core/daemon/launch-specs.js';
import { createLogger } from '../../core/daemon/logger.js';
import type { LaunchSpec } from '../../core/engine/launch-spec.js';
import { isRunning } from '../../core/engine/supervisor/process-tree.js';
import { benchModels, scratchDir } from './bench-models.js';
import { observeSpawns, pollUntilHealthy, readyLineOf, startDirectEngine } from './engine-process.js';
import { chatBody, timedStream } from './http-client.js';
import { fixed, median, printTable, signed, verdict } from './stats.js';

const MODEL_ID = 'bench-tiny';
const CHAT_PATH = '/v1/chat/completions';
/** Measured repetitions; one more runs first, unmeasured, to warm the daemon and the page cache. */
const REPETITIONS = 9;
const TARGET_ADDED_MS = 15;
const POLL_MS = 1;
const UNLOAD_TIMEOUT_MS = 20_000;

interface DaemonRun {
  /** Cold request sent → first token. */
  totalMs: number;
  /** Request sent → the engine's spawn. */
  beforeSpawnMs: number;
  /** Spawn → "model loaded": the engine's own. */
  engineMs: number;
  /** "model loaded" → first token. */
  afterReadyMs: number;
}

interface DirectRun {
  /** Spawn → first /health 200 (1 ms poll). */
  readyMs: number;
  /** Spawn → the request → first token. */
  totalMs: number;
  /** Request sent to the fresh engine → first token. */
  answerMs: number;
}

function configText(modelPath: string): string {
  // gpuLayers 0 and the embedded engine: the same engine on every machine, with or without a GPU.
  // No warm spare: this measures the spawn path (a spare's adoption is cold-start-bench's).
  return `modelDirs: []
budget:
  reserve: 0
engines:
  warmSpare: false
models:
  - id: ${MODEL_ID}
    path: ${JSON.stringify(modelPath)}
    ctx: 2048
    gpuLayers: 0
    engine: embedded
`;
}

async function daemonCold(daemon: RunningDaemon, modelPath: string): Promise<DaemonRun> {
  let spawned: { at: number; readyLine: Promise<number> } | null = null;
  // The daemon starts other programs too (the GPU probe's lspci and nvidia-smi): pick the engine.
  const stopObserving = observeSpawns((child, at) => {
    if (child.spawnargs.includes(modelPath)) spawned ??= { at, readyLine: readyLineOf(child) };
  });
  try {
    const times = await timedStream(false, { port: daemon.port }, CHAT_PATH, chatBody(MODEL_ID, true));
    const engine = spawned as { at: number; readyLine: Promise<number> } | null;
    if (engine === null) throw new Error(`the daemon answered a request for ${MODEL_ID} without spawning an engine: it was not cold`);
    const readyAt = await engine.readyLine;
    return {
      totalMs: times.firstTokenAt - times.startedAt,
      beforeSpawnMs: engine.at - times.startedAt,
      engineMs: readyAt - engine.at,
      afterReadyMs: times.firstTokenAt - readyAt,
    };
  } finally {
    stopObserving();
  }
}

function postUnload(daemon: RunningDaemon, token: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: daemon.port, method: 'POST', path: `/api/models/${MODEL_ID}/unload`, headers: { authorization: `Bearer ${token}` }, agent: false },
      (res) => {
        res.resume();
        res.once('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`unload answered ${res.statusCode}`))));
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** Unloads the model through the admin API and waits until its engine process is gone. */
async function unload(daemon: RunningDaemon, token: string): Promise<void> {
  const pid = daemon.admin.snapshot().models.find((m) => m.id === MODEL_ID)?.upstream?.pid ?? null;
  await postUnload(daemon, token);
  const deadline = performance.now() + UNLOAD_TIMEOUT_MS;
  for (;;) {
    const model = daemon.admin.snapshot().models.find((m) => m.id === MODEL_ID);
    const gone = pid === null || !(await isRunning(pid));
    if (model?.status.state === 'idle' && model.upstream === null && gone) return;
    if (performance.now() > deadline) throw new Error(`${MODEL_ID} was still ${model?.status.state ?? 'unknown'} ${UNLOAD_TIMEOUT_MS} ms after unload`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function direct(spec: LaunchSpec): Promise<DirectRun> {
  const engine = await startDirectEngine(spec);
  try {
    const readyAt = await pollUntilHealthy(engine, POLL_MS);
    const times = await timedStream(false, { port: engine.port, apiKey: engine.apiKey }, CHAT_PATH, chatBody(MODEL_ID, true));
    return { readyMs: readyAt - engine.spawnedAt, totalMs: times.firstTokenAt - engine.spawnedAt, answerMs: times.firstTokenAt - times.startedAt };
  } finally {
    await engine.stop();
  }
}

export async function runActivationBench(): Promise<void> {
  const models = await benchModels();
  const dataDir = await scratchDir('activation-data');
  const configPath = join(dataDir, 'config.yaml');
  await writeFile(configPath, configText(models.tiny.path));
  const catalog = await Catalog.open({ configPath, dataDir: await scratchDir('activation-catalog') });
  const spec = launchSpecFor(MODEL_ID, { resolve: (id) => catalog.resolve(id), cpuOnly: () => true, llamaServerPath: null, threads: 1 });

  const daemonLog: string[] = [];
  const daemon = await startDaemon({ configPath, dataDir, port: 0, threads: 1, log: (subsystem) => createLogger(subsystem, (line) => daemonLog.push(line)) });
  const token = (await readFile(join(dataDir, ADMIN_TOKEN_FILE), 'utf8')).trim();
  const runs: { daemon: DaemonRun; direct: DirectRun }[] = [];
  try {
    for (let i = 0; i <= REPETITIONS; i++) {
      let daemonRun: DaemonRun | null = null;
      let directRun: DirectRun | null = null;
      const viaDaemon = async (): Promise<void> => {
        daemonRun = await daemonCold(daemon, spec.modelPath);
        await unload(daemon, token);
      };
      const viaDirect = async (): Promise<void> => {
        directRun = await direct(spec);
      };
      for (const step of i % 2 === 0 ? [viaDaemon, viaDirect] : [viaDirect, viaDaemon]) await step();
      if (i > 0 && daemonRun !== null && directRun !== null) runs.push({ daemon: daemonRun, direct: directRun });
    }
  } catch (error) {
    console.error(daemonLog.slice(-20).join('\n'));
    throw error;
  } finally {
    await daemon.stop();
  }

  const added = (run: { daemon: DaemonRun; direct: DirectRun }): number => run.daemon.beforeSpawnMs + run.daemon.afterReadyMs - run.direct.answerMs;
  const endToEnd = (run: { daemon: DaemonRun; direct: DirectRun }): number => run.daemon.totalMs - run.direct.totalMs;
  type Pick = (run: { daemon: DaemonRun; direct: DirectRun }) => number;
  const columns: [string, Pick, string][] = [
    ['before spawn', (run) => run.daemon.beforeSpawnMs, 'daemon: request sent → engine spawned (router, controller pass, supervisor setup)'],
    ['engine load', (run) => run.daemon.engineMs, 'daemon: spawn → "model loaded" (the engine\'s own)'],
    ['after ready', (run) => run.daemon.afterReadyMs, 'daemon: "model loaded" → first token (readiness detection, forwarding, first token)'],
    ['daemon total', (run) => run.daemon.totalMs, 'daemon: request sent → first token'],
    ['direct ready', (run) => run.direct.readyMs, 'direct: spawn → /health 200 (1 ms poll)'],
    ['direct answer', (run) => run.direct.answerMs, 'direct: request to the fresh engine → first token'],
    ['direct total', (run) => run.direct.totalMs, 'direct: spawn → first token'],
    ['added', added, 'before spawn + after ready − direct answer: the daemon\'s own cost'],
    ['total − total', endToEnd, 'cross-check: daemon total − direct total (carries the engine-load noise)'],
  ];
  console.log(`activation overhead: a cold request → first token through the whole daemon, against the engine's own load and answer (${MODEL_ID} = demo-tiny, ctx 2048, 1 thread; ms)`);
  for (const [name, , meaning] of columns) console.log(`  ${name}: ${meaning}`);
  printTable(
    ['run', ...columns.map(([name]) => name)],
    [
      ...runs.map((run, i) => [String(i + 1), ...columns.map(([, pick]) => (pick === added || pick === endToEnd ? signed(pick(run), 1) : fixed(pick(run), 1)))]),
      ['median', ...columns.map(([, pick]) => (pick === added || pick === endToEnd ? signed(median(runs.map(pick)), 1) : fixed(median(runs.map(pick)), 1)))],
    ],
  );
  console.log();
  const addedMedian = median(runs.map(added));
  console.log(`added by the daemon to a cold request (median): ${signed(addedMedian, 1)} ms (target ≤ ${TARGET_ADDED_MS} ms): ${verdict(addedMedian <= TARGET_ADDED_MS)}`);
}
