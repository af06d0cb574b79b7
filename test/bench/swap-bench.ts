// What a request-driven swap adds: two models that cannot share the budget, a request for the
// one that is not resident right after the last token of the one that is, until its first token.
//
// The daemon runs in this process (startDaemon, demo-chat and demo-tiny, each alone within a
// budget limit that cannot hold both, the embedded engine, 1 thread, no warm spare: this measures
// the swap's own machinery, which a spare would hide behind a faster start). Each swap: a
// streaming 8-token chat to the resident model A, then, the moment its stream ends (A's last
// token), a streaming one-token chat to B. Between the two: the router's wait, a controller pass,
// A's eviction — SIGTERM, its exit, and the wait for its memory (on the CPU, the process's exit;
// on a GPU, the driver's figure) — and B's spawn, load, readiness and first token.
// B's engine is observed as in the activation benchmark (the child_process diagnostics channel:
// the moment before its spawn, the arrival of its "model loaded" line), which splits the swap into
//   A's last token → B spawned (router, pass, eviction and memory wait, supervisor setup)
//   + B's own load (spawn → "model loaded": not the swap's cost, and the noisiest part)
//   + B's "model loaded" → first token (readiness detection, forwarding, the first answer).
// The reference is B on a fresh engine started directly with the daemon's own argv: its /health
// polled every millisecond, then the same one-token request; its request → first token is the
// part of "after" that is the engine's. added = before spawn + after ready − reference answer.
// The plain difference of B's spawn → first token on the fresh engine and the whole swap is
// printed too, as a cross-check that carries the load noise. Swaps alternate direction (chat →
// tiny, tiny → chat), each with its own reference run right after it.
// Target: at most 20 ms added (issue 14).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Catalog } from '../../core/catalog/catalog.js';
import { startDaemon, type RunningDaemon } from '../../core/daemon.js';
import { launchSpecFor } from '../../core/daemon/launch-specs.js';
import { createLogger } from '../../core/daemon/logger.js';
import type { LaunchSpec } from '../../core/engine/launch-spec.js';
import { RUNTIME_PRIOR_BYTES } from '../../core/engine/runtime-overhead.js';
import { footprintAt } from '../../core/policy/levels.js';
import { benchModels, scratchDir } from './bench-models.js';
import { observeSpawns, pollUntilHealthy, readyLineOf, startDirectEngine } from './engine-process.js';
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
  /** B spawned → its "model loaded". */
  loadMs: number;
  /** B's "model loaded" → its first token through the daemon. */
  afterReadyMs: number;
  /** Reference: B's request → first token on a fresh engine. */
  directAnswerMs: number;
  /** Reference: B spawned → first token on a fresh engine. */
  directTotalMs: number;
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

async function swapTo(daemon: RunningDaemon, from: string, to: string, toPath: string): Promise<Omit<SwapRun, 'directAnswerMs' | 'directTotalMs'>> {
  // A, resident: its stream's end is its last token.
  const last = await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(from, true, 8));
  let spawned: { at: number; readyLine: Promise<number> } | null = null;
  const stopObserving = observeSpawns((child, at) => {
    if (child.spawnargs.includes(toPath)) spawned ??= { at, readyLine: readyLineOf(child) };
  });
  try {
    const first = await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(to, true));
    const engine = spawned as { at: number; readyLine: Promise<number> } | null;
    if (engine === null) throw new Error(`${to} answered without a spawn: it was not swapped in`);
    const readyAt = await engine.readyLine;
    return {
      to,
      swapMs: first.firstTokenAt - last.endedAt,
      beforeSpawnMs: engine.at - last.endedAt,
      loadMs: readyAt - engine.at,
      afterReadyMs: first.firstTokenAt - readyAt,
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
    await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(TINY, true));
    let resident = TINY;
    for (let i = 0; i < SWAPS + 2; i++) {
      const to = resident === TINY ? CHAT : TINY;
      const swap = await swapTo(daemon, resident, to, pathOf(to));
      resident = to;
      const spec = specs.get(to);
      if (spec === undefined) throw new Error(`no spec for ${to}`);
      const reference = await direct(spec);
      if (i >= 2) runs.push({ ...swap, directAnswerMs: reference.answerMs, directTotalMs: reference.totalMs });
    }
  } catch (error) {
    console.error(daemonLog.slice(-30).join('\n'));
    throw error;
  } finally {
    await daemon.stop();
  }

  const added = (run: SwapRun): number => run.beforeSpawnMs + run.afterReadyMs - run.directAnswerMs;
  const crossCheck = (run: SwapRun): number => run.swapMs - run.directTotalMs;
  type Column = [string, (run: SwapRun) => number, boolean, string];
  const columns: Column[] = [
    ['before spawn', (r) => r.beforeSpawnMs, false, "A's last token → B spawned (router, controller pass, A's eviction and memory wait, supervisor setup)"],
    ['B load', (r) => r.loadMs, false, 'B spawned → its "model loaded" (its own)'],
    ['after ready', (r) => r.afterReadyMs, false, 'B\'s "model loaded" → its first token through the daemon'],
    ['swap', (r) => r.swapMs, false, "A's last token → B's first token"],
    ['fresh answer', (r) => r.directAnswerMs, false, 'reference: B\'s request → first token on a fresh engine'],
    ['fresh total', (r) => r.directTotalMs, false, 'reference: B spawned → first token on a fresh engine'],
    ['added', added, true, 'before spawn + after ready − fresh answer: what the swap adds'],
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
