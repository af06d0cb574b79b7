// The reconcile loop: drives the running model servers toward what the system wants.
//
// Level-triggered (controller-runtime's lesson): a trigger only says "look again", and every
// pass re-reads the desired state and the resident set, computes the policy's plan, and
// applies it: evictions first, awaited until their memory is back, then launches at the level
// the model's recovery state asks for. Because `schedule` is a fixed point, a converged set
// yields an empty plan and the pass does nothing.
//
// Launches are started by a pass but not awaited by it. Why: a load takes seconds to
// minutes, and a pass that waited for it would hold every other decision hostage (the
// router's `reconcileNow` promises "one pass, not a load"; a shrinking budget must be able to
// evict meanwhile). A launch in flight counts as resident and active in later passes, so it is
// neither launched twice nor evicted halfway; its end (ready or failed) triggers a pass.
//
// Single owner: only this class changes a model's record, and each model has at most one
// operation in progress. Nobody outside branches on a status snapshot to mutate; they call
// trigger/retry and let the next pass decide.
import { footprintAt, type LaunchLevel } from '../policy/levels.js';
import { hostMemoryReason } from '../policy/reasons.js';
import { launchLevelAfter, type FailureKind } from '../policy/recover.js';
import { schedule, type Plan } from '../policy/schedule.js';
import type { ModelStatus } from '../contracts/model-status.js';
import type { PlanView } from '../contracts/snapshot.js';
import { ModelUnservableError, type ControllerEvent, type Unservable } from '../contracts/controller-events.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { deriveStatus, sameStatus, seconds } from './derive-status.js';
import type { Classify, Clock, DesiredProvider, DesiredState, Log, ModelDemand, ResidentServer, ServerControl } from './effects.js';
import {
  fallbackReason,
  newRecord,
  NO_FAILURE,
  quarantineReason,
  servingModelOf,
  verdictOf,
  type ModelRecord,
} from './model-record.js';
import { OneShotTimer } from './one-shot-timer.js';
import { PassLoop } from './pass-loop.js';
import { policyInputs } from './policy-inputs.js';

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
}

export const DEFAULT_RESYNC_MS = 30_000;

/** States in which the model that answers requests is up. */
const SERVING: ReadonlySet<ModelStatus['state']> = new Set(['ready', 'active', 'degraded']);

export class Controller {
  private readonly provider: DesiredProvider;
  private readonly server: ServerControl;
  private readonly classify: Classify;
  private readonly clock: Clock;
  private readonly log: Log;
  private readonly resyncMs: number;
  private readonly backoff: BackoffOptions;

  private readonly records = new Map<string, ModelRecord>();
  private demands = new Map<string, ModelDemand>();
  private running = new Map<string, ResidentServer>();
  private plan: PlanView | null = null;
  /** The models the last pass asked the policy for. */
  private desiredIds = new Set<string>();

  private readonly loop = new PassLoop(() => this.reconcile());
  private readonly resync: OneShotTimer;
  private readonly passRetry: OneShotTimer;
  private readonly retryTimers = new Map<string, OneShotTimer>();
  private passFailures = 0;
  /** Set while run() runs; aborted when it is asked to stop, which aborts every launch in flight. */
  private stopping: AbortController | null = null;
  /** True after a run() has ended, until the next one starts. */
  private stopped = false;
  private readonly launches = new Set<Promise<void>>();

  private readonly listeners = new Set<(event: ControllerEvent) => void>();
  /** Pending waitUntilReady calls, each re-checked after every event and when the controller stops. */
  private readonly readinessChecks = new Set<() => void>();

  constructor(options: ControllerOptions) {
    this.provider = options.provider;
    this.server = options.server;
    this.classify = options.classify;
    this.clock = options.clock;
    this.log = options.log;
    this.resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.resync = new OneShotTimer(this.clock);
    this.passRetry = new OneShotTimer(this.clock);
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
    await Promise.allSettled([...this.launches]);
    this.clearTimers();
    this.stopping = null;
    this.stopped = true;
    for (const check of [...this.readinessChecks]) check();
  }

  /** Asks for a pass. Never blocks; a burst before or during a pass is one more pass. Dropped when not running. */
  trigger(): void {
    this.loop.trigger();
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
    const record = this.records.get(modelId);
    if (record === undefined) return false;
    this.log.info(`${modelId}: retry requested; its recovery ladder starts over`);
    this.resetRecovery(record);
    this.refresh(record);
    this.loop.trigger();
    return true;
  }

  /**
   * A ready server ended on its own (a crash mid-run, the OOM killer). The supervisor tells
   * the controller so the death climbs the recovery ladder like a failed launch, instead of
   * the next pass silently relaunching it: a model that dies on every request must end
   * quarantined, with llama.cpp's reason, not restart forever. Non-blocking; ignored for a
   * model the controller is not running (an eviction's own stop is not a death).
   */
  serverDied(modelId: string, kind: FailureKind, error: string): void {
    const running = this.running.get(modelId);
    const record = this.records.get(modelId);
    if (running === undefined || record === undefined || record.op !== null) return;
    this.running.delete(modelId);
    this.launchFailed(record, running.level, kind, error, 'died while serving');
  }

  /** The model's status as last published, or undefined when the controller has not seen it. */
  status(modelId: string): ModelStatus | undefined {
    return this.records.get(modelId)?.status ?? undefined;
  }

  /** Every known model's status, by id. */
  statuses(): ModelStatus[] {
    return [...this.records.values()]
      .flatMap((r) => (r.status === null ? [] : [r.status]))
      .sort((a, b) => (a.modelId < b.modelId ? -1 : a.modelId > b.modelId ? 1 : 0));
  }

  /** The last pass's plan with its reasons and when it was made; null before the first pass. */
  lastPlan(): PlanView | null {
    return this.plan;
  }

  /** The model that answers for `modelId`: itself, or its fallback while in 'fallback'. Pure lookup. */
  servingModel(modelId: string): string {
    return servingModelOf(modelId, this.records, this.demands);
  }

  /**
   * Why the model will not come if asked now, or null when it may: quarantined (final until
   * a retry), or left out of the last plan (may be stale: call reconcileNow and ask again
   * before refusing). While it falls back, its fallback's problem counts as its own. Pure lookup.
   */
  whyUnservable(modelId: string): Unservable | null {
    const own = this.ownUnservable(modelId);
    if (own !== null) return own;
    const serving = this.servingModel(modelId);
    if (serving === modelId) return null;
    const inner = this.ownUnservable(serving);
    return inner === null ? null : { code: inner.code, reason: `its fallback ${serving} is unavailable: ${inner.reason}` };
  }

  /**
   * Resolves when the model that serves for `modelId` is up (ready, active or degraded), by
   * notification. Blocks until then; does not itself ask for the model. Rejects with
   * ModelUnservableError as soon as whyUnservable has an answer, with `signal.reason` when
   * `signal` aborts, and with an Error when the controller's run ends (a wait that begins
   * before run() starts just waits).
   */
  waitUntilReady(modelId: string, signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const finish = (): void => {
        this.readinessChecks.delete(check);
        signal.removeEventListener('abort', check);
      };
      const check = (): void => {
        const serving = this.status(this.servingModel(modelId));
        const unservable = this.whyUnservable(modelId);
        if (signal.aborted) reject(signal.reason);
        else if (serving !== undefined && SERVING.has(serving.state)) resolve();
        else if (unservable !== null) reject(new ModelUnservableError(unservable));
        else if (this.stopped) reject(new Error(`the controller stopped, so ${modelId} will not be loaded`));
        else return;
        finish();
      };
      this.readinessChecks.add(check);
      signal.addEventListener('abort', check);
      check();
    });
  }

  /** Subscribes to the controller's events; returns the unsubscribe. Listeners run synchronously and must not throw (a throw is logged and ignored). */
  onEvent(listener: (event: ControllerEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // ---- the pass -------------------------------------------------------------------------

  /** One pass with its failure turned into a backoff; never throws (PassLoop's contract). */
  private async reconcile(): Promise<void> {
    try {
      await this.applyOnce();
      if (this.passFailures > 0) {
        this.passFailures = 0;
        this.passRetry.clear();
      }
    } catch (error) {
      this.passFailures++;
      const delay = backoffDelay(this.passFailures, this.backoff);
      const message = describe(error);
      this.log.warn(`reconcile pass failed; trying again in ${seconds(delay)}`, { error: message, failures: this.passFailures });
      this.emit({ type: 'ReconcileFailed', error: message, retryInMs: delay, at: this.clock.now() });
      if (this.live()) this.passRetry.set(delay, () => this.loop.trigger());
    }
    if (this.live() && this.resyncMs > 0) this.resync.set(this.resyncMs, () => this.loop.trigger());
  }

  private async applyOnce(): Promise<void> {
    // Taken before reading: a launch that ends while the reads are in flight must still count
    // as resident in this pass, or the pass could launch it a second time.
    const loading = new Map<string, LaunchLevel>();
    for (const r of this.records.values()) if (r.op?.kind === 'loading') loading.set(r.modelId, r.op.level);

    const [state, running] = await Promise.all([this.provider.read(), this.server.resident()]);
    this.observe(state, running);
    const inputs = policyInputs({ demands: this.demands, records: this.records, running, loading });
    this.desiredIds = new Set(inputs.desired.map((d) => d.modelId));
    const plan = schedule(inputs.desired, inputs.resident, state.budgetBytes);
    const planChanged = this.recordPlan(plan);
    await this.evictAll(plan.evict);
    const acted = this.startLaunches(plan.launch, state.hostFreeBytes);
    if (this.plan !== null && (planChanged || plan.evict.length > 0 || acted)) this.emit({ type: 'PlanApplied', plan: this.plan });
  }

  private observe(state: DesiredState, running: readonly ResidentServer[]): void {
    this.demands = new Map(state.models.map((m) => [m.modelId, m]));
    const before = this.running;
    this.running = new Map(running.map((r) => [r.modelId, r]));
    // A server that is gone though nobody stopped it died on its own. The supervisor says so
    // through serverDied, with llama.cpp's reason, but a pass may look first; either way the
    // death must climb the ladder, or a model that dies on every request restarts forever.
    for (const [modelId, was] of before) {
      const record = this.records.get(modelId);
      if (this.running.has(modelId) || record === undefined || record.op !== null) continue;
      this.launchFailed(record, was.level, 'crash', `${modelId}'s server ended without being asked to`, 'died while serving');
    }
    for (const demand of state.models) {
      const record = this.recordFor(demand.modelId);
      if (record.definitionHash !== null && record.definitionHash !== demand.definitionHash && record.recovery.attempts > 0) {
        this.log.info(`${demand.modelId}: its definition changed; its recovery ladder starts over`);
        this.resetRecovery(record);
      }
      record.definitionHash = demand.definitionHash;
    }
    for (const r of running) this.recordFor(r.modelId);
    for (const [modelId, record] of this.records) {
      if (this.demands.has(modelId) || this.running.has(modelId) || record.op !== null) continue;
      this.retryTimers.get(modelId)?.clear();
      this.retryTimers.delete(modelId);
      this.records.delete(modelId);
    }
  }

  /** Keeps the plan and each model's reason for being left out; true when either changed. */
  private recordPlan(plan: Plan): boolean {
    const previous = this.plan;
    this.plan = { at: this.clock.now(), launch: plan.launch, evict: plan.evict, unschedulable: plan.unschedulable };
    const reasons = new Map(plan.unschedulable.map((u) => [u.modelId, u.reason]));
    for (const record of this.records.values()) {
      const reason = reasons.get(record.modelId) ?? null;
      if (reason === record.unschedulableReason) continue;
      // Logged on change only: the same sentence every resync would bury everything else.
      if (reason === null) this.log.info(`${record.modelId} is no longer left out of the plan`);
      else this.log.info(`${record.modelId} does not fit: ${reason}`);
      record.unschedulableReason = reason;
      this.emit({ type: 'ModelUnschedulableChanged', modelId: record.modelId, reason, at: this.clock.now() });
    }
    for (const record of this.records.values()) this.refresh(record);
    const { at: _then, ...before } = previous ?? { at: 0 };
    const { at: _now, ...after } = this.plan;
    return JSON.stringify(before) !== JSON.stringify(after);
  }

  /** Evicts in parallel and waits for all; throws (failing the pass, so nothing launches) if any failed. */
  private async evictAll(modelIds: readonly string[]): Promise<void> {
    const results = await Promise.allSettled(modelIds.map((id) => this.evictOne(id)));
    const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [`${modelIds[i]}: ${describe(r.reason)}`] : []));
    if (failures.length > 0) throw new Error(`could not evict ${failures.join('; ')}`);
  }

  private async evictOne(modelId: string): Promise<void> {
    const record = this.recordFor(modelId);
    this.log.info(`evicting ${modelId}`);
    this.setOp(record, { kind: 'evicting', level: this.running.get(modelId)?.level ?? 'full' });
    try {
      await this.server.evict(modelId);
      this.running.delete(modelId);
    } finally {
      this.setOp(record, null);
    }
  }

  /** Starts the plan's launches that are not backing off; true when it started or failed any. */
  private startLaunches(modelIds: readonly string[], hostFreeBytes: number): boolean {
    let hostFree = hostFreeBytes;
    let acted = false;
    const now = this.clock.now();
    for (const modelId of modelIds) {
      const record = this.records.get(modelId);
      const demand = this.demands.get(modelId);
      const signal = this.stopping?.signal;
      if (record === undefined || demand === undefined || signal === undefined || signal.aborted || record.op !== null) continue;
      if (record.retry !== null && record.retry.at > now) continue; // its retry timer triggers a pass
      const level = launchLevelAfter(record.recovery);
      acted = true;
      if (level === 'minimal') {
        // A CPU-only launch that RAM cannot hold would be killed by the OOM killer minutes
        // into the load; refusing it now with the numbers is the same 'oom' step, sooner.
        const need = footprintAt('minimal', demand.estimate).hostBytes;
        if (need > hostFree) {
          this.launchFailed(record, level, 'oom', `${modelId} ${hostMemoryReason(need, hostFree)}`);
          continue;
        }
        hostFree -= need;
      }
      const launch = this.launchOne(record, level, signal);
      this.launches.add(launch);
      void launch.finally(() => this.launches.delete(launch));
    }
    return acted;
  }

  private async launchOne(record: ModelRecord, level: LaunchLevel, signal: AbortSignal): Promise<void> {
    const { modelId } = record;
    this.log.info(`launching ${modelId} at the ${level} level`);
    this.setOp(record, { kind: 'loading', level });
    try {
      await this.server.launch(modelId, level, signal);
    } catch (error) {
      record.op = null;
      if (signal.aborted) this.refresh(record); // stopping, not failing
      else this.launchFailed(record, level, this.kindOf(error), describe(error));
      return;
    }
    record.op = null;
    const demand = this.demands.get(modelId);
    const deviceBytes = demand === undefined ? 0 : footprintAt(level, demand.estimate).deviceBytes;
    // The next pass reads the server's own figure; until then the estimate stands in.
    this.running.set(modelId, { modelId, level, deviceBytes });
    this.resetRecovery(record);
    this.refresh(record);
    this.log.info(`${modelId} is ready at the ${level} level`);
    this.loop.trigger();
  }

  private kindOf(error: unknown): FailureKind {
    try {
      return this.classify(error);
    } catch {
      return 'crash';
    }
  }

  /** Climbs the ladder one rung and arranges what it says. */
  /** `what` says what went wrong in the log line: a launch that failed, or a server that died later. */
  private launchFailed(record: ModelRecord, level: LaunchLevel, kind: FailureKind, error: string, what = 'failed to launch'): void {
    const { modelId } = record;
    record.recovery = { kind: kind === 'none' ? 'crash' : kind, attempts: record.recovery.attempts + 1 };
    record.lastError = error;
    record.retry = null;
    const verdict = verdictOf(record, this.demands) ?? 'retry';
    const at = this.clock.now();
    const fields = { level, kind: record.recovery.kind, attempts: record.recovery.attempts, error };
    this.emit({ type: 'LaunchFailed', modelId, level, kind: record.recovery.kind, attempts: record.recovery.attempts, error, nextAction: verdict, at });
    switch (verdict) {
      case 'retry': {
        const delayMs = backoffDelay(record.recovery.attempts, this.backoff);
        record.retry = { at: at + delayMs, delayMs };
        this.log.warn(`${modelId} ${what}; retrying in ${seconds(delayMs)}`, fields);
        if (this.live()) this.retryTimer(modelId).set(delayMs, () => this.loop.trigger());
        this.refresh(record);
        return;
      }
      case 'degrade':
        this.log.warn(`${modelId} ${what}; relaunching at the ${launchLevelAfter(record.recovery)} level`, fields);
        this.refresh(record);
        this.loop.trigger();
        return;
      case 'fallback': {
        const fallbackId = this.demands.get(modelId)?.fallbackId ?? '';
        const reason = fallbackReason(record, fallbackId);
        this.log.warn(`${modelId} ${what}; falling back to ${fallbackId}`, fields);
        this.refresh(record);
        this.emit({ type: 'ModelFellBack', modelId, fallbackId, reason, at });
        this.loop.trigger();
        return;
      }
      case 'quarantine': {
        const reason = quarantineReason(record, this.demands);
        this.log.error(`${modelId} is quarantined: ${reason}`, fields);
        this.refresh(record);
        this.emit({ type: 'ModelQuarantined', modelId, reason, at });
        return;
      }
    }
  }

  // ---- records, statuses, events --------------------------------------------------------

  private recordFor(modelId: string): ModelRecord {
    let record = this.records.get(modelId);
    if (record === undefined) {
      record = newRecord(modelId);
      this.records.set(modelId, record);
    }
    return record;
  }

  private retryTimer(modelId: string): OneShotTimer {
    let timer = this.retryTimers.get(modelId);
    if (timer === undefined) {
      timer = new OneShotTimer(this.clock);
      this.retryTimers.set(modelId, timer);
    }
    return timer;
  }

  private resetRecovery(record: ModelRecord): void {
    record.recovery = NO_FAILURE;
    record.lastError = null;
    record.retry = null;
    this.retryTimers.get(record.modelId)?.clear();
  }

  private setOp(record: ModelRecord, op: ModelRecord['op']): void {
    record.op = op;
    this.refresh(record);
  }

  /** Recomputes the model's status and publishes it if it says something new. */
  private refresh(record: ModelRecord): void {
    const body = deriveStatus({
      record,
      demand: this.demands.get(record.modelId),
      resident: this.running.get(record.modelId),
      verdict: verdictOf(record, this.demands),
      desired: this.desiredIds.has(record.modelId),
    });
    const previous = record.status;
    if (previous !== null && sameStatus(previous, body)) return;
    const status: ModelStatus = { ...body, since: this.clock.now() };
    record.status = status;
    this.emit({ type: 'ModelStateChanged', modelId: record.modelId, status, previous });
  }

  private ownUnservable(modelId: string): Unservable | null {
    const record = this.records.get(modelId);
    if (record === undefined) return null;
    if (verdictOf(record, this.demands) === 'quarantine') return { code: 'model_quarantined', reason: quarantineReason(record, this.demands) };
    if (record.unschedulableReason !== null) return { code: 'model_unschedulable', reason: record.unschedulableReason };
    return null;
  }

  private emit(event: ControllerEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.log.error('a controller event listener threw; ignored', { event: event.type, error: describe(error) });
      }
    }
    for (const check of [...this.readinessChecks]) check();
  }

  private live(): boolean {
    return this.stopping !== null && !this.stopping.signal.aborted;
  }

  private clearTimers(): void {
    this.resync.clear();
    this.passRetry.clear();
    for (const timer of this.retryTimers.values()) timer.clear();
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
