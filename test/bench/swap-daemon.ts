// The daemon's serving core — the real ModelActivity, DaemonDesiredState, Controller,
// Supervisor, gateway and router, wired as startDaemon wires them — over models that cannot
// share the memory budget, with test/support/fake-engine.mjs as every model's engine.
//
// Why not startDaemon itself: it runs the engine that the catalog names (the embedded engine
// here, ~1 s per cold start on this machine), and a queueing benchmark makes hundreds of swaps
// per thousand requests, so that engine would make one run last hours. The fake engine is a
// real child process that the real supervisor spawns, keys, health-checks, claims and stops;
// only its load time and its answer time are set (`--fake-ready-after`, `--fake-answer-after`).
// What is left out of startDaemon — the catalog's files and watcher, the GPU probe, the admin
// API and the measurement timer — decides nothing about which request goes when: the catalog
// is replaced by fixed CatalogModel entries and the GPU probe by a fixed budget sample.
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import type { CatalogModel } from '../../core/catalog/catalog.js';
import { realClock } from '../../core/common/clock.js';
import { Controller } from '../../core/controller/controller.js';
import { ModelActivity } from '../../core/demand/activity.js';
import { DaemonDesiredState } from '../../core/demand/desired-state.js';
import { createGateway } from '../../core/demand/gateway.js';
import { ModelTurns } from '../../core/demand/turns.js';
import { launchSpecFor } from '../../core/daemon/launch-specs.js';
import { createLogger } from '../../core/daemon/logger.js';
import { LaunchError } from '../../core/engine/failure-classifier.js';
import { EMBEDDED_CAPABILITIES } from '../../core/engine/launch-spec.js';
import { Supervisor } from '../../core/engine/supervisor/supervisor.js';
import { oneGpuBudget } from './one-gpu-budget.js';
import { footprintAt, type FootprintEstimate } from '../../core/policy/levels.js';
import { createRouter } from '../../core/router/router.js';

/** test/support is not compiled to dist/: the engine script is read from the sources beside it. */
const FAKE_ENGINE = fileURLToPath(new URL('../../../test/support/fake-engine.mjs', import.meta.url));

const GIB = 1024 ** 3;
/** Every model weighs the same: 4 GiB of weights, a 4096-token context. */
const ESTIMATE: FootprintEstimate = { weightsBytes: 4 * GIB, kvBytesPerToken: 128 * 1024, contextTokens: 4096, computeBytes: 0 };

export interface SwapDaemonOptions {
  /** The models, each of the same size; the budget holds one and a half of them, so one at a time. */
  modelIds: readonly string[];
  /** The gateway's turn (config `swapTurn`), ms; 0 is first come, first served across models. */
  turnMs: number;
  /** How long each engine stays loading (503 on /health) after it starts, ms. */
  loadMs: number;
  /** How long each engine takes to answer a chat request, ms. */
  answerMs: number;
  /** The supervisor's data dir (engines.json, key files); one per daemon. */
  dataDir: string;
}

export interface SwapCounts {
  /** Engine processes started: each one a launch of a model that was not resident. */
  launches: number;
  /** Engines that failed (ServerExited); should stay 0. */
  failures: number;
  /** Spawn → ready of every launch that became ready, ms: Node's start, the load, the readiness check. */
  loadMs: number[];
}

export interface SwapDaemon {
  port: number;
  counts(): SwapCounts;
  /** Warnings and errors the controller and the supervisor logged (a failed pass, a failed launch). */
  problems(): readonly string[];
  /** Stops every engine and waits for them, then the listener. */
  stop(): Promise<void>;
}

function modelOf(id: string, options: SwapDaemonOptions): CatalogModel {
  return {
    id,
    aliases: [],
    path: `/models/${id}.gguf`,
    sizeBytes: ESTIMATE.weightsBytes,
    ctx: ESTIMATE.contextTokens,
    limits: {},
    priority: 0,
    pinnedByDefault: false,
    gpuLayers: 'all',
    idleTtlMs: 600_000,
    hangLimitMs: 60_000,
    engine: 'embedded',
    args: ['--fake-ready-after', String(options.loadMs), '--fake-answer-after', String(options.answerMs)],
    engineArgs: {},
    env: {},
    estimate: ESTIMATE,
    metadataError: null,
    definitionHash: `bench-${id}`,
    source: 'config',
    mixedSplit: false,
    repack: true,
    cpuMatrixBytes: null,
  };
}

export async function startSwapDaemon(options: SwapDaemonOptions): Promise<SwapDaemon> {
  if (!existsSync(FAKE_ENGINE)) throw new Error(`${FAKE_ENGINE} is missing: the benchmark runs from a checkout`);
  const models = options.modelIds.map((id) => modelOf(id, options));
  const catalog = {
    models: () => models,
    resolve: (name: string) => models.find((m) => m.id === name),
  };
  // One GPU that holds one and a half models: any two together do not fit, so a switch is a swap.
  const budgetBytes = Math.floor(1.5 * footprintAt('full', ESTIMATE).deviceBytes);
  const budget = oneGpuBudget(budgetBytes, 64 * GIB, Date.now());

  const problems: string[] = [];
  const log = (subsystem: string) =>
    createLogger(subsystem, (line) => {
      if (/^\S+ [WE] /.test(line)) problems.push(line);
    });

  const activity = new ModelActivity(realClock);
  const supervisor = await Supervisor.start({
    dataDir: options.dataDir,
    specFor: (modelId) => launchSpecFor(modelId, { resolve: catalog.resolve, cpuOnly: () => false, llamaServerPath: null, threads: 1 }),
    engineCommand: () => ({ command: process.execPath, args: [FAKE_ENGINE], capabilities: EMBEDDED_CAPABILITIES }),
    footprint: (_modelId, level) => footprintAt(level, ESTIMATE).deviceBytes,
  });
  const counts: SwapCounts = { launches: 0, failures: 0, loadMs: [] };
  const spawnedAt = new Map<string, number>();
  supervisor.onServerEvent((event) => {
    if (event.type === 'ServerSpawned') {
      counts.launches++;
      spawnedAt.set(event.modelId, event.at);
    }
    if (event.type === 'ServerReady') counts.loadMs.push(event.at - (spawnedAt.get(event.modelId) ?? event.at));
    if (event.type === 'ServerExited') {
      counts.failures++;
      problems.push(`${event.modelId}'s engine failed (${event.kind}): ${event.reason}`);
    }
  });

  const turns = new ModelTurns({
    rivalsOf: (id) => controller.yieldsTo(id),
    passSoon: () => controller.trigger(),
    activity,
    inFlight: (id) => supervisor.inFlight(id),
    turnMs: options.turnMs,
    clock: realClock,
  });
  const desired = new DaemonDesiredState({
    models: catalog.models,
    isPinned: () => false,
    heldForTurn: (id) => turns.holds(id),
    activity,
    inFlight: (id) => supervisor.inFlight(id),
    budget: async () => budget,
  });
  const controller = new Controller({
    provider: desired,
    server: supervisor,
    classify: (error) => (error instanceof LaunchError ? error.kind : 'crash'),
    clock: realClock,
    log: log('controller'),
  });
  const router = createRouter({
    gateway: createGateway({ catalog, controller, supervisor, activity, startedAt: Date.now(), turns }),
  });
  const listening = await router.listen({ port: 0 });
  const abort = new AbortController();
  const running = controller.run(abort.signal);

  return {
    port: listening.port,
    counts: () => ({ ...counts, loadMs: [...counts.loadMs] }),
    problems: () => problems,
    async stop() {
      abort.abort();
      turns.close();
      await running;
      router.close();
      await listening.close();
      await supervisor.close();
    },
  };
}
