// The supervisor: starts, watches and stops model server processes for the controller.
//
// One owner per model: every command for a model (launch, evict) runs through that model's
// queue, one at a time, and each command re-reads the owner's state when its turn comes. The
// alternative — callers reading state() and then deciding — is the race that made llama-swap
// start two servers for one cold model. Two launches of the same model at the same level join
// one load; a launch at another level, or an eviction, waits its turn (an eviction first
// cancels a load in progress, so it does not wait out a long load it is about to undo).
import { spawn as nodeSpawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { LaunchLevel } from '../../policy/levels.js';
import { classifyFailure, LaunchError, type FailureClassification } from '../failure-classifier.js';
import { argvFor, readsApiKeyFile, type LaunchSpec } from '../launch-spec.js';
import { apiKeyDir, clearApiKeyFiles, newApiKeyFilePath, removeApiKeyFile, writeApiKeyFile } from './api-key-file.js';
import { realClock, type Clock } from '../../common/clock.js';
import type { EngineCommand } from './engine-command.js';
import { commandLineHash, EngineRegistry, type OrphanSweep } from './engine-registry.js';
import { freeLoopbackPort, PORT_IN_USE } from './free-port.js';
import { LineRing } from './log-ring.js';
import { waitForMemoryBack } from './memory-wait.js';
import { isRunning, readCommandLine, signalTree, terminateTree, treeResidentBytes } from './process-tree.js';
import { waitUntilReady } from './readiness.js';
import { ServerProcess, type ServerPhase, type SpawnFunction } from './server-process.js';

export interface SupervisorDeps {
  /** The launch spec of a model, read at each launch; throwing makes the launch fail as a crash with that message. */
  specFor(modelId: string): LaunchSpec | Promise<LaunchSpec>;
  /** Which program runs a spec (see defaultEngineCommand). */
  engineCommand(spec: LaunchSpec): EngineCommand | Promise<EngineCommand>;
  /** The estimated device footprint of a model at a level, bytes (for resident() and the memory wait). */
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
  /** SIGTERM → SIGKILL grace, ms; default 5000. */
  stopGraceMs?: number;
  /** Lines of log kept per model; default 2000. */
  logLines?: number;
  /** The eviction memory wait; defaults: 75 % of the footprint, at most 5 s, probing every 100 ms. */
  memoryWait?: { fraction?: number; maxMs?: number; pollMs?: number };
  platform?: NodeJS.Platform;
}

export interface ResidentServer {
  modelId: string;
  level: LaunchLevel;
  /** Measured device bytes where the driver or llama.cpp's log says; the estimate otherwise. */
  deviceBytes: number;
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
  /** How it ended, once it has. */
  exit: { exitCode: number | null; signal: string | null } | null;
}

/** A running server's memory: a device figure (driver or llama.cpp's buffers), or host RSS. */
export interface Measurement {
  bytes: number;
  where: 'device' | 'host';
}

/** A ready server that ended without being asked to: what the controller hears through onExit. */
export interface EngineExit extends FailureClassification {
  exitCode: number | null;
  signal: string | null;
  level: LaunchLevel;
  logTail: readonly string[];
}

export type EngineExitListener = (modelId: string, exit: EngineExit) => void;

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
  private readonly exitListeners = new Set<EngineExitListener>();
  private readonly registry: EngineRegistry;
  private readonly spawn: SpawnFunction;
  private readonly clock: Clock;
  private readonly platform: NodeJS.Platform;
  private readonly graceMs: number;
  private readonly killAllOnExit = (): void => {
    for (const owner of this.owners.values()) {
      const server = owner.server;
      if (server?.running) signalTree(server.pid, [], 'SIGKILL');
    }
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
  launch(modelId: string, level: LaunchLevel, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const owner = this.ownerFor(modelId);
    // Only the newest launch may be joined: joining an older one at this level while a launch
    // at another level is queued behind it would resolve, then see the model relaunched away.
    let pending = owner.pending.at(-1);
    if (pending === undefined || pending.level !== level || pending.cancel.signal.aborted) {
      const cancel = new AbortController();
      const promise = owner.run(() => this.launchNow(owner, level, cancel.signal));
      const created: PendingLaunch = { level, promise, cancel, waiters: 0 };
      pending = created;
      owner.pending.push(created);
      const forget = (): void => {
        owner.pending = owner.pending.filter((p) => p !== created);
      };
      promise.then(forget, forget);
    }
    return this.join(pending, signal);
  }

  /**
   * Stops the model's server: SIGTERM to its process tree, SIGKILL after the grace period; a load
   * in progress is cancelled. Then, for a server that was ready and with a memoryProbe, waits
   * (bounded) until 75 % of its device footprint is free again, so the next launch does not OOM
   * on memory the dying process still holds. Idempotent; never rejects.
   */
  async evict(modelId: string): Promise<void> {
    const owner = this.owners.get(modelId);
    if (owner === undefined) return;
    for (const pending of owner.pending) pending.cancel.abort(cancelled(`'${modelId}' was evicted while loading`));
    await owner.run(async () => {
      const server = owner.server;
      if (server?.running) await this.stop(owner, server);
    });
  }

  /**
   * The servers holding memory now — loading, ready, or still stopping — at their level with
   * their device bytes (measured where possible). Does not block on the processes.
   */
  async resident(): Promise<ResidentServer[]> {
    // The controller asks on every pass: no driver query (an nvidia-smi run) when nothing on the device could use it.
    const onDevice = [...this.owners.values()].some((owner) => owner.server?.running && owner.server.level !== 'minimal');
    const gpu = onDevice ? await this.gpuUsage() : null;
    const out: ResidentServer[] = [];
    for (const owner of this.owners.values()) {
      const server = owner.server;
      if (!server?.running) continue;
      out.push({ modelId: owner.modelId, level: server.level, deviceBytes: this.deviceBytesOf(owner.modelId, server, gpu) });
    }
    return out;
  }

  /** The pids of every running server (loading, ready or stopping), for core/gpu's own-usage accounting. */
  runningPids(): number[] {
    return [...this.owners.values()].flatMap((owner) => (owner.server?.running ? [owner.server.pid] : []));
  }

  /**
   * Where to send a model's requests, or null unless its server is ready and alive. Null from
   * the moment its process exits, though the exit listeners hear of it only after the drain
   * (up to 250 ms later): a request sent in between would meet a dead port.
   */
  endpointFor(modelId: string): Endpoint | null {
    const server = this.owners.get(modelId)?.server;
    if (!server || server.phase !== 'ready' || server.readyAt === null || server.hasEnded) return null;
    const { port, apiKey, pid, level, startedAt, readyAt } = server;
    return { port, apiKey, pid, level, startedAt, readyAt };
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
    if (!server || server.hasEnded || server.port !== endpoint.port || server.apiKey !== endpoint.apiKey || signal.aborted) {
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
      readyAt: server.readyAt,
      loadProgress: server.phase === 'loading' ? server.loadProgress : null,
      exit: server.exit,
    };
  }

  /** The model's server log, oldest line first, across its launches; kept after it exits. */
  logs(modelId: string): string[] {
    return this.owners.get(modelId)?.log.toArray() ?? [];
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
   * Subscribes to servers that end on their own after they were ready (a crash mid-run). Not
   * called for evictions or failed launches (launch rejects instead). Returns the unsubscribe.
   */
  onExit(listener: EngineExitListener): () => void {
    this.exitListeners.add(listener);
    return () => this.exitListeners.delete(listener);
  }

  /** Stops every server (as evict, all at once) and forgets the exit hook. Blocks until they are gone. */
  async close(): Promise<void> {
    await Promise.all([...this.owners.keys()].map((id) => this.evict(id)));
    process.off('exit', this.killAllOnExit);
    await this.registry.settled();
  }

  private ownerFor(modelId: string): ModelOwner {
    let owner = this.owners.get(modelId);
    if (owner === undefined) {
      owner = new ModelOwner(modelId, new LineRing(this.deps.logLines ?? DEFAULT_LOG_LINES));
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
  private async launchNow(owner: ModelOwner, level: LaunchLevel, cancel: AbortSignal): Promise<void> {
    cancel.throwIfAborted();
    const current = owner.server;
    if (current?.phase === 'ready' && !current.hasEnded && current.level === level) return;
    if (current?.running) await this.stop(owner, current);
    let spec: LaunchSpec;
    let command: EngineCommand;
    try {
      spec = await this.deps.specFor(owner.modelId);
      command = await this.deps.engineCommand(spec);
    } catch (error) {
      throw this.setupFailure(owner, error);
    }
    for (let attempt = 1; ; attempt++) {
      cancel.throwIfAborted();
      const outcome = await this.startOnce(owner, spec, command, level, cancel);
      if (outcome === 'ready') return;
      if (outcome === 'port-taken' && attempt < PORT_ATTEMPTS) continue;
      throw outcome === 'port-taken' ? this.portFailure(owner) : outcome;
    }
  }

  /** Starts one process and waits for it. Resolves 'ready', 'port-taken' (try another port), or the error to throw. */
  private async startOnce(
    owner: ModelOwner,
    spec: LaunchSpec,
    command: EngineCommand,
    level: LaunchLevel,
    cancel: AbortSignal,
  ): Promise<'ready' | 'port-taken' | Error> {
    const port = await freeLoopbackPort();
    const apiKey = randomBytes(24).toString('hex');
    // In a file where the build reads one, so that `ps` does not show it (see api-key-file.ts).
    const keyFile = readsApiKeyFile(command.capabilities) ? newApiKeyFilePath(apiKeyDir(this.deps.dataDir)) : null;
    let args: string[];
    try {
      args = [...command.args, ...argvFor(spec, level, command.capabilities, port, keyFile === null ? { key: apiKey } : { keyFile })];
    } catch (error) {
      return this.setupFailure(owner, error);
    }
    if (keyFile !== null) {
      try {
        await writeApiKeyFile(keyFile, apiKey);
      } catch (error) {
        removeApiKeyFile(keyFile);
        return this.setupFailure(owner, new Error(`could not write its API key file ${keyFile}: ${(error as Error).message}`));
      }
    }
    owner.log.push(`── llmtray: starting '${owner.modelId}' at level ${level}: ${[command.command, ...args].join(' ').replace(apiKey, '<key>')}`);
    let server: ServerProcess;
    try {
      server = ServerProcess.start({
        spawn: this.spawn,
        command: command.command,
        args,
        env: spec.env,
        platform: this.platform,
        port,
        apiKey,
        level,
        startedAt: this.clock.now(),
        onLine: (line) => owner.log.push(line),
      });
      await server.spawned;
    } catch (error) {
      if (keyFile !== null) removeApiKeyFile(keyFile);
      return this.setupFailure(owner, new Error(`could not start ${command.command}: ${(error as Error).message}`));
    }
    owner.server = server;
    const commandHash = commandLineHash([command.command, ...args].join(' '));
    await this.registry.add({ modelId: owner.modelId, pid: server.pid, commandHash, startedAt: server.startedAt }).catch((error: Error) =>
      owner.log.push(`── llmtray: could not record pid ${server.pid} in engines.json (${error.message}); an orphan of this server would not be found`),
    );
    void server.exited.then(() => this.afterExit(owner, server, keyFile));

    const loadTimeoutMs = (this.deps.loadTimeoutMs ?? defaultLoadTimeoutMs)(spec);
    const waiting = new AbortController();
    const timer = this.clock.setTimeout(() => waiting.abort('timeout'), loadTimeoutMs);
    const onCancel = (): void => waiting.abort('cancelled');
    // The cancel may already have come while the process was starting: 'abort' fires only once.
    if (cancel.aborted) onCancel();
    else cancel.addEventListener('abort', onCancel, { once: true });
    void server.exited.then(() => waiting.abort('exited'));
    try {
      await waitUntilReady({
        port,
        apiKey,
        doorbell: server.doorbell,
        signal: waiting.signal,
        clock: this.clock,
        onProgress: (progress) => {
          server.loadProgress = progress;
        },
      });
      server.phase = 'ready';
      server.readyAt = this.clock.now();
      return 'ready';
    } catch {
      const why = waiting.signal.reason as 'timeout' | 'cancelled' | 'exited';
      if (why === 'cancelled') {
        await this.stop(owner, server);
        return cancel.reason instanceof Error || cancel.reason instanceof DOMException ? cancel.reason : cancelled(String(cancel.reason));
      }
      if (why === 'timeout') await this.stop(owner, server);
      const exit = await server.exited;
      const log = server.tail.toArray();
      if (why === 'exited' && log.some((line) => PORT_IN_USE.test(line))) return 'port-taken';
      const failure = classifyFailure({
        ...exit,
        log,
        timedOutWaitingForReady: why === 'timeout',
        stalledWithRequestsInFlight: false,
        loadTimeoutMs,
      });
      return new LaunchError(owner.modelId, { ...failure, ...exit, logTail: log.slice(-LOG_TAIL_LINES) });
    } finally {
      this.clock.clearTimeout(timer);
      cancel.removeEventListener('abort', onCancel);
    }
  }

  /** Ends a server's tree and, for a ready one, waits for its memory. Only called by the owner's commands. */
  private async stop(owner: ModelOwner, server: ServerProcess): Promise<void> {
    const wasReady = server.phase === 'ready';
    server.stopping = true;
    if (server.running) server.phase = 'stopping';
    const probe = this.deps.memoryProbe;
    const freeBefore = wasReady && probe ? await probe().catch(() => null) : null;
    // Only the memory wait needs the footprint; without one, asking the driver would be wasted.
    const footprintBytes = freeBefore === null ? 0 : this.deviceBytesOf(owner.modelId, server, await this.gpuUsage());
    const { forced } = await terminateTree(server.pid, {
      graceMs: this.graceMs,
      leaderExited: server.exited,
      platform: this.platform,
    });
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

  private afterExit(owner: ModelOwner, server: ServerProcess, keyFile: string | null): void {
    if (keyFile !== null) removeApiKeyFile(keyFile);
    void this.registry.remove(server.pid).catch(() => undefined);
    const exit = server.exit ?? { exitCode: null, signal: null };
    owner.log.push(`── llmtray: '${owner.modelId}' (pid ${server.pid}) ended: ${exit.signal ?? `exit code ${exit.exitCode}`}`);
    if (server.stopping || server.readyAt === null) return;
    const log = server.tail.toArray();
    const failure = classifyFailure({ ...exit, log, timedOutWaitingForReady: false, stalledWithRequestsInFlight: false, diedAfterReady: true });
    const event: EngineExit = { ...failure, ...exit, level: server.level, logTail: log.slice(-LOG_TAIL_LINES) };
    for (const listener of this.exitListeners) listener(owner.modelId, event);
  }

  private setupFailure(owner: ModelOwner, error: unknown): LaunchError {
    const reason = error instanceof Error ? error.message : String(error);
    owner.log.push(`── llmtray: could not launch '${owner.modelId}': ${reason}`);
    return new LaunchError(owner.modelId, { kind: 'crash', reason, exitCode: null, signal: null, logTail: [] });
  }

  private portFailure(owner: ModelOwner): LaunchError {
    const reason = `another program took its loopback port ${PORT_ATTEMPTS} times in a row`;
    return new LaunchError(owner.modelId, { kind: 'crash', reason, exitCode: null, signal: null, logTail: owner.log.toArray(LOG_TAIL_LINES) });
  }

  private async gpuUsage(): Promise<ReadonlyMap<number, number> | null> {
    return this.deps.gpuProcessMemory ? this.deps.gpuProcessMemory().catch(() => null) : null;
  }

  private deviceBytesOf(modelId: string, server: ServerProcess, gpu: ReadonlyMap<number, number> | null): number {
    if (server.level === 'minimal') return 0;
    return this.measuredDeviceBytes(server, gpu) ?? this.deps.footprint(modelId, server.level);
  }

  /** Driver accounting first (it sees everything the process holds), then llama.cpp's device buffer lines. */
  private measuredDeviceBytes(server: ServerProcess, gpu: ReadonlyMap<number, number> | null): number | null {
    const fromDriver = gpu?.get(server.pid);
    if (fromDriver !== undefined) return fromDriver;
    return server.buffers.deviceBytes > 0 ? server.buffers.deviceBytes : null;
  }
}
