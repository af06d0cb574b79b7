// The supervisor: starts, watches and stops model server processes for the controller.
//
// One owner per model (model-owner.ts) runs every command for its model, one at a time, and is
// the one that reports each of its servers' lives (core/contracts/server-events.ts); one launch
// is launch.ts; what servers hold is server-memory.ts. This is the face the controller, the
// router and the daemon see: it finds the owner, and answers what can be read at once.
// Requests are claimed here too (server-claims.ts): an eviction re-checks the claims at the
// moment it stops a server, and a server with claims that makes no progress is found hung
// (hang/hang-watch.ts) and killed.
import { spawn as nodeSpawn } from 'node:child_process';
import { join } from 'node:path';
import type { ServerEvent } from '../../contracts/server-events.js';
import type { LogTail } from '../../contracts/log-lines.js';
import { argvFor } from '../launch-spec.js';
import { clearApiKeyFiles, apiKeyDir } from './api-key-file.js';
import { realClock, type Clock } from '../../common/clock.js';
import { EngineRegistry, type OrphanSweep } from './engine-registry.js';
import type { BufferSize } from './memory/memory-measure.js';
import { LineRing } from './log-ring.js';
import { isRunning, readCommandLine, signalTree, terminateTree } from './process-tree.js';
import type { Claim } from './server-claims.js';
import type { SpawnFunction } from './server-process.js';
import { readyAtOf } from './server-state.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';
import { WarmSpare, type SpareStatus } from './warm-spare.js';
import { Emitter, type Event } from '../../common/emitter.js';
import { ModelOwner } from './model-owner.js';
import { ServerMemory } from './memory/server-memory.js';
import type { OwnerContext } from './owner-port.js';
import type { Endpoint, EvictOutcome, LoadFraction, LoggedLine, Measurement, ServerStatus, SupervisorDeps } from './supervisor-types.js';

export { defaultLoadTimeoutMs } from './supervisor-types.js';
export type { Endpoint, EvictOutcome, LoadFraction, LoggedLine, Measurement, ServerStatus, SupervisorDeps } from './supervisor-types.js';
export type { SpareStatus } from './warm-spare.js';

const DEFAULT_GRACE_MS = 5_000;
const DEFAULT_LOG_LINES = 2_000;

export class Supervisor {
  private readonly owners = new Map<string, ModelOwner>();
  private readonly events = new Emitter<ServerEvent>("the supervisor's lifecycle events");
  private readonly logLines = new Emitter<LoggedLine>("the supervisor's log lines");
  private readonly loadProgress = new Emitter<LoadFraction>("the supervisor's load progress");
  private readonly registry: EngineRegistry;
  private readonly spawn: SpawnFunction;
  private readonly clock: Clock;
  private readonly platform: NodeJS.Platform;
  private readonly graceMs: number;
  private readonly spare: WarmSpare | null;
  private readonly memory: ServerMemory;
  /** What every model's owner shares with this supervisor. */
  private readonly context: OwnerContext;
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
    this.memory = new ServerMemory(deps, this.platform);
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
    this.context = {
      deps,
      spawn: this.spawn,
      clock: this.clock,
      platform: this.platform,
      graceMs: this.graceMs,
      registry: this.registry,
      spare: this.spare,
      memory: this.memory,
      emit: (event) => this.events.fire(event),
      loadProgress: (modelId, fraction) => this.loadProgress.fire({ modelId, fraction }),
    };
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
    return this.ownerFor(modelId).launch(level, placement, signal);
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
    return owner === undefined ? 'stopped' : owner.evict();
  }

  /**
   * What each model's running server (loading, ready or still stopping) holds on the device,
   * bytes: measured where the driver or llama.cpp's log says, the estimate otherwise. For the
   * controller's plan; membership comes from the events, this only prices it. Runs the driver
   * query (nvidia-smi) only when a server is on the device. Never rejects.
   */
  async measure(): Promise<Map<string, number>> {
    const running = [...this.owners.values()].flatMap((owner) => (owner.server?.running ? [{ modelId: owner.modelId, server: owner.server }] : []));
    return this.memory.measure(running);
  }

  /**
   * Claims the model's ready server for one request: its endpoint, counted in flight until the
   * claim's release. Null unless the server is ready and alive (not loading, not stopping, not
   * dead while its output drains). Synchronous and O(1): the request path calls it.
   */
  claim(modelId: string): Claim | null {
    const server = this.owners.get(modelId)?.server;
    if (!server?.serving()) return null;
    const serves = server.serves;
    if (serves === null) return null;
    const slots = serves.savedSlots;
    return server.claims.add(
      { port: server.port, apiKey: server.apiKey, pid: server.pid, anthropicMessages: serves.anthropicMessages, engine: server.engine, toolCalls: serves.toolCalls },
      slots === null ? undefined : (body) => slots.restoreFor(body),
    );
  }

  /** Requests claimed on the model's current server. Synchronous. */
  inFlight(modelId: string): number {
    const server = this.owners.get(modelId)?.server;
    return server?.running ? server.claims.count : 0;
  }

  /**
   * Every server's lifecycle events (see core/contracts/server-events.ts), in order per model.
   * Listeners run synchronously; a throw is reported and the others still hear
   * (core/common/emitter.ts).
   */
  readonly onServerEvent: Event<ServerEvent> = this.events.event;

  /**
   * Every model's log lines as they are added (llama.cpp's lines as the engine writes them, and
   * llmtray's own `── llmtray:` lines), in order per model. The listener runs synchronously on
   * the line's way into the ring, so it must be cheap and must not throw.
   */
  readonly onLog: Event<LoggedLine> = this.logLines.event;

  /**
   * Each loading server's fraction as it changes (llama.cpp's loader progress, read
   * from the 503 body of a /health check: only while a model loads, at most as often as readiness
   * asks, never the same value twice in a row). For the views that show it: the admin snapshot is
   * republished with it (core/daemon/load-progress-feed.ts). Listeners run synchronously and
   * must not throw.
   *
   * Why not a ServerEvent: those are a server's life, which the controller folds into its
   * records, each transition exactly once (core/contracts/server-events.ts); a fraction decides
   * nothing and comes many times per load, so every listener and fake of that contract would have
   * to learn to skip it. Why not a callback in SupervisorDeps (like onSpareChange): its listener,
   * the admin service, is made after the supervisor, and a subscription, as for the log lines,
   * needs no placeholder to forward through.
   */
  readonly onLoadProgress: Event<LoadFraction> = this.loadProgress.event;

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
   * Whether to keep a warm spare (warm-spare.ts): the controller's verdict from its pass (enabled, models on the
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
      loadProgress: server.loadProgress,
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
    return server?.running ? this.memory.measured(server) : null;
  }

  /**
   * Stops every server, claimed or not (quitting stops everything; the clients' answers end),
   * cancelling loads, and forgets the exit hook. Blocks until they are gone.
   */
  async close(): Promise<void> {
    await this.spare?.close();
    await Promise.all([...this.owners.values()].map((owner) => owner.quit()));
    process.off('exit', this.killAllOnExit);
    await this.registry.settled();
  }

  private ownerFor(modelId: string): ModelOwner {
    let owner = this.owners.get(modelId);
    if (owner === undefined) {
      const heard = (line: string, position: number): void => {
        this.logLines.fire({ modelId, line, position });
      };
      owner = new ModelOwner(modelId, new LineRing(this.deps.logLines ?? DEFAULT_LOG_LINES, undefined, heard), this.context);
      this.owners.set(modelId, owner);
    }
    return owner;
  }
}
