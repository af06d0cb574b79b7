// The supervisor: starts, watches and stops model server processes for the controller.
//
// One owner per model: every command for a model (launch, evict) runs through that model's
// queue, one at a time, and each command re-reads the owner's state when its turn comes. The
// alternative — callers reading state() and then deciding — is the race that made llama-swap
// start two servers for one cold model. Two launches of the same model at the same level join
// one load; a launch at another level, or an eviction, waits its turn (an eviction first
// cancels a load in progress, so it does not wait out a long load it is about to undo).
//
// The owner is also the one that reports each server's life (core/contracts/server-events.ts):
// spawned, ready, exited with the kind and llama.cpp's reason, stopped on request. Each
// transition is reported once, from the one place that sees it, so a failure climbs the
// recovery ladder once however many others look. Requests are claimed here too
// (server-claims.ts): an eviction re-checks the claims at the moment it stops a server, and a
// server with claims that makes no progress is found hung (hang-watch.ts) and killed.
import { spawn as nodeSpawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { ServerEvent, ServerEventListener } from '../../contracts/server-events.js';
import type { LogTail } from '../../contracts/log-lines.js';
import { DEFAULT_HANG_LIMIT_MS } from '../hang-limit.js';
import type { RuntimeOverhead } from '../runtime-overhead.js';
import { classifyFailure, classifySetupFailure, LaunchError, type FailureClassification } from '../failure-classifier.js';
import { argvFor, readsApiKeyFile, type LaunchSpec } from '../launch-spec.js';
import { placementEnv } from '../placement-args.js';
import type { EngineIdentityOf } from '../../contracts/gpu-identity.js';
import { apiKeyDir, clearApiKeyFiles, newApiKeyFilePath, removeApiKeyFile, writeApiKeyFile } from './api-key-file.js';
import { dataDirTrouble } from './data-dir-trouble.js';
import { realClock, type Clock } from '../../common/clock.js';
import type { EngineCommand } from './engine-command.js';
import { commandLineHash, EngineRegistry, type OrphanSweep } from './engine-registry.js';
import { freeLoopbackPort, PORT_IN_USE } from './free-port.js';
import type { BufferSize } from './memory-measure.js';
import { LineRing } from './log-ring.js';
import { waitForMemoryBack } from './memory-wait.js';
import { isRunning, readCommandLine, signalTree, terminateTree, treeResidentBytes } from './process-tree.js';
import { waitUntilReady } from './readiness.js';
import { probeServedApis } from './served-apis.js';
import { lookAtEngine } from './engine-look.js';
import { HangWatch } from './hang-watch.js';
import type { Claim } from './server-claims.js';
import { IllegalTransition, readyAtOf, ServerProcess, type EndedBy, type ServerPhase, type SpawnFunction } from './server-process.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';
import { WarmSpare, type AdoptedSpare, type SpareStatus } from './warm-spare.js';
import { Emitter } from '../../common/emitter.js';

export interface SupervisorDeps {
  /** The launch spec of a model, read at each launch; throwing makes the launch fail as a crash with that message. */
  specFor(modelId: string): LaunchSpec | Promise<LaunchSpec>;
  /** Which program runs a spec (see defaultEngineCommand). */
  engineCommand(spec: LaunchSpec): EngineCommand | Promise<EngineCommand>;
  /** The estimated device footprint of a model at a level, bytes (for measure() and the memory wait). */
  footprint(modelId: string, level: LaunchLevel): number;
  /** Where engines.json (the record of running servers) and the engines' API key files live. */
  dataDir: string;
  /** child_process.spawn by default. */
  spawn?: SpawnFunction;
  clock?: Clock;
  /** Free device memory now, bytes. Absent: evictions do not wait for memory to come back. */
  memoryProbe?: () => Promise<number>;
  /**
   * Device bytes per pid from the driver (core/gpu's queryComputeApps, summed per pid).
   * Absent: llama.cpp's buffer lines and RSS only.
   */
  gpuProcessMemory?: () => Promise<ReadonlyMap<number, number>>;
  /** How long a load may take; default 30 s plus 15 s per GiB of spec.estimateBytes. */
  loadTimeoutMs?: (spec: LaunchSpec) => number;
  /** How long a server with requests in flight may make no progress before it is hung, ms; default the spec's, else 60 s. */
  hangLimitMs?: (spec: LaunchSpec) => number;
  /**
   * True while host RAM is the device (no GPU): then what a server holds is its process tree's
   * RSS, and the first server of each engine kind teaches `runtime` that engine's own cost there
   * (on a GPU, the driver's per-process figure teaches it). Absent: never.
   */
  hostIsDevice?: () => boolean;
  /** Where the engines' runtime figures are learned (see runtime-overhead.ts). */
  runtime?: RuntimeOverhead;
  /**
   * Of footprint(modelId, level), the compute buffers (its draft's included): reserved at load,
   * but in host RAM not resident until whole micro-batches run through them, so not in a ready
   * server's RSS. Absent: 0.
   */
  computeBytes?: (modelId: string) => number;
  /** SIGTERM → SIGKILL grace, ms; default 5000. */
  stopGraceMs?: number;
  /** Lines of log kept per model; default 2000. */
  logLines?: number;
  /** The eviction memory wait; defaults: 75 % of the footprint, at most 5 s, probing every 100 ms. */
  memoryWait?: { fraction?: number; maxMs?: number; pollMs?: number };
  platform?: NodeJS.Platform;
  /**
   * The warm spare's program and environment (warm-spare.ts); whether one is kept is
   * setSpareWanted's. Absent: never one.
   */
  warmSpare?: { command(): Promise<EngineCommand>; env: Record<string, string>; note?(line: string): void; launchHoldMs?: number };
  /** Hears that the spare started, became ready, was adopted or ended. */
  onSpareChange?: () => void;
  /**
   * What the driver calls the plan's GPU `index` (from the live budget), read at each launch, so
   * that the engine's CUDA_VISIBLE_DEVICES, --device and --main-gpu name the card the plan
   * priced. Absent: the plan's index stands for the driver's number.
   */
  gpuIdentity?: EngineIdentityOf;
}

/** Where the router sends a ready model's requests. The key goes in `Authorization: Bearer`. */
export interface Endpoint {
  port: number;
  apiKey: string;
  pid: number;
  level: LaunchLevel;
  startedAt: number;
  readyAt: number;
}

export interface ServerStatus {
  modelId: string;
  phase: ServerPhase;
  level: LaunchLevel;
  pid: number;
  port: number;
  startedAt: number;
  readyAt: number | null;
  /** 0…1 while loading, where the engine reports it in its 503 body; null otherwise. */
  loadProgress: number | null;
  /**
   * How long this model's last load that became ready took (spawn to ready, at whatever level),
   * ms; null before its first. For estimating a load's progress where the engine reports none.
   */
  lastLoadMs: number | null;
  /** How it ended, once it has. */
  exit: { exitCode: number | null; signal: string | null } | null;
}

/** Hears each line added to a model's server log, with its position in that log (see log-ring.ts). Runs synchronously; must not throw. */
export type LogListener = (modelId: string, line: string, position: number) => void;

/**
 * Hears that a loading server's own load fraction changed: `fraction` is what status().loadProgress
 * says from now on (0…1, or null where the engine's 503 body carries none). Runs synchronously;
 * must not throw.
 */
export type LoadProgressListener = (modelId: string, fraction: number | null) => void;

/** A running server's memory: a device figure (driver or llama.cpp's buffers), or host RSS. */
export interface Measurement {
  bytes: number;
  where: 'device' | 'host';
}

/** What an eviction did: stopped the server (or there was none), or left it because a request had claimed it. */
export type EvictOutcome = 'stopped' | 'claimed';

const DEFAULT_GRACE_MS = 5_000;
const DEFAULT_LOG_LINES = 2_000;
const LOG_TAIL_LINES = 40;
const PORT_ATTEMPTS = 3;
const GIB = 1024 ** 3;

/** 30 s to start a process and map a small model, plus 15 s per GiB to read a big one from a slow disk. */
export function defaultLoadTimeoutMs(spec: LaunchSpec): number {
  return 30_000 + Math.ceil((spec.estimateBytes ?? 0) / GIB) * 15_000;
}

interface PendingLaunch {
  level: LaunchLevel;
  promise: Promise<void>;
  cancel: AbortController;
  /** Callers still waiting; when the last one gives up, the load is cancelled. */
  waiters: number;
}

class ModelOwner {
  server: ServerProcess | null = null;
  /** Launches queued or running, oldest first; a new launch joins the one at its level. */
  pending: PendingLaunch[] = [];
  /** Spawn to ready of the last load that became ready, ms. */
  lastLoadMs: number | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly modelId: string,
    readonly log: LineRing,
  ) {}

  /** Runs `command` after every command queued before it. */
  run<T>(command: () => Promise<T>): Promise<T> {
    const next = this.queue.then(command, command);
    this.queue = next.catch(() => undefined);
    return next;
  }
}

/** Thrown into a load that a caller or an eviction cancelled (an AbortError, not a LaunchError). */
function cancelled(reason: string): DOMException {
  return new DOMException(reason, 'AbortError');
}

export class Supervisor {
  private readonly owners = new Map<string, ModelOwner>();
  private readonly events = new Emitter<Parameters<ServerEventListener>>("the supervisor's lifecycle events");
  private readonly logLines = new Emitter<Parameters<LogListener>>("the supervisor's log lines");
  private readonly loadProgress = new Emitter<Parameters<LoadProgressListener>>("the supervisor's load progress");
  private readonly registry: EngineRegistry;
  private readonly spawn: SpawnFunction;
  private readonly clock: Clock;
  private readonly platform: NodeJS.Platform;
  private readonly graceMs: number;
  private readonly spare: WarmSpare | null;
  private readonly killAllOnExit = (): void => {
    for (const owner of this.owners.values()) {
      const server = owner.server;
      if (server?.running) signalTree(server.pid, [], 'SIGKILL');
    }
    this.spare?.killNow();
  };

  private sweep: OrphanSweep = { ended: [], leftAlone: [] };

  /** The servers an earlier run left behind, found when this one started. */
  get orphans(): OrphanSweep {
    return this.sweep;
  }

  private constructor(private readonly deps: SupervisorDeps) {
    this.registry = new EngineRegistry(join(deps.dataDir, 'engines.json'));
    this.spawn = deps.spawn ?? (nodeSpawn as SpawnFunction);
    this.clock = deps.clock ?? realClock;
    this.platform = deps.platform ?? process.platform;
    this.graceMs = deps.stopGraceMs ?? DEFAULT_GRACE_MS;
    const spare = deps.warmSpare;
    this.spare =
      spare === undefined
        ? null
        : new WarmSpare({
            spawn: this.spawn,
            command: () => spare.command(),
            env: spare.env,
            cwd: deps.dataDir,
            registry: this.registry,
            owner: deps.dataDir,
            clock: this.clock,
            platform: this.platform,
            graceMs: this.graceMs,
            busy: () =>
              [...this.owners.values()].some((owner) => owner.pending.length > 0 || owner.server?.phase === 'loading' || (owner.server?.running === true && owner.server.claims.count > 0)),
            changed: () => deps.onSpareChange?.(),
            note: (line) => spare.note?.(line),
            ...(spare.launchHoldMs === undefined ? {} : { launchHoldMs: spare.launchHoldMs }),
          });
  }

  /**
   * Makes a supervisor: ends the servers a crashed earlier run left (recorded in
   * dataDir/engines.json, matched by pid and command line) and removes their API key files,
   * and arranges that this process's own servers are SIGKILLed if it exits without close().
   * Blocks until the orphans are gone.
   */
  static async start(deps: SupervisorDeps): Promise<Supervisor> {
    const supervisor = new Supervisor(deps);
    supervisor.sweep = await supervisor.registry.sweepOrphans({
      isRunning: (pid) => isRunning(pid, supervisor.platform),
      readCommandLine: (pid) => readCommandLine(pid, supervisor.platform),
      terminate: (pid) => terminateTree(pid, { graceMs: supervisor.graceMs, platform: supervisor.platform }),
    });
    await clearApiKeyFiles(apiKeyDir(deps.dataDir));
    process.on('exit', supervisor.killAllOnExit);
    return supervisor;
  }

  /**
   * Starts the model's server at `level` and resolves when GET /health answers 200.
   * Idempotent: a model already ready at that level resolves at once; concurrent launches at
   * the same level share one process. A server running at another level is stopped first.
   * Rejects with a LaunchError (kind, reason from llama.cpp's log) when the server exits, fails
   * to start, or is not ready within the load timeout; with an AbortError when `signal` aborts
   * (the load is cancelled once every caller waiting on it has aborted) or an eviction cancels it.
   */
  launch(modelId: string, level: LaunchLevel, placement?: Placement, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const owner = this.ownerFor(modelId);
    // Only the newest launch may be joined: joining an older one at this level while a launch
    // at another level is queued behind it would resolve, then see the model relaunched away.
    let pending = owner.pending.at(-1);
    if (pending === undefined || pending.level !== level || pending.cancel.signal.aborted) {
      const cancel = new AbortController();
      const promise = owner.run(() => this.launchNow(owner, level, placement, cancel.signal));
      const created: PendingLaunch = { level, promise, cancel, waiters: 0 };
      pending = created;
      owner.pending.push(created);
      const forget = (): void => {
        owner.pending = owner.pending.filter((p) => p !== created);
        // No launch in progress any more may soon be the moment to start the next spare.
        this.spare?.workEnded();
      };
      promise.then(forget, forget);
    }
    return this.join(pending, signal);
  }

  /**
   * Stops the model's server: SIGTERM to its process tree, SIGKILL after the grace period; a load
   * in progress is cancelled. Then, for a server that was ready and with a memoryProbe, waits
   * (bounded) until 75 % of its device footprint is free again, so the next launch does not OOM
   * on memory the dying process still holds. A ready server that a request has claimed is not
   * stopped: checked on the owner's turn, in the same synchronous step that marks the server
   * stopping, so no claim can slip in between; it resolves 'claimed' and the caller tries again
   * later (the release of the last claim is the moment). Idempotent; never rejects.
   */
  async evict(modelId: string): Promise<EvictOutcome> {
    const owner = this.owners.get(modelId);
    if (owner === undefined) return 'stopped';
    for (const pending of owner.pending) pending.cancel.abort(cancelled(`'${modelId}' was evicted while loading`));
    return owner.run(async () => {
      const server = owner.server;
      if (!server?.running) return 'stopped';
      if (server.serving() && server.claims.count > 0) return 'claimed';
      // The claims at the moment of stopping a live process, in its own log: the soak counts the
      // evictions this line shows with a request in flight (test/soak/server-log.ts). The check
      // above keeps it at 0; the line is what shows it if that ever stops being so.
      if (!server.gone) owner.log.push(`── llmtray: evicting '${modelId}' (pid ${server.pid}, ${server.phase}) with ${server.claims.count} request(s) in flight`);
      await this.stop(owner, server, { why: 'requested' });
      return 'stopped';
    });
  }

  /**
   * What each model's running server (loading, ready or still stopping) holds on the device,
   * bytes: measured where the driver or llama.cpp's log says, the estimate otherwise. For the
   * controller's plan; membership comes from the events, this only prices it. Runs the driver
   * query (nvidia-smi) only when a server is on the device. Never rejects.
   */
  async measure(): Promise<Map<string, number>> {
    const running = [...this.owners.values()].flatMap((owner) => (owner.server?.running ? [{ modelId: owner.modelId, server: owner.server }] : []));
    if (this.deps.hostIsDevice?.() === true) {
      // Host RAM is the device: what each holds is its process tree's RSS, runtime and all.
      const sizes = await Promise.all(running.map(({ server }) => treeResidentBytes(server.pid, this.platform).catch(() => 0)));
      return new Map(running.map(({ modelId }, i) => [modelId, sizes[i] ?? 0]));
    }
    const onDevice = running.some(({ server }) => server.level !== 'minimal');
    const gpu = onDevice ? await this.gpuUsage() : null;
    return new Map(running.map(({ modelId, server }) => [modelId, this.deviceBytesOf(modelId, server, gpu)]));
  }

  /**
   * Claims the model's ready server for one request: its endpoint, counted in flight until the
   * claim's release. Null unless the server is ready and alive (not loading, not stopping, not
   * dead while its output drains). Synchronous and O(1): the request path calls it.
   */
  claim(modelId: string): Claim | null {
    const server = this.owners.get(modelId)?.server;
    if (!server?.serving()) return null;
    return server.claims.add({ port: server.port, apiKey: server.apiKey, pid: server.pid, anthropicMessages: server.anthropicMessages, engine: server.engine, toolCalls: server.toolCalls });
  }

  /** Requests claimed on the model's current server. Synchronous. */
  inFlight(modelId: string): number {
    const server = this.owners.get(modelId)?.server;
    return server?.running ? server.claims.count : 0;
  }

  /**
   * Subscribes to every server's lifecycle events (see core/contracts/server-events.ts), in
   * order per model. Listeners run synchronously; a throw is reported and the others still hear
   * (core/common/emitter.ts). Returns the unsubscribe.
   */
  subscribe(listener: ServerEventListener): () => void {
    return this.events.on(listener);
  }

  /**
   * Subscribes to every model's log lines as they are added (llama.cpp's lines as the engine
   * writes them, and llmtray's own `── llmtray:` lines), in order per model. The listener runs
   * synchronously on the line's way into the ring, so it must be cheap and must not throw.
   * Returns the unsubscribe.
   */
  subscribeLog(listener: LogListener): () => void {
    return this.logLines.on(listener);
  }

  /**
   * Subscribes to each loading server's fraction as it changes (llama.cpp's loader progress, read
   * from the 503 body of a /health check: only while a model loads, at most as often as readiness
   * asks, never the same value twice in a row). For the views that show it: the admin snapshot is
   * republished with it (core/daemon/load-progress-feed.ts). Listeners run synchronously and
   * must not throw. Returns the unsubscribe.
   *
   * Why not a ServerEvent: those are a server's life, which the controller folds into its
   * records, each transition exactly once (core/contracts/server-events.ts); a fraction decides
   * nothing and comes many times per load, so every listener and fake of that contract would have
   * to learn to skip it. Why not a callback in SupervisorDeps (like onSpareChange): its listener,
   * the admin service, is made after the supervisor, and a subscription, as for the log lines,
   * needs no placeholder to forward through.
   */
  subscribeLoadProgress(listener: LoadProgressListener): () => void {
    return this.loadProgress.on(listener);
  }

  /** Whether any model's server runs (loading, ready or stopping), or a launch is on its way; the warm spare aside. Synchronous. */
  hasServers(): boolean {
    for (const owner of this.owners.values()) if (owner.pending.length > 0 || owner.server?.running === true) return true;
    return false;
  }

  /** The pids of every running server (loading, ready or stopping), for core/gpu's own-usage accounting. */
  runningPids(): number[] {
    const servers = [...this.owners.values()].flatMap((owner) => (owner.server?.running ? [owner.server.pid] : []));
    const spare = this.spare?.pid() ?? null;
    return spare === null ? servers : [...servers, spare];
  }

  /**
   * Whether to keep a warm spare (warm-spare.ts): the daemon's verdict (enabled, models on the
   * CPU, room for one). Level-triggered and idempotent; never blocks. Without deps.warmSpare it
   * does nothing.
   */
  setSpareWanted(wanted: boolean): void {
    this.spare?.want(wanted);
  }

  /**
   * A launch of the model at `level`, where `placement` puts it, will follow once the evictions
   * in progress have made room: when the warm spare could run that launch (the embedded engine,
   * every layer on the CPU), one starts now, so its runtime starts while the evicted servers
   * exit; the launch adopts it and loads its model only after they have (warm-spare.ts). A hint:
   * the launch works the same without it. Resolves whether a spare is held for the launch now;
   * never rejects. Without deps.warmSpare, or for a model already running, it does nothing.
   */
  async prepareLaunch(modelId: string, level: LaunchLevel, placement?: Placement): Promise<boolean> {
    const spare = this.spare;
    if (spare === null || this.owners.get(modelId)?.server?.running === true) return false;
    try {
      const spec = await this.deps.specFor(modelId);
      if (spec.engine !== 'embedded') return false;
      const command = await this.deps.engineCommand(spec);
      // The launch's own argv (its port and key aside), so the spare is started only where it will be adopted.
      return spare.startForLaunch(command, spec.env, argvFor(spec, level, command.capabilities, 0, { key: '' }, placement, this.deps.gpuIdentity));
    } catch {
      return false;
    }
  }

  /** The warm spare, while one runs (starting or waiting); null otherwise. Synchronous. */
  spareStatus(): SpareStatus | null {
    return this.spare?.status() ?? null;
  }

  /**
   * Where to send a model's requests, or null unless its server is ready and alive. Null from
   * the moment its process exits, though the exit listeners hear of it only after the drain
   * (up to 250 ms later): a request sent in between would meet a dead port.
   */
  endpointFor(modelId: string): Endpoint | null {
    const server = this.owners.get(modelId)?.server;
    const state = server?.state;
    if (!server || state?.kind !== 'ready') return null;
    const { port, apiKey, pid, level, startedAt } = server;
    return { port, apiKey, pid, level, startedAt, readyAt: state.at };
  }

  /**
   * The weights' buffer lines of the model's ready server ("CPU_Mapped model buffer size = …",
   * "CPU_REPACK model buffer size = …"), in log order; null unless it is ready and alive. A
   * draft loaded beside it adds its own lines. Synchronous.
   */
  modelBuffers(modelId: string): readonly BufferSize[] | null {
    const server = this.owners.get(modelId)?.server;
    if (!server?.serving()) return null;
    return server.buffers.modelBuffers;
  }

  /**
   * Resolves once the model's server at `endpoint` (matched by port and per-launch key) is
   * known to have ended, so that `endpointFor` no longer names it: at once if it has, or if
   * the model's server is another one now (relaunched) or none; else at its process's exit.
   * For the router, whose request an engine refused or reset: a dying engine's sockets close
   * before its exit is seen. Blocks until then or until `signal` aborts, which resolves it too
   * (the caller bounds the wait: an engine that reset one connection may live on). Idempotent;
   * never rejects.
   */
  serverEnded(modelId: string, endpoint: Pick<Endpoint, 'port' | 'apiKey'>, signal: AbortSignal): Promise<void> {
    const server = this.owners.get(modelId)?.server;
    if (!server || server.gone || server.port !== endpoint.port || server.apiKey !== endpoint.apiKey || signal.aborted) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      void server.ended.then(done);
    });
  }

  /** The latest server of a model (running or ended), or null if it was never launched. */
  status(modelId: string): ServerStatus | null {
    const server = this.owners.get(modelId)?.server;
    if (!server) return null;
    return {
      modelId,
      phase: server.phase,
      level: server.level,
      pid: server.pid,
      port: server.port,
      startedAt: server.startedAt,
      readyAt: readyAtOf(server.state),
      loadProgress: server.phase === 'loading' ? server.loadProgress : null,
      lastLoadMs: this.owners.get(modelId)?.lastLoadMs ?? null,
      exit: server.state.kind === 'exited' ? server.state.exit : null,
    };
  }

  /** The model's server log, oldest line first, across its launches; kept after it exits. */
  logs(modelId: string): string[] {
    return this.logTail(modelId).lines;
  }

  /** The same lines with the position after the last one, read together (a live reader continues from `next`). Synchronous. */
  logTail(modelId: string): LogTail {
    const log = this.owners.get(modelId)?.log;
    return log === undefined ? { lines: [], next: 0 } : { lines: log.toArray(), next: log.next };
  }

  /**
   * What the model's running server really uses, for the footprint it occupies: at 'minimal'
   * the host RSS of its process tree; otherwise device memory from the driver's per-process
   * accounting, else from llama.cpp's device "buffer size" lines, else (an engine on the CPU,
   * where host RAM is the device) the tree's RSS. `where` says which kind of figure it is: only a
   * device figure may teach the catalog a model's GPU footprint, since RSS also holds the
   * runtime and mapped file pages. Null when it is not running.
   */
  async measured(modelId: string): Promise<Measurement | null> {
    const server = this.owners.get(modelId)?.server;
    if (!server?.running) return null;
    if (server.level !== 'minimal') {
      const device = this.measuredDeviceBytes(server, await this.gpuUsage());
      if (device !== null) return { bytes: device, where: 'device' };
    }
    return { bytes: await treeResidentBytes(server.pid, this.platform), where: 'host' };
  }

  /**
   * Stops every server, claimed or not (quitting stops everything; the clients' answers end),
   * cancelling loads, and forgets the exit hook. Blocks until they are gone.
   */
  async close(): Promise<void> {
    await this.spare?.close();
    await Promise.all(
      [...this.owners.values()].map((owner) => {
        for (const pending of owner.pending) pending.cancel.abort(cancelled(`'${owner.modelId}' was stopped: llmtray is quitting`));
        return owner.run(async () => {
          if (owner.server?.running) await this.stop(owner, owner.server, { why: 'requested' });
        });
      }),
    );
    process.off('exit', this.killAllOnExit);
    await this.registry.settled();
  }

  private ownerFor(modelId: string): ModelOwner {
    let owner = this.owners.get(modelId);
    if (owner === undefined) {
      const heard = (line: string, position: number): void => {
        this.logLines.emit(modelId, line, position);
      };
      owner = new ModelOwner(modelId, new LineRing(this.deps.logLines ?? DEFAULT_LOG_LINES, undefined, heard));
      this.owners.set(modelId, owner);
    }
    return owner;
  }

  private join(pending: PendingLaunch, signal: AbortSignal | undefined): Promise<void> {
    pending.waiters++;
    if (signal === undefined) return pending.promise;
    return new Promise((resolve, reject) => {
      const giveUp = (): void => {
        pending.waiters--;
        if (pending.waiters === 0) pending.cancel.abort(signal.reason);
        reject(signal.reason);
      };
      signal.addEventListener('abort', giveUp, { once: true });
      pending.promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', giveUp));
    });
  }

  /** One launch command, run by the model's owner. */
  private async launchNow(owner: ModelOwner, level: LaunchLevel, placement: Placement | undefined, cancel: AbortSignal): Promise<void> {
    cancel.throwIfAborted();
    const current = owner.server;
    if (current?.serving() === true && current.level === level) return;
    if (current?.running) await this.stop(owner, current, { why: 'requested' });
    let spec: LaunchSpec;
    let command: EngineCommand;
    try {
      spec = await this.deps.specFor(owner.modelId);
      command = await this.deps.engineCommand(spec);
    } catch (error) {
      throw this.failedBeforeStart(owner, level, describe(error));
    }
    for (let attempt = 1; ; attempt++) {
      cancel.throwIfAborted();
      const outcome = await this.startOnce(owner, spec, command, level, placement, cancel);
      if (outcome === 'ready') return;
      if (outcome !== 'port-taken') throw outcome;
      if (attempt >= PORT_ATTEMPTS) throw this.failedBeforeStart(owner, level, `another program took its loopback port ${PORT_ATTEMPTS} times in a row`);
    }
  }

  /** Starts one process and waits for it. Resolves 'ready', 'port-taken' (try another port), or the error to throw. */
  private async startOnce(
    owner: ModelOwner,
    spec: LaunchSpec,
    command: EngineCommand,
    level: LaunchLevel,
    placement: Placement | undefined,
    cancel: AbortSignal,
  ): Promise<'ready' | 'port-taken' | Error> {
    const port = await freeLoopbackPort();
    const apiKey = randomBytes(24).toString('hex');
    // In a file where the build reads one, so that `ps` does not show it (see api-key-file.ts).
    const keyFile = readsApiKeyFile(command.capabilities) ? newApiKeyFilePath(apiKeyDir(this.deps.dataDir)) : null;
    let engineArgs: string[];
    try {
      engineArgs = argvFor(spec, level, command.capabilities, port, keyFile === null ? { key: apiKey } : { keyFile }, placement, this.deps.gpuIdentity);
    } catch (error) {
      return this.failedBeforeStart(owner, level, describe(error));
    }
    const args = [...command.args, ...engineArgs];
    const env = { ...placementEnv(placement, spec.engine, this.deps.gpuIdentity), ...spec.env };
    if (keyFile !== null) {
      try {
        await writeApiKeyFile(keyFile, apiKey);
      } catch (error) {
        removeApiKeyFile(keyFile);
        const trouble = await dataDirTrouble(error, this.deps.dataDir);
        return this.failedBeforeStart(owner, level, `${trouble === null ? '' : `${trouble}: `}could not write its API key file ${keyFile}: ${describe(error)}`);
      }
    }
    // The warm spare runs this launch when it can; when it cannot, it is ended first, so that
    // the memory the plan counted as free is free (warm-spare.ts). Only the spec's own
    // environment must match: placement's variables choose GPUs, and the spare runs only
    // launches with every layer on the CPU, which start no GPU backend.
    const adopted: AdoptedSpare | null = this.spare?.adopt(command, spec.env, engineArgs) ?? null;
    if (adopted === null) await this.spare?.endNow();
    const commandText = [command.command, ...args].join(' ').replace(apiKey, '<key>');
    if (adopted === null) owner.log.push(`── llmtray: starting '${owner.modelId}' at level ${level}: ${commandText}`);
    else {
      for (const line of adopted.lines) owner.log.push(line);
      owner.log.push(`── llmtray: starting '${owner.modelId}' at level ${level} in the warm spare (pid ${adopted.pid}, started ${Math.round(adopted.ageMs)} ms before): ${commandText}`);
    }
    let server: ServerProcess | null = null;
    // The load's length is measured on the monotonic clock; startedAt (epoch) is what is shown and recorded.
    const launchedAt = this.clock.elapsed();
    const serverOptions = {
      port,
      apiKey,
      level,
      engine: spec.engine,
      startedAt: this.clock.now(),
      onLine: (line: string) => owner.log.push(line),
      onBusyChange: (busy: boolean) => {
        if (server !== null) this.busyChanged(owner, server, spec, busy);
      },
    };
    try {
      server =
        adopted !== null
          ? ServerProcess.adopt({ child: adopted.child, ...serverOptions })
          : // In the data dir, whatever the daemon's own working directory: a folder it was started
            // from may be deleted while it runs, and node-llama-cpp reads its working directory
            // at start (ENOENT … uv_cwd, once a model quarantined for it).
            ServerProcess.start({ spawn: this.spawn, command: command.command, args, env, cwd: this.deps.dataDir, platform: this.platform, ...serverOptions });
      server.toolCalls = command.capabilities.jinja !== 'absent';
      await server.spawned;
    } catch (error) {
      if (keyFile !== null) removeApiKeyFile(keyFile);
      return this.failedBeforeStart(owner, level, `could not start ${command.command}: ${describe(error)}`);
    }
    const started = server;
    owner.server = started;
    this.emit({ type: 'ServerSpawned', modelId: owner.modelId, level, pid: started.pid, at: this.clock.now() });
    // An adopted spare keeps the command line it was started with; that is what /proc shows.
    const commandHash = commandLineHash(adopted?.commandLine ?? [command.command, ...args].join(' '));
    await this.registry.add({ modelId: owner.modelId, pid: started.pid, commandHash, startedAt: started.startedAt }).catch((error: Error) =>
      owner.log.push(`── llmtray: could not record pid ${started.pid} in engines.json (${error.message}); an orphan of this server would not be found`),
    );
    const loadTimeoutMs = (this.deps.loadTimeoutMs ?? defaultLoadTimeoutMs)(spec);
    // Registered before anything else awaits the exit, so the one report of how it ended is
    // made before the launch below rejects with it.
    void started.exited.then(() => this.afterExit(owner, started, keyFile, loadTimeoutMs));

    const waiting = new AbortController();
    const timer = this.clock.setTimeout(() => waiting.abort('timeout'), loadTimeoutMs);
    const onCancel = (): void => waiting.abort('cancelled');
    // The cancel may already have come while the process was starting: 'abort' fires only once.
    if (cancel.aborted) onCancel();
    else cancel.addEventListener('abort', onCancel, { once: true });
    void started.exited.then(() => waiting.abort('exited'));
    try {
      await waitUntilReady({
        port,
        apiKey,
        doorbell: started.doorbell,
        signal: waiting.signal,
        clock: this.clock,
        onProgress: (progress) => {
          if (progress === started.loadProgress) return;
          started.loadProgress = progress;
          this.loadProgress.emit(owner.modelId, progress);
        },
        provenReady: () => started.provenReady,
      });
      // Before 'ready', so the first request already knows how to reach it. The embedded engine
      // is ours and serves no /v1/messages (its README); asking it would cost every launch a round trip.
      started.anthropicMessages = spec.engine !== 'embedded' && (await probeServedApis(port, apiKey)).anthropicMessages;
      // The probe awaited: a cancel, the load timeout or an exit meanwhile ends the load as it
      // would have a moment earlier. A process already gone whose output still drains is an exit.
      if (started.gone) waiting.abort('exited');
      waiting.signal.throwIfAborted();
      if (started.anthropicMessages) owner.log.push(`── llmtray: '${owner.modelId}' serves Anthropic's /v1/messages itself; those requests go to it as they are`);
      const readyAt = this.clock.now();
      started.transition({ kind: 'ready', at: readyAt });
      owner.lastLoadMs = Math.round(this.clock.elapsed() - launchedAt);
      this.emit({ type: 'ServerReady', modelId: owner.modelId, level, pid: started.pid, at: readyAt });
      this.learnRuntime(owner.modelId, spec, level, started, placement);
      return 'ready';
    } catch {
      const why = waiting.signal.reason as 'timeout' | 'cancelled' | 'exited';
      if (why === 'cancelled') {
        await this.stop(owner, started, { why: 'requested' });
        return cancel.reason instanceof Error || cancel.reason instanceof DOMException ? cancel.reason : cancelled(String(cancel.reason));
      }
      if (why === 'timeout') await this.stop(owner, started, { why: 'load-timeout' });
      await started.exited;
      const end = started.state;
      if (end.kind === 'exited' && end.portTaken) return 'port-taken';
      const failure = (end.kind === 'exited' ? end.failure : null) ?? { kind: 'crash', reason: 'it ended while loading' };
      const exit = end.kind === 'exited' ? end.exit : { exitCode: null, signal: null };
      return new LaunchError(owner.modelId, { ...failure, ...exit, logTail: started.tail.toArray().slice(-LOG_TAIL_LINES) });
    } finally {
      this.clock.clearTimeout(timer);
      cancel.removeEventListener('abort', onCancel);
    }
  }

  /**
   * Ends a server's tree because of `endedBy` and, for a ready one, waits for its memory. Only
   * called by the owner's commands. The mark ('stopping') is set before any await: from here on
   * the server takes no claims and its exit is not a failure (unless it was ended for a hang). A
   * server already stopping keeps the reason it was first stopped for. A process already gone
   * (its output still draining) is not marked: it ended on its own before anyone asked, and an
   * eviction arriving then must not report its death as a stop.
   */
  private async stop(owner: ModelOwner, server: ServerProcess, endedBy: EndedBy): Promise<void> {
    const before = server.state;
    const wasReady = before.kind !== 'exited' && readyAtOf(before) !== null;
    if (before.kind === 'loading' || before.kind === 'ready') server.transition({ kind: 'stopping', by: endedBy, readyAt: readyAtOf(before), killedByUs: false });
    server.watch?.close();
    const probe = this.deps.memoryProbe;
    const freeBefore = wasReady && probe ? await probe().catch(() => null) : null;
    // Only the memory wait needs the footprint; without one, asking the driver would be wasted.
    const footprintBytes = freeBefore === null ? 0 : this.deviceBytesOf(owner.modelId, server, await this.gpuUsage());
    const terminating = terminateTree(server.pid, {
      graceMs: this.graceMs,
      leaderExited: server.exited,
      platform: this.platform,
      onKill: () => {
        const now = server.state;
        if (now.kind === 'stopping' || now.kind === 'draining') server.transition({ ...now, killedByUs: true });
      },
    });
    // A stopped process (SIGSTOP, the usual way a hang shows up in a debugger) cannot act on
    // SIGTERM until it runs again; letting it run lets it stop cleanly instead of waiting out
    // the grace for the SIGKILL.
    const marked = server.state;
    if ((marked.kind === 'stopping' || marked.kind === 'draining') && marked.by?.why === 'hung') signalTree(server.pid, [], 'SIGCONT');
    const { forced } = await terminating;
    if (forced) owner.log.push(`── llmtray: '${owner.modelId}' did not stop within ${this.graceMs} ms of SIGTERM; sent SIGKILL`);
    if (probe && freeBefore !== null) {
      const back = await waitForMemoryBack({
        probe,
        clock: this.clock,
        freeBefore,
        footprintBytes,
        fraction: this.deps.memoryWait?.fraction ?? 0.75,
        maxMs: this.deps.memoryWait?.maxMs ?? 5_000,
        pollMs: this.deps.memoryWait?.pollMs ?? 100,
      });
      if (!back) owner.log.push(`── llmtray: device memory of '${owner.modelId}' was not back after ${this.deps.memoryWait?.maxMs ?? 5_000} ms; launching anyway`);
    }
  }

  /**
   * The first ready server of an engine kind measures that engine's own cost where it counts:
   * on the CPU its process tree's RSS; on a GPU the driver's figure for it, from a server that
   * sits whole on one device (a split's or a partial launch's share per device is not its model's
   * estimate).
   */
  private learnRuntime(modelId: string, spec: LaunchSpec, level: LaunchLevel, server: ServerProcess, placement: Placement | undefined): void {
    const runtime = this.deps.runtime;
    // At full or degraded the estimate covers the whole model (at partial or minimal its device figure does not).
    if (runtime === undefined || level === 'partial' || level === 'minimal') return;
    const estimate = this.deps.footprint(modelId, level);
    if (this.deps.hostIsDevice?.() === true) {
      // At its 'ready' a server's RSS holds its runtime, weights and KV cache, but not the
      // compute buffer it has not used yet: counting that in would learn a runtime too small by
      // it (8 MiB of demo-tiny's), and price every model that much under what it holds in use.
      const resident = estimate - (this.deps.computeBytes?.(modelId) ?? 0);
      void treeResidentBytes(server.pid, this.platform)
        .then((rss) => runtime.learn(spec.engine, 'host', rss, resident))
        .catch(() => undefined);
      return;
    }
    if (placement === undefined || placement.kind !== 'gpu' || placement.devices.length !== 1) return;
    void this.gpuUsage().then((byPid) => {
      const held = byPid?.get(server.pid);
      if (held !== undefined) runtime.learn(spec.engine, 'device', held, estimate);
    });
  }

  /**
   * Requests started or stopped being claimed on `server`: hang detection runs exactly while
   * some are in flight on a ready server.
   */
  private busyChanged(owner: ModelOwner, server: ServerProcess, spec: LaunchSpec, busy: boolean): void {
    if (!busy) this.spare?.workEnded();
    if (!busy || !server.serving()) {
      server.watch?.stop();
      return;
    }
    server.watch ??= new HangWatch({
      clock: this.clock,
      limitMs: (this.deps.hangLimitMs ?? ((s: LaunchSpec) => s.hangLimitMs ?? DEFAULT_HANG_LIMIT_MS))(spec),
      progressMark: () => server.claims.progressMark,
      inFlight: () => server.claims.count,
      look: (timeoutMs) => lookAtEngine(server.port, server.apiKey, timeoutMs),
      onHung: (reason) => this.hung(owner, server, reason),
    });
    server.watch.start();
  }

  /** A busy server made no progress for its hang limit: its clients hear why, then it is killed. */
  private hung(owner: ModelOwner, server: ServerProcess, reason: string): void {
    const state = server.state;
    if (state.kind !== 'ready') return;
    owner.log.push(`── llmtray: '${owner.modelId}' (pid ${server.pid}) is hung: ${reason}; killing it`);
    const by: EndedBy = { why: 'hung', reason };
    // Marked at once, not on the owner's turn: from now on it takes no claims, and its exit is a hang.
    server.transition({ kind: 'stopping', by, readyAt: state.at, killedByUs: false });
    // Before the kill: a client whose socket is reset first could not tell a hang from a crash.
    server.claims.loseAll({ kind: 'hang', reason });
    void owner.run(() => this.stop(owner, server, by));
  }

  /** The one report of how a server ended: classified here once, emitted once. */
  private afterExit(owner: ModelOwner, server: ServerProcess, keyFile: string | null, loadTimeoutMs: number): void {
    if (keyFile !== null) removeApiKeyFile(keyFile);
    server.watch?.close();
    void this.registry.remove(server.pid).catch(() => undefined);
    const state = server.state;
    if (state.kind !== 'draining') throw new IllegalTransition(state.kind, 'exited');
    const { exit, readyAt } = state;
    owner.log.push(`── llmtray: '${owner.modelId}' (pid ${server.pid}) ended: ${exit.signal ?? `exit code ${exit.exitCode}`}`);
    const base = { modelId: owner.modelId, level: server.level, pid: server.pid, at: this.clock.now() };
    // A SIGKILL the supervisor did not send (the OOM killer, a person's kill -9) ended it on its
    // own, even when a stop had been asked for meanwhile: a large engine takes a while to die,
    // its sockets close before its exit is known, and the eviction its released claim allowed
    // can land in between. A stop's SIGTERM never ends in a SIGKILL but ours.
    const killedElsewhere = exit.signal === 'SIGKILL' && !state.killedByUs;
    const endedBy = state.by?.why === 'requested' && killedElsewhere ? null : state.by;
    const wasReady = readyAt !== null;
    const log = server.tail.toArray();
    if (endedBy?.why === 'requested' || (!wasReady && endedBy === null && log.some((line) => PORT_IN_USE.test(line)))) {
      // A port another program took between our probe and the engine's bind is not the
      // model's failure: the launch tries again on a fresh port.
      server.transition({ kind: 'exited', exit, readyAt, failure: null, portTaken: endedBy === null });
      this.emit({ type: 'ServerStopped', ...base });
      return;
    }
    const failure: FailureClassification =
      endedBy?.why === 'hung'
        ? { kind: 'hang', reason: endedBy.reason }
        : classifyFailure({ ...exit, log, timedOutWaitingForReady: endedBy?.why === 'load-timeout', loadTimeoutMs, diedAfterReady: wasReady });
    server.transition({ kind: 'exited', exit, readyAt, failure, portTaken: false });
    this.emit({ type: 'ServerExited', ...base, ...failure, wasReady, ...exit });
  }

  /** A launch that failed before any process ran: reported once, returned for the launch to reject with. */
  private failedBeforeStart(owner: ModelOwner, level: LaunchLevel, reason: string): LaunchError {
    owner.log.push(`── llmtray: could not launch '${owner.modelId}': ${reason}`);
    // A file that cannot be read (the catalog said so) is hopeless, not a crash to retry.
    const failure = classifySetupFailure(reason);
    this.emit({ type: 'ServerExited', modelId: owner.modelId, level, pid: null, ...failure, wasReady: false, exitCode: null, signal: null, at: this.clock.now() });
    return new LaunchError(owner.modelId, { ...failure, exitCode: null, signal: null, logTail: owner.log.toArray(LOG_TAIL_LINES) });
  }

  private emit(event: ServerEvent): void {
    this.events.emit(event);
  }

  private async gpuUsage(): Promise<ReadonlyMap<number, number> | null> {
    return this.deps.gpuProcessMemory ? this.deps.gpuProcessMemory().catch(() => null) : null;
  }

  /**
   * What the server holds on the device: the driver's figure, which counts everything the
   * process holds; else llama.cpp's buffer lines or the estimate, which count the model only, so
   * its engine's runtime there is added (the plan priced it so, and a picture without it would
   * show a model smaller than what it holds).
   */
  private deviceBytesOf(modelId: string, server: ServerProcess, gpu: ReadonlyMap<number, number> | null): number {
    if (server.level === 'minimal') return 0;
    const fromDriver = gpu?.get(server.pid);
    if (fromDriver !== undefined) return fromDriver;
    const runtime = this.deps.runtime?.bytes(server.engine, 'device') ?? 0;
    return (this.measuredDeviceBytes(server, null) ?? this.deps.footprint(modelId, server.level)) + runtime;
  }

  /** Driver accounting first (it sees everything the process holds), then llama.cpp's device buffer lines. */
  private measuredDeviceBytes(server: ServerProcess, gpu: ReadonlyMap<number, number> | null): number | null {
    const fromDriver = gpu?.get(server.pid);
    if (fromDriver !== undefined) return fromDriver;
    return server.buffers.deviceBytes > 0 ? server.buffers.deviceBytes : null;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
