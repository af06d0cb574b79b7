// The reconcile loop: drives the running model servers toward what the system wants.
//
// Level-triggered (controller-runtime's lesson): a trigger only says "look again", and every
// pass (reconcile-pass.ts) re-reads the desired state and what each server holds, computes the
// policy's plan, and applies it. Because `schedule` is a fixed point, a converged set yields an
// empty plan and the pass does nothing.
//
// This class is the loop's plumbing: when passes run (PassLoop, the resync and backoff timers),
// starting and stopping, and the calls from outside (trigger, retry, served). What it knows is
// in its records (record-store.ts), the one source: what runs is what the supervisor's
// lifecycle events said, folded in as they arrive (server-event-fold.ts); a failure climbs the
// ladder once (recovery-ladder.ts). Every question about a model (status, serving model, why
// not, where, what it holds, the warm spare's verdict) is answered from the records by the read
// model (read-model.ts), never from a copy of them.
//
// Single owner: only the controller changes a model's record, and each model has at most one
// operation in progress. Nobody outside branches on a status snapshot to mutate; they call
// trigger/retry and let the next pass decide.
import type { ModelStatus } from '../contracts/model-status.js';
import type { PlanView } from '../contracts/snapshot.js';
import type { ControllerEvent, Unservable } from '../contracts/controller-events.js';
import type { Placement } from '../contracts/plan.js';
import { Emitter, type Event } from '../common/emitter.js';
import { errorMessage } from '../contracts/error-message.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { seconds } from './derive-status.js';
import type { Classify, Clock, DesiredProvider, Log, ServerControl } from './effects.js';
import { OneShotTimer } from './one-shot-timer.js';
import { PassLoop } from './pass-loop.js';
import { ReadModel } from './read-model.js';
import { ReconcilePass } from './reconcile-pass.js';
import { RecordStore } from './record-store.js';
import { DEFAULT_HEALTHY_AFTER_MS, RecoveryLadder } from './recovery-ladder.js';
import { foldServerEvent } from './server-event-fold.js';

export { DEFAULT_HEALTHY_AFTER_MS, ENVIRONMENT_RECHECK_MS } from './recovery-ladder.js';

export interface ControllerOptions {
  provider: DesiredProvider;
  server: ServerControl;
  classify: Classify;
  clock: Clock;
  log: Log;
  /** A pass with no trigger this long after the last one, ms; the safety net for a missed trigger. <= 0 disables. Default 30 s. */
  resyncMs?: number;
  /** Delays for a model's 'retry' and for a failed pass. Default 1 s doubling to 60 s. */
  backoff?: BackoffOptions;
  /**
   * How long a relaunched server must stay ready, with nothing going wrong, for its ladder to
   * start over when it has not answered a request meanwhile, ms; read at each ready, so a reload
   * applies. Default DEFAULT_HEALTHY_AFTER_MS.
   */
  healthyAfterMs?: () => number;
}

export const DEFAULT_RESYNC_MS = 30_000;

/**
 * How late a pass may notice a model turning busy or idle when nothing waits for memory: a
 * status's Active then shows at most this late. A pass per request would cost a hot model's
 * every request a pass (reading the world, measuring each server's memory, placing): many
 * times the router's own cost.
 */
export const ACTIVITY_REFRESH_MS = 250;

export class Controller {
  private readonly server: ServerControl;
  private readonly clock: Clock;
  private readonly log: Log;
  private readonly resyncMs: number;
  private readonly backoff: BackoffOptions;

  private readonly events: Emitter<ControllerEvent>;
  /** The controller's events. Listeners run synchronously and must not throw (a throw is logged and ignored). */
  readonly onEvent: Event<ControllerEvent>;
  private readonly store: RecordStore;
  private readonly view: ReadModel;
  private readonly ladder: RecoveryLadder;
  private readonly pass: ReconcilePass;

  private readonly loop = new PassLoop(() => this.reconcile());
  private readonly resync: OneShotTimer;
  private readonly passRetry: OneShotTimer;
  private readonly activityRefresh: OneShotTimer;
  private passFailures = 0;
  /** Set while run() runs; aborted when it is asked to stop, which aborts every launch in flight. */
  private stopping: AbortController | null = null;
  /** True after a run() has ended, until the next one starts. */
  private stopped = false;

  constructor(options: ControllerOptions) {
    this.server = options.server;
    this.clock = options.clock;
    this.log = options.log;
    this.resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.resync = new OneShotTimer(this.clock);
    this.passRetry = new OneShotTimer(this.clock);
    this.activityRefresh = new OneShotTimer(this.clock);
    this.events = new Emitter<ControllerEvent>('the controller', (source, error) => this.log.error(`a listener of ${source} threw; ignored`, { error: errorMessage(error) }));
    this.onEvent = this.events.event;
    this.store = new RecordStore(this.clock, this.events);
    this.view = new ReadModel(this.store);
    const trigger = (): void => this.loop.trigger();
    const live = (): boolean => this.live();
    this.ladder = new RecoveryLadder({
      store: this.store,
      clock: this.clock,
      log: this.log,
      backoff: this.backoff,
      healthyAfterMs: options.healthyAfterMs ?? (() => DEFAULT_HEALTHY_AFTER_MS),
      live,
      trigger,
    });
    this.pass = new ReconcilePass({
      provider: options.provider,
      server: this.server,
      classify: options.classify,
      clock: this.clock,
      log: this.log,
      store: this.store,
      ladder: this.ladder,
      trigger,
      live,
      signal: () => this.stopping?.signal,
      observed: () => this.reviewSpare(),
    });
    // From construction on, so that no server's life is missed, however early it starts.
    this.server.onServerEvent((event) => {
      foldServerEvent(event, { store: this.store, ladder: this.ladder, log: this.log, trigger });
      this.reviewSpare();
    });
  }

  /**
   * Runs the loop until `signal` aborts: a pass at once, then on every trigger, retry timer
   * and resync. Blocks for the controller's lifetime. On abort it aborts the launches in
   * flight, lets the pass in progress finish, waits for those launches to settle, and
   * resolves. Rejects at once if it is already running. It does not stop model servers:
   * whoever owns them (the supervisor) does that on quit.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.stopping !== null) throw new Error('Controller.run: the controller is already running');
    const stopping = new AbortController();
    this.stopping = stopping;
    this.stopped = false;
    this.loop.start();
    this.loop.trigger();
    await new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', () => resolve(), { once: true });
    });
    stopping.abort(signal.reason);
    this.clearTimers();
    await this.loop.stop();
    await this.pass.settled();
    this.clearTimers();
    this.stopping = null;
    this.stopped = true;
    this.store.emit({ type: 'ControllerStopped', at: this.clock.now() });
  }

  /** Asks for a pass. Never blocks; a burst before or during a pass is one more pass. Dropped when not running. */
  trigger(): void {
    this.loop.trigger();
  }

  /**
   * Asks for a pass within ACTIVITY_REFRESH_MS, for a change that only a status shows (a model
   * turned busy or idle, and no request waits for memory). Never blocks; every call in that
   * window is the same pass, so a stream of requests costs a few passes a second, not one each.
   */
  refreshSoon(): void {
    if (!this.live() || this.activityRefresh.pending) return;
    this.activityRefresh.set(ACTIVITY_REFRESH_MS, () => this.loop.trigger());
  }

  /**
   * Resolves after a pass that started after this call has finished, so it saw every change
   * made before the call. Blocks for up to two passes (the one running and a fresh one), never
   * for a load. Resolves even when that pass failed (the status says what is wrong). Rejects
   * when the controller is not running or stops first.
   */
  reconcileNow(): Promise<void> {
    return this.loop.next();
  }

  /**
   * A person's retry: forgets the model's failures, which lifts quarantine and fallback, and
   * triggers a pass. Non-blocking, idempotent. False when the controller has never seen the model.
   */
  retry(modelId: string): boolean {
    const record = this.store.records.get(modelId);
    if (record === undefined) return false;
    this.log.info(`${modelId}: retry requested; its recovery ladder starts over`);
    this.ladder.reset(record);
    this.store.refresh(record);
    this.loop.trigger();
    return true;
  }

  /**
   * The model's ready server answered a request (the engine's answer began): the proof of health
   * that starts a failing model's ladder over. Non-blocking, O(1); a no-op when no server of the
   * model is ready.
   */
  served(modelId: string): void {
    const record = this.store.records.get(modelId);
    if (record !== undefined) this.ladder.served(record);
  }

  // ---- the read model's answers (read-model.ts says what each means) ---------------------

  status(modelId: string): ModelStatus | undefined {
    return this.view.status(modelId);
  }

  statuses(): ModelStatus[] {
    return this.view.statuses();
  }

  lastPlan(): PlanView | null {
    return this.view.lastPlan();
  }

  servingModel(modelId: string): string {
    return this.view.servingModel(modelId);
  }

  whyUnservable(modelId: string): Unservable | null {
    return this.view.whyUnservable(modelId);
  }

  waitReason(modelId: string): string {
    return this.view.waitReason(modelId);
  }

  yieldsTo(modelId: string): readonly string[] {
    return this.view.yieldsTo(modelId);
  }

  placement(modelId: string): Placement | null {
    return this.view.placement(modelId);
  }

  held(modelId: string): { bytes: number; placement: Placement | null } | null {
    return this.view.held(modelId);
  }

  definitionPending(modelId: string): boolean {
    return this.view.definitionPending(modelId);
  }

  /** Whether a run() has ended (quit) and no other has started: nothing will be launched any more. */
  hasStopped(): boolean {
    return this.stopped;
  }

  /** One pass with its failure turned into a backoff; never throws (PassLoop's contract). */
  private async reconcile(): Promise<void> {
    try {
      await this.pass.run();
      if (this.passFailures > 0) {
        this.passFailures = 0;
        this.passRetry.clear();
      }
    } catch (error) {
      this.passFailures++;
      const delay = backoffDelay(this.passFailures, this.backoff);
      const message = errorMessage(error);
      this.log.warn(`reconcile pass failed; trying again in ${seconds(delay)}`, { error: message, failures: this.passFailures });
      this.store.emit({ type: 'ReconcileFailed', error: message, retryInMs: delay, at: this.clock.now() });
      if (this.live()) this.passRetry.set(delay, () => this.loop.trigger());
    }
    if (this.live() && this.resyncMs > 0) this.resync.set(this.resyncMs, () => this.loop.trigger());
  }

  /** Says the warm spare's verdict again (level-triggered): after each reading of the world and each server event, once a pass has read it. */
  private reviewSpare(): void {
    if (this.store.memory !== null) this.server.setSpareWanted?.(this.view.spareWanted());
  }

  private live(): boolean {
    return this.stopping !== null && !this.stopping.signal.aborted;
  }

  private clearTimers(): void {
    this.resync.clear();
    this.passRetry.clear();
    this.activityRefresh.clear();
    this.pass.clearTimers();
    this.ladder.clearTimers();
  }
}
