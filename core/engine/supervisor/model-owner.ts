// One model's owner: every command for the model (launch, evict, a hung server's kill) runs
// through its queue, one at a time, and each re-reads the owner's state when its turn comes.
// The alternative — callers reading state() and then deciding — is the race that made
// llama-swap start two servers for one cold model. Two launches at the same level join one
// load; a launch at another level, or an eviction, waits its turn (an eviction first cancels a
// load in progress, so it does not wait out a long load it is about to undo).
//
// The owner is also the one that reports each server's life (core/contracts/server-events.ts):
// spawned, ready, exited with the kind and llama.cpp's reason, stopped on request, each from the
// server's own transition (server-process.ts). Each is reported once, from the one place that
// sees it, so a failure climbs the recovery ladder once however many others look.
import { DEFAULT_HANG_LIMIT_MS } from '../hang-limit.js';
import { classifyFailure, classifySetupFailure, LaunchError, type FailureClassification } from '../failure-classifier.js';
import { faultyGpu } from '../gpu-fault.js';
import type { LaunchSpec } from '../launch-spec.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';
import { removeApiKeyFile } from './api-key-file.js';
import { PORT_IN_USE } from './free-port.js';
import type { LineRing } from './log-ring.js';
import { waitForMemoryBack } from './memory/memory-wait.js';
import { signalTree, terminateTree } from './process-tree.js';
import { lookAtEngine } from './hang/engine-look.js';
import { HangWatch } from './hang/hang-watch.js';
import { ServerProcess } from './server-process.js';
import { endedByOf, IllegalTransition, readyAtOf, type EndedBy, type ServerState } from './server-state.js';
import type { EvictOutcome } from './supervisor-types.js';
import { cancelled, LOG_TAIL_LINES, type LaunchOwner, type OwnerContext } from './owner-port.js';
import { launchNow } from './launch.js';

interface PendingLaunch {
  level: LaunchLevel;
  promise: Promise<void>;
  cancel: AbortController;
  /** Callers still waiting; when the last one gives up, the load is cancelled. */
  waiters: number;
}

export class ModelOwner implements LaunchOwner {
  server: ServerProcess | null = null;
  /** Launches queued or running, oldest first; a new launch joins the one at its level. */
  pending: PendingLaunch[] = [];
  /** Spawn to ready of the last load that became ready, ms. */
  lastLoadMs: number | null = null;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    readonly modelId: string,
    readonly log: LineRing,
    readonly ctx: OwnerContext,
  ) {}

  /** Runs `command` after every command queued before it. */
  run<T>(command: () => Promise<T>): Promise<T> {
    const next = this.queue.then(command, command);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** See Supervisor.launch. */
  launch(level: LaunchLevel, placement: Placement | undefined, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    // Only the newest launch may be joined: joining an older one at this level while a launch
    // at another level is queued behind it would resolve, then see the model relaunched away.
    let pending = this.pending.at(-1);
    if (pending === undefined || pending.level !== level || pending.cancel.signal.aborted) {
      const cancel = new AbortController();
      const promise = this.run(() => launchNow(this, level, placement, cancel.signal));
      const created: PendingLaunch = { level, promise, cancel, waiters: 0 };
      pending = created;
      this.pending.push(created);
      const forget = (): void => {
        this.pending = this.pending.filter((p) => p !== created);
        // No launch in progress any more may soon be the moment to start the next spare.
        this.ctx.spare?.workEnded();
      };
      promise.then(forget, forget);
    }
    return this.join(pending, signal);
  }

  /** See Supervisor.evict. */
  evict(): Promise<EvictOutcome> {
    for (const pending of this.pending) pending.cancel.abort(cancelled(`'${this.modelId}' was evicted while loading`));
    return this.run(async () => {
      const server = this.server;
      if (!server?.running) return 'stopped';
      if (server.serving() && server.claims.count > 0) return 'claimed';
      const savedSlots = server.serves?.savedSlots ?? null;
      if (savedSlots !== null) {
        // What of its conversations changed since its idle save, before they go with it
        // (llama-server/saved-slots.ts). A request that claimed it meanwhile keeps it: the
        // eviction is answered as one of a busy server.
        await savedSlots.saveAll();
        if (server.serving() && server.claims.count > 0) return 'claimed';
      }
      // The claims at the moment of stopping a live process, in its own log: the soak counts the
      // evictions this line shows with a request in flight (test/soak/server-log.ts). The check
      // above keeps it at 0; the line is what shows it if that ever stops being so.
      if (!server.gone) this.log.push(`── llmtray: evicting '${this.modelId}' (pid ${server.pid}, ${server.phase}) with ${server.claims.count} request(s) in flight`);
      await this.stop(server, { why: 'requested' });
      return 'stopped';
    });
  }

  /** Cancels its loads and stops its server, claimed or not: llmtray is quitting. Blocks until it is gone. */
  quit(): Promise<void> {
    for (const pending of this.pending) pending.cancel.abort(cancelled(`'${this.modelId}' was stopped: llmtray is quitting`));
    return this.run(async () => {
      if (this.server?.running) await this.stop(this.server, { why: 'requested' });
    });
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

  /**
   * Ends a server's tree because of `endedBy` and, for a ready one, waits for its memory. Only
   * called by the owner's commands. The mark ('stopping') is set before any await: from here on
   * the server takes no claims and its exit is not a failure (unless it was ended for a hang). A
   * server already stopping keeps the reason it was first stopped for. A process already gone
   * (its output still draining) is not marked: it ended on its own before anyone asked, and an
   * eviction arriving then must not report its death as a stop.
   */
  async stop(server: ServerProcess, endedBy: EndedBy): Promise<void> {
    const before = server.state;
    const wasReady = before.kind !== 'exited' && readyAtOf(before) !== null;
    // Its own servers are never spares: an adopted spare is this model's 'loading'.
    server.markStopping(endedBy);
    server.closeHangWatch();
    const probe = this.ctx.deps.memoryProbe;
    const freeBefore = wasReady && probe ? await probe().catch(() => null) : null;
    // Only the memory wait needs the footprint; without one, asking the driver would be wasted.
    const footprintBytes = freeBefore === null ? 0 : this.ctx.memory.deviceBytesOf(this.modelId, server, await this.ctx.memory.gpuUsage());
    const terminating = terminateTree(server.pid, {
      graceMs: this.ctx.graceMs,
      leaderExited: server.exited,
      platform: this.ctx.platform,
      onKill: () => server.markKilledByUs(),
    });
    // A stopped process (SIGSTOP, the usual way a hang shows up in a debugger) cannot act on
    // SIGTERM until it runs again; letting it run lets it stop cleanly instead of waiting out
    // the grace for the SIGKILL.
    if (endedByOf(server.state)?.why === 'hung') signalTree(server.pid, [], 'SIGCONT');
    const { forced } = await terminating;
    if (forced) this.log.push(`── llmtray: '${this.modelId}' did not stop within ${this.ctx.graceMs} ms of SIGTERM; sent SIGKILL`);
    if (probe && freeBefore !== null) {
      const back = await waitForMemoryBack({
        probe,
        clock: this.ctx.clock,
        freeBefore,
        footprintBytes,
        fraction: this.ctx.deps.memoryWait?.fraction ?? 0.75,
        maxMs: this.ctx.deps.memoryWait?.maxMs ?? 5_000,
        pollMs: this.ctx.deps.memoryWait?.pollMs ?? 100,
      });
      if (!back) this.log.push(`── llmtray: device memory of '${this.modelId}' was not back after ${this.ctx.deps.memoryWait?.maxMs ?? 5_000} ms; launching anyway`);
    }
  }

  /**
   * Requests started or stopped being claimed on `server`: hang detection runs exactly while
   * some are in flight on a ready server.
   */
  busyChanged(server: ServerProcess, spec: LaunchSpec, busy: boolean): void {
    if (!busy) this.ctx.spare?.workEnded();
    // A llama-server's conversations are saved while it is idle, so that its eviction need not wait for them.
    // What a ready server serves: none while it loads, stops or has gone.
    const savedSlots = server.serves?.savedSlots;
    if (busy) savedSlots?.busy();
    else savedSlots?.idle(() => server.serving() && server.claims.count === 0);
    if (!busy || !server.serving()) {
      server.pauseHangWatch();
      return;
    }
    server.watchHangs(() => new HangWatch({
      clock: this.ctx.clock,
      limitMs: (this.ctx.deps.hangLimitMs ?? ((s: LaunchSpec) => s.hangLimitMs ?? DEFAULT_HANG_LIMIT_MS))(spec),
      progressMark: () => server.claims.progressMark,
      inFlight: () => server.claims.count,
      look: (timeoutMs) => lookAtEngine(server.port, server.apiKey, timeoutMs),
      onHung: (reason) => this.hung(server, reason),
    }));
  }

  /** A busy server made no progress for its hang limit: its clients hear why, then it is killed. */
  private hung(server: ServerProcess, reason: string): void {
    if (server.state.kind !== 'ready') return;
    this.log.push(`── llmtray: '${this.modelId}' (pid ${server.pid}) is hung: ${reason}; killing it`);
    const by: EndedBy = { why: 'hung', reason };
    // Marked at once, not on the owner's turn: from now on it takes no claims, and its exit is a hang.
    server.markStopping(by);
    // Before the kill: a client whose socket is reset first could not tell a hang from a crash.
    server.claims.loseAll({ kind: 'hang', reason });
    void this.run(() => this.stop(server, by));
  }

  /** The one report of how a server ended: classified here once, emitted once. */
  afterExit(server: ServerProcess, keyFile: string | null, loadTimeoutMs: number): void {
    if (keyFile !== null) removeApiKeyFile(keyFile);
    server.closeHangWatch();
    void this.ctx.registry.remove(server.pid).catch(() => undefined);
    const state = server.state;
    if (state.kind !== 'draining') throw new IllegalTransition(state.kind, 'exited');
    const { exit, readyAt } = state;
    this.log.push(`── llmtray: '${this.modelId}' (pid ${server.pid}) ended: ${exit.signal ?? `exit code ${exit.exitCode}`}`);
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
      server.markExited(null, endedBy === null);
      return;
    }
    const failure: FailureClassification =
      endedBy?.why === 'hung'
        ? { kind: 'hang', reason: endedBy.reason }
        : classifyFailure({ ...exit, log, timedOutWaitingForReady: endedBy?.why === 'load-timeout', loadTimeoutMs, diedAfterReady: wasReady });
    server.markExited(failure, false);
  }

  /**
   * The one place a launched server's states become reports (core/contracts/server-events.ts),
   * each once, as its only writer makes them: 'loading' with `spawnedAt` is ServerSpawned (a
   * process now holds memory); 'ready' is ServerReady; 'exited' is ServerStopped after a stop
   * (or a port another program took), else ServerExited with its classification. The other
   * states report nothing, and a warm spare's own life never comes here: it has no launch until
   * one adopts it, and then it is this model's 'loading'.
   */
  transitioned(server: ServerProcess, state: ServerState): void {
    const base = { modelId: this.modelId, level: server.level, pid: server.pid };
    if (state.kind === 'loading' && state.spawnedAt !== undefined) this.ctx.emit({ type: 'ServerSpawned', ...base, at: state.spawnedAt });
    if (state.kind === 'ready') this.ctx.emit({ type: 'ServerReady', ...base, at: state.at });
    if (state.kind !== 'exited') return;
    const at = this.ctx.clock.now();
    if (state.failure === null) this.ctx.emit({ type: 'ServerStopped', ...base, at });
    else {
      // A fault of the card names the plan's GPU it was on, from where this launch placed it (gpu-fault.ts).
      const { gpuFault, ...classified } = state.failure;
      const fault = gpuFault === undefined ? {} : { gpuFault: { ...gpuFault, gpu: faultyGpu(gpuFault, server.placement, server.engine, this.ctx.deps.gpuIdentity) } };
      // A launch whose process never started has no pid (core/contracts/server-events.ts).
      this.ctx.emit({ type: 'ServerExited', ...base, pid: server.ran ? server.pid : null, at, ...classified, ...fault, wasReady: state.readyAt !== null, ...state.exit });
    }
  }

  /**
   * A launch that failed before any process ran: reported once, by its life's last change, and
   * returned for the launch to reject with. `unstarted`: the server whose command could not be
   * spawned, its exit already seen; without one (nothing was spawned, or the spec, argv or key file
   * failed first), the launch's own life that never ran a process (ServerProcess.neverRan).
   */
  failedBeforeStart(level: LaunchLevel, placement: Placement | undefined, reason: string, unstarted: ServerProcess | null = null): LaunchError {
    this.log.push(`── llmtray: could not launch '${this.modelId}': ${reason}`);
    // A file that cannot be read (the catalog said so) is hopeless, not a crash to retry.
    const { kind, reason: why } = classifySetupFailure(reason);
    const failure = { kind, reason: why };
    if (unstarted?.state.kind === 'draining') unstarted.markExited(failure, false);
    else {
      const onTransition = (state: ServerState, server: ServerProcess): void => this.transitioned(server, state);
      ServerProcess.neverRan({ level, placement, startedAt: this.ctx.clock.now(), onLine: (line) => this.log.push(line), onTransition }, failure);
    }
    return new LaunchError(this.modelId, { ...failure, exitCode: null, signal: null, logTail: this.log.toArray(LOG_TAIL_LINES) });
  }
}
