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
// What runs is what the supervisor's lifecycle events say (core/contracts/server-events.ts),
// folded into the records as they arrive: a failure is one ServerExited event and climbs the
// ladder once, however many passes look, with llama.cpp's own words. There is no snapshot of
// resident servers to diff against the last one, so nothing can be seen twice.
//
// Single owner: only this class changes a model's record, and each model has at most one
// operation in progress. Nobody outside branches on a status snapshot to mutate; they call
// trigger/retry and let the next pass decide.
import { footprintAt } from '../policy/levels.js';
import { hostMemoryReason } from '../policy/reasons.js';
import { launchLevelAfter } from '../policy/recover.js';
import { MOVE_UP_COOL_DOWN_MS, MOVE_UP_SETTLE_MS, moveUpOf } from './move-up.js';
import { place, type Device, type PlacedResident, type PlacePlan } from '../policy/place.js';
import type { ModelStatus } from '../contracts/model-status.js';
import type { PlanView } from '../contracts/snapshot.js';
import type { ServerEvent } from '../contracts/server-events.js';
import type { ControllerEvent, Unservable } from '../contracts/controller-events.js';
import { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
import { deriveStatus, sameStatus, seconds } from './derive-status.js';
import type { Classify, Clock, DesiredProvider, DesiredState, Log, ModelDemand, ResidentServer, ServerControl } from './effects.js';
import type { EvictOutcome } from '../contracts/evict-outcome.js';
import {
  fallbackReason,
  isOutdated,
  newRecord,
  NO_FAILURE,
  quarantineReason,
  servingModelOf,
  verdictOf,
  type ModelRecord,
} from './model-record.js';
import { OneShotTimer } from './one-shot-timer.js';
import { PassLoop } from './pass-loop.js';
import { policyInputs, type Loading, type PolicyInputs } from './policy-inputs.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { LeftOut, Placement } from '../contracts/plan.js';
import type { FailureKind } from '../contracts/recovery.js';
import { Emitter } from '../common/emitter.js';
import { errorMessage } from '../contracts/error-message.js';
import { assertNever } from '../contracts/assert-never.js';

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
 * Ready is not healthy: an engine that dies at its first decode, or exits on its own once
 * ready, reaches ready at every launch. Were ready to reset the ladder, such a model would be
 * relaunched forever and never parked (seen: 200 launches in four minutes). So a relaunched
 * model proves itself by answering a request, or by staying ready this long.
 */
export const DEFAULT_HEALTHY_AFTER_MS = 30_000;

/** How often a model held up by the machine (FailureKind 'environment') is tried again. */
export const ENVIRONMENT_RECHECK_MS = 2_000;

/**
 * How late a pass may notice a model turning busy or idle when nothing waits for memory: a
 * status's Active then shows at most this late. A pass per request would cost a hot model's
 * every request a pass (reading the world, measuring each server's memory, placing): many
 * times the router's own cost.
 */
export const ACTIVITY_REFRESH_MS = 250;

export class Controller {
  private readonly provider: DesiredProvider;
  private readonly server: ServerControl;
  private readonly classify: Classify;
  private readonly clock: Clock;
  private readonly log: Log;
  private readonly resyncMs: number;
  private readonly backoff: BackoffOptions;
  private readonly healthyAfterMs: () => number;

  private readonly records = new Map<string, ModelRecord>();
  private demands = new Map<string, ModelDemand>();
  /** What each server held on the device at the last pass's measurement. */
  private measured: ReadonlyMap<string, number> = new Map();
  /** The residents as the last pass counted them (bytes and where): the memory picture shows these very figures. */
  private counted: ReadonlyMap<string, PlacedResident> = new Map();
  private plan: PlanView | null = null;
  /** The models the last pass asked the policy for. */
  private desiredIds = new Set<string>();
  /** Busy models the last pass would have swapped out for waiting ones, were they idle; see yieldsTo. */
  private yields: ReadonlyMap<string, readonly string[]> = new Map();
  /** Per resident, since when (elapsed()) it has been idle; and per model, when a move-up last moved it: the move-up's hysteresis (move-up.ts). */
  private readonly idleSince = new Map<string, number>();
  private readonly movedAt = new Map<string, number>();

  private readonly loop = new PassLoop(() => this.reconcile());
  private readonly resync: OneShotTimer;
  private readonly passRetry: OneShotTimer;
  private readonly activityRefresh: OneShotTimer;
  /** A pass when a waiting move-up's settle time or cool-down ends. */
  private readonly moveUpWake: OneShotTimer;
  private readonly retryTimers = new Map<string, OneShotTimer>();
  /** Per model: the end of a relaunched server's trial (see DEFAULT_HEALTHY_AFTER_MS). */
  private readonly healthTimers = new Map<string, OneShotTimer>();
  private passFailures = 0;
  /** Set while run() runs; aborted when it is asked to stop, which aborts every launch in flight. */
  private stopping: AbortController | null = null;
  /** True after a run() has ended, until the next one starts. */
  private stopped = false;
  private readonly launches = new Set<Promise<void>>();

  private readonly events: Emitter<[ControllerEvent]>;

  constructor(options: ControllerOptions) {
    this.provider = options.provider;
    this.server = options.server;
    this.classify = options.classify;
    this.clock = options.clock;
    this.log = options.log;
    this.resyncMs = options.resyncMs ?? DEFAULT_RESYNC_MS;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.healthyAfterMs = options.healthyAfterMs ?? (() => DEFAULT_HEALTHY_AFTER_MS);
    this.resync = new OneShotTimer(this.clock);
    this.passRetry = new OneShotTimer(this.clock);
    this.activityRefresh = new OneShotTimer(this.clock);
    this.moveUpWake = new OneShotTimer(this.clock);
    this.events = new Emitter<[ControllerEvent]>('the controller', (source, error) => this.log.error(`a listener of ${source} threw; ignored`, { error: errorMessage(error) }));
    // From construction on, so that no server's life is missed, however early it starts.
    this.server.subscribe((event) => this.serverEvent(event));
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
    this.emit({ type: 'ControllerStopped', at: this.clock.now() });
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
    const record = this.records.get(modelId);
    if (record === undefined) return false;
    this.log.info(`${modelId}: retry requested; its recovery ladder starts over`);
    this.resetRecovery(record);
    this.refresh(record);
    this.loop.trigger();
    return true;
  }

  /**
   * The model's ready server answered a request (the engine's answer began): the proof of health
   * that starts a failing model's ladder over. Non-blocking, O(1); a no-op when no server of the
   * model is ready.
   */
  served(modelId: string): void {
    const record = this.records.get(modelId);
    if (record?.server?.ready !== true) return;
    record.server.served = true;
    if (record.recovery.attempts > 0) this.provedHealthy(record, 'it answered a request');
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
   * Why the model will not come if asked now, or null when it may: quarantined (final until a
   * retry), or left out of the last plan in the strict sense — it cannot fit even with every
   * evictable model gone (may be stale: call reconcileNow and ask again before refusing). A
   * model kept out only until busy or higher-ranked models make room is not unservable: a
   * request for it waits (see waitReason). While it falls back, its fallback's problem counts
   * as its own. Pure lookup.
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
   * Why the model that serves for `modelId` is not up yet, in words, for a request that waited
   * out its bound: the plan's reason while it waits for room, else what it is doing. Pure lookup.
   */
  waitReason(modelId: string): string {
    const serving = this.servingModel(modelId);
    const record = this.records.get(serving);
    const subject = serving === modelId ? 'it' : `its fallback ${serving}`;
    if (record === undefined) return `${subject} is waiting for its first pass`;
    const failed = record.recovery.attempts > 0 ? `its last launch failed (${record.recovery.kind}: ${record.lastError ?? 'no reason given'}) and ` : '';
    if (record.leftOut !== null) return `${subject === 'it' ? '' : `${subject}: `}${failed}it is waiting for memory: ${record.leftOut.reason}`;
    const status = record.status;
    if (status === null) return `${subject} is waiting for its first pass`;
    return `${subject} is ${status.state}${status.next === null ? '' : ` (${status.next})`}`;
  }

  /**
   * The models that `modelId` stands in the way of: those the last plan left out that it would
   * have launched, with `modelId` evicted, had no busy model been busy. Empty when it is in
   * nobody's way. The router uses it to end a busy model's turn: once such a model has waited
   * long enough, new requests for `modelId` wait too, so it drains and the swap happens
   * (requests are served grouped by model, and no model starves). Pure lookup.
   */
  yieldsTo(modelId: string): readonly string[] {
    return this.yields.get(modelId) ?? NONE;
  }

  /** Where the model's server runs or loads, as its launch was placed; null when none runs (or one this controller did not launch). Pure lookup. */
  placement(modelId: string): Placement | null {
    const record = this.records.get(modelId);
    return record?.server?.placement ?? (record?.op?.kind === 'loading' ? record.op.placement : null);
  }

  /**
   * What the model's server holds, and where, as the last pass counted it — the figures its plan
   * was made with, so a memory picture drawn from them agrees with the plan's reasons. Null when
   * it was not resident at the last pass. Pure lookup.
   */
  held(modelId: string): { bytes: number; placement: Placement | null } | null {
    const resident = this.counted.get(modelId);
    if (resident === undefined) return null;
    return { bytes: resident.footprint, placement: resident.placement ?? null };
  }

  /** Whether a run() has ended (quit) and no other has started: nothing will be launched any more. */
  hasStopped(): boolean {
    return this.stopped;
  }

  /** Subscribes to the controller's events; returns the unsubscribe. Listeners run synchronously and must not throw (a throw is logged and ignored). */
  onEvent(listener: (event: ControllerEvent) => void): () => void {
    return this.events.on(listener);
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
      const message = errorMessage(error);
      this.log.warn(`reconcile pass failed; trying again in ${seconds(delay)}`, { error: message, failures: this.passFailures });
      this.emit({ type: 'ReconcileFailed', error: message, retryInMs: delay, at: this.clock.now() });
      if (this.live()) this.passRetry.set(delay, () => this.loop.trigger());
    }
    if (this.live() && this.resyncMs > 0) this.resync.set(this.resyncMs, () => this.loop.trigger());
  }

  private async applyOnce(): Promise<void> {
    const [state, measured] = await Promise.all([this.provider.read(), this.server.measure()]);
    // Everything below reads the records as they are now, after the awaits: a launch that ended
    // or a server that died while the world was being read is already folded in.
    this.measured = measured;
    this.observe(state);
    const inputs = policyInputs({ demands: this.demands, records: this.records, running: this.residents(), loading: this.loading() });
    this.counted = new Map(inputs.resident.map((r) => [r.modelId, r]));
    this.desiredIds = new Set(inputs.desired.map((d) => d.modelId));
    const devices = devicesOf(state);
    const placed = place(inputs.desired, inputs.resident, devices, state.hostFreeBytes);
    this.yields = yieldsOf(placed, inputs, devices, state.hostFreeBytes);
    const moveUp = this.moveUpOf(placed, inputs, devices, state.hostFreeBytes);
    const plan = moveUp === null ? placed : { ...placed, evict: [moveUp.modelId, ...moveUp.evict] };
    const planChanged = this.recordPlan(plan);
    if (plan.evict.length > 0) for (const launch of this.launchesDue(plan)) this.server.prepareLaunch?.(launch.record.modelId, launch.level, launch.placement);
    // Stamped even when a request claimed one of them meanwhile: a move that keeps being tried is thrash too.
    if (moveUp !== null) for (const modelId of plan.evict) this.movedAt.set(modelId, this.clock.elapsed());
    const roomMade = await this.evictAll(plan.evict);
    const acted = roomMade ? this.startLaunches(plan, state.hostFreeBytes) : false;
    await this.stopOutdated(plan.evict);
    if (this.plan !== null && (planChanged || plan.evict.length > 0 || acted)) this.emit({ type: 'PlanApplied', plan: this.plan });
  }

  /**
   * This pass's move-up (move-up.ts), with each model's idle time brought up to date first; sets
   * every record's note of why it waits to move up, and a timer for the moment one may.
   */
  private moveUpOf(placed: PlacePlan, inputs: PolicyInputs, devices: readonly Device[], hostFreeBytes: number): { modelId: string; evict: readonly string[] } | null {
    const now = this.clock.elapsed();
    const residentIds = new Set(inputs.resident.map((r) => r.modelId));
    for (const modelId of this.idleSince.keys()) if (!residentIds.has(modelId)) this.idleSince.delete(modelId);
    for (const r of inputs.resident) {
      if (r.active) this.idleSince.delete(r.modelId);
      else if (!this.idleSince.has(r.modelId)) this.idleSince.set(r.modelId, now);
    }
    for (const [modelId, at] of this.movedAt) if (at + MOVE_UP_COOL_DOWN_MS <= now) this.movedAt.delete(modelId);
    const priorities = new Map(inputs.desired.map((d) => [d.modelId, d.priority]));
    const priorityOf = (modelId: string): number => priorities.get(modelId) ?? this.demands.get(modelId)?.priority ?? -Infinity;
    const decision = moveUpOf(placed, inputs, devices, hostFreeBytes, { idleSince: this.idleSince, movedAt: this.movedAt }, now, priorityOf);
    for (const record of this.records.values()) record.movingUp = decision.waiting.get(record.modelId) ?? null;
    if (decision.wakeAt === null) this.moveUpWake.clear();
    else if (this.live()) this.moveUpWake.set(Math.max(0, decision.wakeAt - now), () => this.loop.trigger());
    const move = decision.move;
    if (move === null) return null;
    const alsoStopping = move.evict.length === 0 ? '' : ` and ${move.evict.join(', ')} (idle ${seconds(MOVE_UP_SETTLE_MS)} or more, lower priority)`;
    this.log.info(`moving ${move.modelId} up: it now fits ${move.to.kind === 'gpu' ? `whole on GPU ${move.to.devices[0]?.index ?? 0}` : describePlacement(move.to).trim()}; stopping it${alsoStopping} to relaunch it there`);
    return move;
  }

  /** The servers running now, as the events say, priced by the last measurement (else the estimate). */
  private residents(): ResidentServer[] {
    const out: ResidentServer[] = [];
    for (const record of this.records.values()) {
      const server = record.server;
      if (server === null) continue;
      const estimate = this.demands.get(record.modelId)?.estimate;
      const deviceBytes = this.measured.get(record.modelId) ?? (estimate === undefined ? 0 : footprintAt(server.level, estimate).deviceBytes);
      out.push({ modelId: record.modelId, level: server.level, deviceBytes, ...(server.placement === undefined ? {} : { placement: server.placement }) });
    }
    return out;
  }

  /** Models loading: the controller's launch in flight, or a server spawned and not yet ready. */
  private loading(): Map<string, Loading> {
    const out = new Map<string, Loading>();
    for (const record of this.records.values()) {
      if (record.op?.kind === 'loading') out.set(record.modelId, { level: record.op.level, placement: record.op.placement });
      else if (record.server !== null && !record.server.ready) {
        out.set(record.modelId, { level: record.server.level, ...(record.server.placement === undefined ? {} : { placement: record.server.placement }) });
      }
    }
    return out;
  }

  private observe(state: DesiredState): void {
    this.demands = new Map(state.models.map((m) => [m.modelId, m]));
    for (const demand of state.models) {
      const record = this.recordFor(demand.modelId);
      if (record.definitionHash !== null && record.definitionHash !== demand.definitionHash && record.recovery.attempts > 0) {
        this.log.info(`${demand.modelId}: its definition changed; its recovery ladder starts over`);
        this.resetRecovery(record);
      }
      record.definitionHash = demand.definitionHash;
    }
    for (const [modelId, record] of this.records) {
      if (this.demands.has(modelId) || record.server !== null || record.op !== null) continue;
      this.retryTimers.get(modelId)?.clear();
      this.retryTimers.delete(modelId);
      this.records.delete(modelId);
    }
  }

  /** Keeps the plan and each model's reason for being left out; true when either changed. */
  private recordPlan(plan: PlacePlan): boolean {
    const previous = this.plan;
    this.plan = { at: this.clock.now(), launch: plan.launch, evict: plan.evict, unschedulable: plan.unschedulable };
    const leftOut = new Map(plan.unschedulable.map((u) => [u.modelId, u]));
    for (const record of this.records.values()) {
      const now = leftOut.get(record.modelId) ?? null;
      if (sameLeftOut(now, record.leftOut)) continue;
      // Logged on change only: the same sentence every resync would bury everything else.
      if (now === null) this.log.info(`${record.modelId} is no longer left out of the plan`);
      else this.log.info(`${record.modelId} does not fit${now.strict ? '' : ' yet'}: ${now.reason}`);
      record.leftOut = now;
      this.emit({ type: 'ModelUnschedulableChanged', modelId: record.modelId, reason: now?.reason ?? null, at: this.clock.now() });
    }
    for (const record of this.records.values()) this.refresh(record);
    const { at: _then, ...before } = previous ?? { at: 0 };
    const { at: _now, ...after } = this.plan;
    return JSON.stringify(before) !== JSON.stringify(after);
  }

  /**
   * Evicts in parallel and waits for all. True when the room was made; false when a request
   * had claimed a server the plan meant to stop, so the launches that needed its memory wait
   * for the next pass (the claim's release asks for one). Throws (failing the pass, so nothing
   * launches) if any eviction failed.
   */
  private async evictAll(modelIds: readonly string[]): Promise<boolean> {
    const results = await Promise.allSettled(modelIds.map((id) => this.evictOne(id)));
    const failures = results.flatMap((r, i) => (r.status === 'rejected' ? [`${modelIds[i]}: ${errorMessage(r.reason)}`] : []));
    if (failures.length > 0) throw new Error(`could not evict ${failures.join('; ')}`);
    return results.every((r) => r.status === 'fulfilled' && r.value === 'stopped');
  }

  private async evictOne(modelId: string): Promise<EvictOutcome> {
    const record = this.recordFor(modelId);
    this.log.info(`evicting ${modelId}`);
    this.setOp(record, { kind: 'evicting', level: record.server?.level ?? 'full' });
    try {
      const outcome = await this.server.evict(modelId);
      if (outcome === 'claimed') this.log.info(`${modelId} was not evicted: a request claimed it meanwhile; the next pass decides again`);
      return outcome;
    } finally {
      this.setOp(record, null);
    }
  }

  /**
   * Stops each idle ready server whose model's definition changed since it was launched (its
   * file, context, arguments, engine…), so that the next pass launches the new definition: what
   * runs is what the snapshot says. A busy one drains first: its requests finish, new ones wait
   * (definitionPending), and the pass its last release triggers stops it. Not the plan's own
   * eviction, so a server that a request claims meanwhile holds up nothing else.
   */
  private async stopOutdated(evicted: readonly string[]): Promise<void> {
    const outdated = [...this.records.values()].filter((record) => {
      const demand = this.demands.get(record.modelId);
      return demand !== undefined && demand.inFlight === 0 && record.op === null && !evicted.includes(record.modelId) && isOutdated(record, demand);
    });
    for (const record of outdated) this.log.info(`${record.modelId}: its definition changed since it was launched; relaunching it with the new one`);
    await Promise.allSettled(outdated.map((record) => this.evictOne(record.modelId)));
  }

  /**
   * The model's server runs a definition that has since changed: new requests wait for its
   * relaunch rather than being answered by the old one (a context of 1024 where 2048 is
   * configured, a replaced file's old weights). Pure lookup.
   */
  definitionPending(modelId: string): boolean {
    const record = this.records.get(modelId);
    const demand = this.demands.get(modelId);
    return record !== undefined && demand !== undefined && isOutdated(record, demand);
  }

  /** The plan's launches that may start now: not running or busy, not backing off; at the level the ladder says. Pure read. */
  private launchesDue(plan: PlacePlan): { record: ModelRecord; demand: ModelDemand; level: LaunchLevel; placement: Placement }[] {
    const now = this.clock.elapsed();
    const due: { record: ModelRecord; demand: ModelDemand; level: LaunchLevel; placement: Placement }[] = [];
    for (const modelId of plan.launch) {
      const record = this.records.get(modelId);
      const demand = this.demands.get(modelId);
      if (record === undefined || demand === undefined || record.op !== null || record.server !== null) continue;
      if (record.retry !== null && record.retry.dueAt > now) continue; // its retry timer triggers a pass
      due.push({ record, demand, level: launchLevelAfter(record.recovery), placement: plan.placements[modelId] ?? FIRST_DEVICE });
    }
    return due;
  }

  /** Starts the plan's launches, where it placed them, unless backing off; true when it started or failed any. */
  private startLaunches(plan: PlacePlan, hostFreeBytes: number): boolean {
    // What the plan's own placements put in host RAM is no longer free for a level's host share.
    let hostFree = hostFreeBytes - plan.launch.reduce((sum, id) => sum + (plan.placements[id]?.hostBytes ?? 0), 0);
    let acted = false;
    const signal = this.stopping?.signal;
    if (signal === undefined || signal.aborted) return false;
    for (const { record, demand, level, placement } of this.launchesDue(plan)) {
      const modelId = record.modelId;
      acted = true;
      // A launch whose host share RAM cannot hold (CPU only, or the layers left on the CPU)
      // would be killed by the OOM killer minutes into the load; refusing it now with the
      // numbers is the same 'oom' step, sooner.
      const need = footprintAt(level, demand.estimate).hostBytes;
      if (need > 0) {
        if (need > hostFree) {
          this.launchFailed(record, level, 'oom', `${modelId} ${hostMemoryReason(need, hostFree, level === 'partial' ? 'partial' : 'minimal')}`);
          continue;
        }
        hostFree -= need;
      }
      const launch = this.launchOne(record, level, placement, signal);
      this.launches.add(launch);
      void launch.finally(() => this.launches.delete(launch));
    }
    return acted;
  }

  private async launchOne(record: ModelRecord, level: LaunchLevel, placement: Placement, signal: AbortSignal): Promise<void> {
    const { modelId } = record;
    this.log.info(`launching ${modelId} at the ${level} level${describePlacement(placement)}`);
    const definitionHash = this.demands.get(modelId)?.definitionHash;
    const op = { kind: 'loading' as const, level, placement, ...(definitionHash === undefined ? {} : { definitionHash }) };
    this.setOp(record, op);
    try {
      await this.server.launch(modelId, level, placement, signal);
    } catch (error) {
      // A failure is counted from its ServerExited event, which ends this op (or an eviction
      // replaced it, and its stop is no failure). The op still being this launch's means no
      // event came: a server control that broke its contract, counted here so it cannot loop hot.
      const noEventCame = record.op === op;
      if (noEventCame) record.op = null;
      if (!signal.aborted && noEventCame) this.launchFailed(record, level, this.kindOf(error), errorMessage(error));
      this.refresh(record);
      this.loop.trigger();
      return;
    }
    if (record.op === op) record.op = null;
    this.refresh(record);
    this.loop.trigger();
  }

  /** Folds one lifecycle event into the model's record; the one place a server's life is learned. */
  private serverEvent(event: ServerEvent): void {
    const record = this.recordFor(event.modelId);
    switch (event.type) {
      case 'ServerSpawned':
        record.server = {
          level: event.level,
          pid: event.pid,
          ready: false,
          ...(record.op?.kind === 'loading' ? { placement: record.op.placement, ...(record.op.definitionHash === undefined ? {} : { definitionHash: record.op.definitionHash }) } : {}),
        };
        this.refresh(record);
        return;
      case 'ServerReady':
        record.server = { ...(record.server?.pid === event.pid ? record.server : {}), level: event.level, pid: event.pid, ready: true, served: false };
        if (record.op?.kind === 'loading') record.op = null;
        // Ready is not yet healthy (DEFAULT_HEALTHY_AFTER_MS): a failing model keeps its ladder
        // until its server answers a request or stays ready through its trial.
        if (record.recovery.attempts > 0) this.startTrial(record, event.pid);
        this.log.info(`${event.modelId} is ready at the ${event.level} level`);
        this.refresh(record);
        this.loop.trigger();
        return;
      case 'ServerStopped':
        if (record.server?.pid === event.pid) record.server = null;
        this.healthTimers.get(event.modelId)?.clear();
        this.refresh(record);
        this.loop.trigger();
        return;
      case 'ServerExited': {
        const served = record.server?.pid === event.pid && record.server.served === true;
        if (event.pid === null || record.server?.pid === event.pid) record.server = null;
        // Ends the launch's op: its rejection, arriving later, is then not a second failure.
        if (record.op?.kind === 'loading') record.op = null;
        this.healthTimers.get(event.modelId)?.clear();
        this.launchFailed(record, event.level, event.kind, event.reason, !event.wasReady ? 'loading' : served ? 'serving' : 'unproven');
        this.loop.trigger();
        return;
      }
      default:
        assertNever(event);
    }
  }

  private kindOf(error: unknown): FailureKind {
    try {
      return this.classify(error);
    } catch {
      return 'crash';
    }
  }

  /**
   * Climbs the ladder one rung and arranges what it says. `when`: a launch that never got to
   * ready; a server that died after it had served; or one that died after ready without
   * having answered anything, which is no better than a failed launch.
   */
  private launchFailed(record: ModelRecord, level: LaunchLevel, kind: FailureKind, error: string, when: 'loading' | 'unproven' | 'serving' = 'loading'): void {
    const { modelId } = record;
    const what = when === 'serving' ? 'died while serving' : when === 'unproven' ? 'died after it was ready, before it answered anything' : 'failed to launch';
    const failure = kind === 'none' ? 'crash' : kind;
    // The machine's failures are not the model's: a streak of them, and the model's own streak,
    // are counted apart, so a full disk cannot push a good model up its ladder.
    const sameStreak = (record.recovery.kind === 'environment') === (failure === 'environment');
    record.recovery = { kind: failure, attempts: (sameStreak ? record.recovery.attempts : 0) + 1 };
    record.lastError = error;
    // Any death after ready, answered or not: with a request waiting, such a model competes
    // for memory as any model does (kept to memory nobody wants, a waiting request could never
    // get it back from an idle one: the soak stalled so on a fresh server frozen at its first
    // request). Its ladder counts the death either way.
    record.diedWhileServing = when !== 'loading';
    record.retry = null;
    const verdict = verdictOf(record, this.demands) ?? 'retry';
    const at = this.clock.now();
    const fields = { level, kind: record.recovery.kind, attempts: record.recovery.attempts, error };
    this.emit({ type: 'LaunchFailed', modelId, level, kind: record.recovery.kind, attempts: record.recovery.attempts, error, nextAction: verdict, at });
    switch (verdict) {
      case 'retry': {
        // The machine's condition is looked at again soon, whatever the streak: the model is
        // back as soon as it has cleared, and a launch that fails before any process runs costs nothing.
        const delayMs = failure === 'environment' ? ENVIRONMENT_RECHECK_MS : backoffDelay(record.recovery.attempts, this.backoff);
        record.retry = { at: at + delayMs, dueAt: this.clock.elapsed() + delayMs, delayMs };
        // Said once when the machine gets in the way, not at every look.
        if (!(failure === 'environment' && sameStreak)) this.log.warn(`${modelId} ${what}; retrying in ${seconds(delayMs)}`, fields);
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
        // It leaves the desired set: the next pass drops it from the plan, frees the memory the
        // plan had set aside for it, and lets the models it was keeping out come back.
        this.loop.trigger();
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
    record.diedWhileServing = false;
    record.retry = null;
    this.retryTimers.get(record.modelId)?.clear();
    this.healthTimers.get(record.modelId)?.clear();
  }

  /** Arms the trial of a failing model's server `pid` that just became ready. */
  private startTrial(record: ModelRecord, pid: number): void {
    if (!this.live()) return;
    let timer = this.healthTimers.get(record.modelId);
    if (timer === undefined) {
      timer = new OneShotTimer(this.clock);
      this.healthTimers.set(record.modelId, timer);
    }
    const trialMs = this.healthyAfterMs();
    timer.set(trialMs, () => {
      if (record.server?.pid === pid && record.server.ready && record.recovery.attempts > 0) this.provedHealthy(record, `it stayed ready for ${seconds(trialMs)}`);
    });
  }

  /** A failing model's server proved itself: the ladder starts over, so its next launch is 'full' again. */
  private provedHealthy(record: ModelRecord, why: string): void {
    this.log.info(`${record.modelId} is healthy again (${why}); its recovery ladder starts over`, { attempts: record.recovery.attempts, kind: record.recovery.kind });
    this.resetRecovery(record);
    this.refresh(record);
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
    if (record.leftOut?.strict === true) return { code: 'model_unschedulable', reason: record.leftOut.reason };
    return null;
  }

  private emit(event: ControllerEvent): void {
    this.events.emit(event);
  }

  private live(): boolean {
    return this.stopping !== null && !this.stopping.signal.aborted;
  }

  private clearTimers(): void {
    this.resync.clear();
    this.passRetry.clear();
    this.activityRefresh.clear();
    this.moveUpWake.clear();
    for (const timer of this.retryTimers.values()) timer.clear();
    for (const timer of this.healthTimers.values()) timer.clear();
  }
}

const NONE: readonly string[] = [];

/** Where a launch goes when the plan named no placement: the first (or only) device. */
const FIRST_DEVICE: Placement = { kind: 'gpu', devices: [{ index: 0, layers: 0, bytes: 0 }], cpuMoeLayers: 0, hostBytes: 0 };

/** The devices of a desired state: its GPUs, or one pool of its whole budget. */
function devicesOf(state: DesiredState): Device[] {
  if (state.devices !== undefined && state.devices.length > 0) return state.devices;
  return [{ index: 0, name: 'memory', deviceClass: 'pool', budgetBytes: state.budgetBytes }];
}

/** " on GPU 1", " split over GPUs 0 and 1", " with 10 layers on GPU 0, the rest on the CPU": for the log. */
function describePlacement(placement: Placement): string {
  const ids = placement.devices.map((d) => d.index);
  switch (placement.kind) {
    case 'gpu':
      return ids.length === 1 && ids[0] !== 0 ? ` on GPU ${ids[0]}` : '';
    case 'split':
    case 'mixed':
      return ` split over GPUs ${ids.join(' and ')} (${placement.devices.map((d) => d.layers).join(' + ')} layers)`;
    case 'partial':
      return placement.cpuMoeLayers > 0
        ? ` on GPU ${ids[0]} with the experts of ${placement.cpuMoeLayers} layers on the CPU`
        : ` with ${placement.devices[0]?.layers ?? 0} layers on GPU ${ids[0]}, the rest on the CPU`;
    case 'cpu':
      return ' on the CPU only';
  }
}

/**
 * Who would make way for whom if busy models were idle: the plan again with every busy (not
 * loading, not pinned) resident unforced. Only computed when the real plan left something out
 * that room could be made for, which is the only time anyone waits on a busy model.
 */
function yieldsOf(plan: PlacePlan, inputs: PolicyInputs, devices: readonly Device[], hostFreeBytes: number): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  if (!plan.unschedulable.some((u) => !u.strict)) return out;
  const relaxed = inputs.resident.map((r) => (r.active && !inputs.loadingIds.has(r.modelId) ? { ...r, active: false } : r));
  const ifIdle = place(inputs.desired, relaxed, devices, hostFreeBytes);
  if (ifIdle.launch.length === 0) return out;
  for (const modelId of ifIdle.evict) out.set(modelId, ifIdle.launch);
  return out;
}

function sameLeftOut(a: LeftOut | null, b: LeftOut | null): boolean {
  return a === b || (a !== null && b !== null && a.reason === b.reason && a.strict === b.strict);
}
