// Fakes of the world the controller reconciles, for tests that must see exactly what it did.
//
// RecordingServer is a ServerControl that keeps an ordered log of launches and evictions,
// can fail a model's next N launches (or evictions) with a given error, can hold a model's
// launch or eviction pending until the test releases it, and takes claims as the router's
// requests would. It obeys the real supervisor's contract (core/contracts/server-events.ts),
// which test/integration/controller-contract.test.ts runs against both: a launch reports
// ServerSpawned at once (a loading server holds memory), then ServerReady or one
// ServerExited; a ready server ends with one ServerExited (it died) or ServerStopped (evicted);
// a claimed ready server is not evicted. A fake friendlier than that hid a real bug: it listed
// a server only once its launch resolved, the supervisor while it loads.
// FakeDesired is the DesiredProvider a test edits between passes. Neither uses timers:
// everything resolves on promise turns.
import type { DesiredProvider, DesiredState, ModelDemand, ServerControl } from '../../core/controller/effects.js';
import type { EvictOutcome } from '../../core/contracts/evict-outcome.js';
import type { ServerEvent, ServerFailureKind } from '../../core/contracts/server-events.js';
import type { Event } from '../../core/common/emitter.js';
import type { LaunchLevel } from '../../core/contracts/launch-level.js';
import type { Placement } from '../../core/contracts/plan.js';

export type ServerCall = { op: 'launch'; modelId: string; level: LaunchLevel } | { op: 'evict'; modelId: string };

interface Gate {
  promise: Promise<void>;
  open: () => void;
  /** Whether a held launch rejects when its signal aborts (a real supervisor may take a while to stop one). */
  honourAbort: boolean;
}

function gate(honourAbort: boolean): Gate {
  let open = (): void => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open, honourAbort };
}

interface FakeServer {
  modelId: string;
  level: LaunchLevel;
  pid: number;
  ready: boolean;
  deviceBytes: number;
  claims: number;
  /** Cancels its load, as an eviction does to a loading server. */
  cancelLoad: AbortController;
}

/** A scripted launch failure: the kind and reason its ServerExited carries, and whether it fails before a process runs. */
export interface ScriptedFailure {
  kind: ServerFailureKind;
  reason: string;
  beforeSpawn?: boolean;
}

export class RecordingServer implements ServerControl {
  /** Every launch and evict, in the order the controller called them. */
  readonly calls: ServerCall[] = [];
  /** Every prepareLaunch hint, with how many calls had been made before it (0: before the first launch or evict). */
  readonly preparations: { modelId: string; level: LaunchLevel; placement: Placement; afterCalls: number }[] = [];
  /** Every lifecycle event, in the order it was reported. */
  readonly events: ServerEvent[] = [];
  /** How many times measure() was read: one per pass. */
  measureReads = 0;
  /** Every warm-spare verdict the controller said, in order (ServerControl.setSpareWanted). */
  readonly spareVerdicts: boolean[] = [];
  /** Where each model's last launch was placed. */
  readonly placements = new Map<string, Placement>();
  private readonly servers = new Map<string, FakeServer>();
  private readonly launchFailures = new Map<string, { failure: ScriptedFailure; times: number }>();
  private readonly evictFailures = new Map<string, { error: unknown; times: number }>();
  private readonly holds = new Map<string, Gate>();
  private readonly listeners = new Set<(event: ServerEvent) => void>();
  private nextPid = 1000;

  /** `deviceBytesOf` says what a launched server reports holding. */
  constructor(
    private readonly deviceBytesOf: (modelId: string, level: LaunchLevel) => number = () => 0,
    private readonly now: () => number = () => 0,
  ) {}

  readonly onServerEvent: Event<ServerEvent> = (listener) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  /** Puts a ready server in place, as if an earlier launch had made it (spawned, then ready). */
  place(modelId: string, level: LaunchLevel = 'full', deviceBytes = this.deviceBytesOf(modelId, level)): void {
    const server = this.spawn(modelId, level, deviceBytes);
    server.ready = true;
    this.emit({ type: 'ServerReady', modelId, level, pid: server.pid, at: this.now() });
  }

  /** The model's ready server ends on its own (a crash mid-run, a hang that was killed). */
  die(modelId: string, kind: ServerFailureKind = 'crash', reason = `${modelId}'s server was killed by SIGKILL`): void {
    const server = this.servers.get(modelId);
    if (server === undefined) throw new Error(`RecordingServer: no server for '${modelId}' to die`);
    this.servers.delete(modelId);
    this.emit({ type: 'ServerExited', modelId, level: server.level, pid: server.pid, kind, reason, wasReady: server.ready, exitCode: null, signal: 'SIGKILL', at: this.now() });
  }

  isRunning(modelId: string): boolean {
    return this.servers.has(modelId);
  }

  isReady(modelId: string): boolean {
    return this.servers.get(modelId)?.ready === true;
  }

  /** The next `times` launches of the model fail while loading (or before a process runs) with `failure`. */
  failLaunch(modelId: string, failure: ScriptedFailure, times = 1): void {
    this.launchFailures.set(modelId, { failure, times });
  }

  /** The next `times` evictions of the model reject with `error` (it may still hold memory). */
  failEvict(modelId: string, error: unknown, times = 1): void {
    this.evictFailures.set(modelId, { error, times });
  }

  /**
   * The next launch or eviction of the model stays pending until release(). A held launch
   * rejects when its signal aborts, unless `honourAbort` is false.
   */
  hold(op: ServerCall['op'], modelId: string, { honourAbort = true } = {}): void {
    this.holds.set(`${op} ${modelId}`, gate(honourAbort));
  }

  release(op: ServerCall['op'], modelId: string): void {
    const key = `${op} ${modelId}`;
    this.holds.get(key)?.open();
    this.holds.delete(key);
  }

  /** A request claims the model's ready server, as the router does; null when it is not ready. Returns the release. */
  claim(modelId: string): (() => void) | null {
    const server = this.servers.get(modelId);
    if (server === undefined || !server.ready) return null;
    server.claims++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      server.claims--;
    };
  }

  inFlight(modelId: string): number {
    return this.servers.get(modelId)?.claims ?? 0;
  }

  launches(): { modelId: string; level: LaunchLevel }[] {
    return this.calls.flatMap((c) => (c.op === 'launch' ? [{ modelId: c.modelId, level: c.level }] : []));
  }

  evictions(): string[] {
    return this.calls.flatMap((c) => (c.op === 'evict' ? [c.modelId] : []));
  }

  async measure(): Promise<Map<string, number>> {
    this.measureReads++;
    return new Map([...this.servers.values()].map((s) => [s.modelId, s.deviceBytes]));
  }

  async launch(modelId: string, level: LaunchLevel, placement: Placement, signal: AbortSignal): Promise<void> {
    this.calls.push({ op: 'launch', modelId, level });
    this.placements.set(modelId, placement);
    const current = this.servers.get(modelId);
    if (current?.ready === true && current.level === level) return;
    if (current !== undefined) this.stop(current);
    const scripted = this.launchFailures.get(modelId);
    const failure = scripted !== undefined && scripted.times > 0 ? scripted.failure : null;
    if (failure !== null && scripted !== undefined) scripted.times--;
    if (failure?.beforeSpawn === true) {
      this.emit({ type: 'ServerExited', modelId, level, pid: null, kind: failure.kind, reason: failure.reason, wasReady: false, exitCode: null, signal: null, at: this.now() });
      throw new ScriptedLaunchError(failure);
    }
    const server = this.spawn(modelId, level, this.deviceBytesOf(modelId, level));
    try {
      await this.passHold('launch', modelId, AbortSignal.any([signal, server.cancelLoad.signal]));
    } catch (error) {
      this.stop(server);
      throw error;
    }
    if (failure !== null) {
      this.servers.delete(modelId);
      this.emit({ type: 'ServerExited', modelId, level, pid: server.pid, kind: failure.kind, reason: failure.reason, wasReady: false, exitCode: 1, signal: null, at: this.now() });
      // As the supervisor's: the rejection comes turns after the event (the process's output
      // drains, the owner's queue moves on), late enough for the controller to have started the
      // next launch meanwhile.
      await new Promise((resolve) => setImmediate(resolve));
      throw new ScriptedLaunchError(failure);
    }
    server.ready = true;
    this.emit({ type: 'ServerReady', modelId, level, pid: server.pid, at: this.now() });
  }

  prepareLaunch(modelId: string, level: LaunchLevel, placement: Placement): void {
    this.preparations.push({ modelId, level, placement, afterCalls: this.calls.length });
  }

  setSpareWanted(wanted: boolean): void {
    this.spareVerdicts.push(wanted);
  }

  async evict(modelId: string): Promise<EvictOutcome> {
    this.calls.push({ op: 'evict', modelId });
    await this.passHold('evict', modelId);
    const scripted = this.evictFailures.get(modelId);
    if (scripted !== undefined && scripted.times > 0) {
      scripted.times--;
      throw scripted.error;
    }
    // Checked now, at the moment of stopping, as the supervisor does.
    const server = this.servers.get(modelId);
    if (server === undefined) return 'stopped';
    if (server.ready && server.claims > 0) return 'claimed';
    this.stop(server);
    return 'stopped';
  }

  private spawn(modelId: string, level: LaunchLevel, deviceBytes: number): FakeServer {
    const server: FakeServer = { modelId, level, pid: this.nextPid++, ready: false, deviceBytes, claims: 0, cancelLoad: new AbortController() };
    this.servers.set(modelId, server);
    this.emit({ type: 'ServerSpawned', modelId, level, pid: server.pid, at: this.now() });
    return server;
  }

  private stop(server: FakeServer): void {
    if (this.servers.get(server.modelId) !== server) return;
    this.servers.delete(server.modelId);
    if (!server.ready) server.cancelLoad.abort(new DOMException(`'${server.modelId}' was evicted while loading`, 'AbortError'));
    this.emit({ type: 'ServerStopped', modelId: server.modelId, level: server.level, pid: server.pid, at: this.now() });
  }

  private emit(event: ServerEvent): void {
    this.events.push(event);
    for (const listener of [...this.listeners]) listener(event);
  }

  /** Waits for a hold, if any. */
  private async passHold(op: ServerCall['op'], modelId: string, signal?: AbortSignal): Promise<void> {
    const held = this.holds.get(`${op} ${modelId}`);
    if (held === undefined) return;
    await new Promise<void>((resolve, reject) => {
      void held.promise.then(resolve);
      if (held.honourAbort) signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
  }
}

/** What a scripted launch failure rejects with, like the supervisor's LaunchError. */
export class ScriptedLaunchError extends Error {
  readonly kind: ServerFailureKind;
  constructor(failure: ScriptedFailure) {
    super(failure.reason);
    this.kind = failure.kind;
  }
}

/** A DesiredProvider whose state the test edits; every read is a copy, like a fresh probe. */
export class FakeDesired implements DesiredProvider {
  reads = 0;
  /** When set, reads reject with it (a probe that cannot read the GPU). */
  readError: unknown = null;

  constructor(public state: DesiredState) {}

  async read(): Promise<DesiredState> {
    this.reads++;
    if (this.readError !== null) throw this.readError;
    return structuredClone(this.state);
  }

  model(modelId: string): ModelDemand {
    const found = this.state.models.find((m) => m.modelId === modelId);
    if (found === undefined) throw new Error(`FakeDesired: no model '${modelId}'`);
    return found;
  }

  /** Changes one model's demand in place. */
  update(modelId: string, change: Partial<ModelDemand>): void {
    Object.assign(this.model(modelId), change);
  }
}
