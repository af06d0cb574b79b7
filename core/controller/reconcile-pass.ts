// One pass of the loop: read the world once, fold it into the records, ask the policy, apply
// its plan (evictions first, awaited until their memory is back, then launches at the level the
// ladder asks for), and stop what runs an outdated definition. README.md, "A pass", walks it.
//
// Launches are started here but not awaited. Why: a load takes seconds to minutes, and a pass
// that waited for it would hold every other decision hostage (the router's `reconcileNow`
// promises "one pass, not a load"; a shrinking budget must be able to evict meanwhile). A
// launch in flight counts as resident and in use in later passes, so it is neither launched
// twice nor evicted halfway; its end (ready or failed) triggers a pass.
import { footprintAt } from '../policy/levels.js';
import { hostMemoryReason } from '../policy/reasons.js';
import { launchLevelAfter } from '../policy/recover.js';
import { place, type PlacePlan } from '../policy/place.js';
import type { EvictOutcome } from '../contracts/evict-outcome.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { LeftOut, Placement } from '../contracts/plan.js';
import type { FailureKind } from '../contracts/recovery.js';
import { errorMessage } from '../contracts/error-message.js';
import { seconds } from './derive-status.js';
import type { Classify, Clock, DesiredProvider, DesiredState, Log, ModelDemand, ServerControl } from './effects.js';
import { observeWorld, type MemoryObservation } from './memory-observation.js';
import { isOutdated, NONE, type ModelRecord } from './model-record.js';
import { MOVE_UP_COOL_DOWN_MS, MOVE_UP_SETTLE_MS, moveUpOf } from './move-up.js';
import { OneShotTimer } from './one-shot-timer.js';
import { describePlacement } from './placement-words.js';
import { policyInputs, type PolicyInputs } from './policy-inputs.js';
import type { RecordStore } from './record-store.js';
import type { RecoveryLadder } from './recovery-ladder.js';
import { loadingModels, runningServers } from './residents.js';
import { yieldsOf } from './yields.js';

export interface PassDeps {
  provider: DesiredProvider;
  server: ServerControl;
  classify: Classify;
  clock: Clock;
  log: Log;
  store: RecordStore;
  ladder: RecoveryLadder;
  /** Asks for a pass. */
  trigger: () => void;
  /** Whether the loop runs (no timer is armed otherwise). */
  live: () => boolean;
  /** Aborted when the loop is asked to stop, which aborts every launch in flight; undefined while it does not run. */
  signal: () => AbortSignal | undefined;
  /** The world was just read and folded in: the answers that depend on it may have changed (the warm spare's verdict). */
  observed: () => void;
}

/** Where a launch goes when the plan named no placement: the first (or only) device. */
const FIRST_DEVICE: Placement = { kind: 'gpu', devices: [{ index: 0, layers: 0, bytes: 0 }], cpuMoeLayers: 0, hostBytes: 0 };

interface DueLaunch {
  record: ModelRecord;
  demand: ModelDemand;
  level: LaunchLevel;
  placement: Placement;
}

export class ReconcilePass {
  /** Per resident, since when (elapsed()) it has been idle; and per model, when a move-up last moved it: the move-up's hysteresis (move-up.ts). */
  private readonly idleSince = new Map<string, number>();
  private readonly movedAt = new Map<string, number>();
  /** A pass when a waiting move-up's settle time or cool-down ends. */
  private readonly moveUpWake: OneShotTimer;
  private readonly launches = new Set<Promise<void>>();

  constructor(private readonly deps: PassDeps) {
    this.moveUpWake = new OneShotTimer(deps.clock);
  }

  /** One pass; rejects when the world could not be read or an eviction failed (the loop backs off). */
  async run(): Promise<void> {
    const { store, server } = this.deps;
    const { state, memory } = await observeWorld(this.deps.provider, server);
    // Everything below reads the records as they are now, after the awaits: a launch that ended
    // or a server that died while the world was being read is already folded in.
    this.readDemands(state);
    store.memory = memory;
    const inputs = policyInputs({ demands: store.demands, records: store.records, running: runningServers(store.records, store.demands, memory.serverBytes), loading: loadingModels(store.records) });
    const desiredIds = new Set(inputs.desired.map((d) => d.modelId));
    for (const record of store.records.values()) store.setDesired(record, desiredIds.has(record.modelId));
    this.deps.observed();
    const placed = place(inputs.desired, inputs.resident, memory.devices, memory.hostFreeBytes);
    const yields = yieldsOf(placed, inputs, memory.devices, memory.hostFreeBytes);
    for (const record of store.records.values()) store.setYieldsTo(record, yields.get(record.modelId) ?? NONE);
    const moveUp = this.moveUpOf(placed, inputs, memory);
    const plan = moveUp === null ? placed : { ...placed, evict: [moveUp.modelId, ...moveUp.evict] };
    const planChanged = this.recordPlan(plan);
    if (plan.evict.length > 0) for (const launch of this.launchesDue(plan)) server.prepareLaunch?.(launch.record.modelId, launch.level, launch.placement);
    // Stamped even when a request claimed one of them meanwhile: a move that keeps being tried is thrash too.
    if (moveUp !== null) for (const modelId of plan.evict) this.movedAt.set(modelId, this.deps.clock.elapsed());
    const roomMade = await this.evictAll(plan.evict);
    const acted = roomMade ? this.startLaunches(plan, memory.hostFreeBytes) : false;
    await this.stopOutdated(plan.evict);
    if (store.plan !== null && (planChanged || plan.evict.length > 0 || acted)) store.emit({ type: 'PlanApplied', plan: store.plan });
  }

  /** Resolves once every launch this pass started has settled (the loop's stop waits for them). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.launches]);
  }

  clearTimers(): void {
    this.moveUpWake.clear();
  }

  /** The demands become the records' facts: a changed definition restarts the ladder; a model gone from the catalog and not running is forgotten. */
  private readDemands(state: DesiredState): void {
    const { store, ladder, log } = this.deps;
    store.demands = new Map(state.models.map((m) => [m.modelId, m]));
    for (const demand of state.models) {
      const record = store.recordFor(demand.modelId);
      if (record.definitionHash !== null && record.definitionHash !== demand.definitionHash && record.recovery.attempts > 0) {
        log.info(`${demand.modelId}: its definition changed; its recovery ladder starts over`);
        ladder.reset(record);
      }
      store.sawDefinition(record, demand.definitionHash);
    }
    for (const [modelId, record] of store.records) {
      if (store.demands.has(modelId) || record.server !== null || record.op !== null) continue;
      ladder.forget(modelId);
      store.records.delete(modelId);
    }
  }

  /**
   * This pass's move-up (move-up.ts), with each model's idle time brought up to date first; sets
   * every record's note of why it waits to move up, and a timer for the moment one may.
   */
  private moveUpOf(placed: PlacePlan, inputs: PolicyInputs, memory: MemoryObservation): { modelId: string; evict: readonly string[] } | null {
    const { store, clock, log } = this.deps;
    const now = clock.elapsed();
    const residentIds = new Set(inputs.resident.map((r) => r.modelId));
    for (const modelId of this.idleSince.keys()) if (!residentIds.has(modelId)) this.idleSince.delete(modelId);
    for (const r of inputs.resident) {
      if (r.inUse) this.idleSince.delete(r.modelId);
      else if (!this.idleSince.has(r.modelId)) this.idleSince.set(r.modelId, now);
    }
    for (const [modelId, at] of this.movedAt) if (at + MOVE_UP_COOL_DOWN_MS <= now) this.movedAt.delete(modelId);
    const priorities = new Map(inputs.desired.map((d) => [d.modelId, d.priority]));
    const priorityOf = (modelId: string): number => priorities.get(modelId) ?? store.demands.get(modelId)?.priority ?? -Infinity;
    const decision = moveUpOf(placed, inputs, memory.devices, memory.hostFreeBytes, { idleSince: this.idleSince, movedAt: this.movedAt }, now, priorityOf);
    for (const record of store.records.values()) store.setMovingUp(record, decision.waiting.get(record.modelId) ?? null);
    if (decision.wakeAt === null) this.moveUpWake.clear();
    else if (this.deps.live()) this.moveUpWake.set(Math.max(0, decision.wakeAt - now), () => this.deps.trigger());
    const move = decision.move;
    if (move === null) return null;
    const alsoStopping = move.evict.length === 0 ? '' : ` and ${move.evict.join(', ')} (idle ${seconds(MOVE_UP_SETTLE_MS)} or more, lower priority)`;
    log.info(`moving ${move.modelId} up: it now fits ${move.to.kind === 'gpu' ? `whole on GPU ${move.to.devices[0]?.index ?? 0}` : describePlacement(move.to).trim()}; stopping it${alsoStopping} to relaunch it there`);
    return move;
  }

  /** Keeps the plan and each model's reason for being left out; true when either changed. */
  private recordPlan(plan: PlacePlan): boolean {
    const { store, clock, log } = this.deps;
    const previous = store.plan;
    store.plan = { at: clock.now(), launch: plan.launch, evict: plan.evict, unschedulable: plan.unschedulable };
    const leftOut = new Map(plan.unschedulable.map((u) => [u.modelId, u]));
    for (const record of store.records.values()) {
      const now = leftOut.get(record.modelId) ?? null;
      if (sameLeftOut(now, record.leftOut)) continue;
      // Logged on change only: the same sentence every resync would bury everything else.
      if (now === null) log.info(`${record.modelId} is no longer left out of the plan`);
      else log.info(`${record.modelId} does not fit${now.strict ? '' : ' yet'}: ${now.reason}`);
      store.setLeftOut(record, now);
      store.emit({ type: 'ModelUnschedulableChanged', modelId: record.modelId, reason: now?.reason ?? null, at: clock.now() });
    }
    for (const record of store.records.values()) store.refresh(record);
    const { at: _then, ...before } = previous ?? { at: 0 };
    const { at: _now, ...after } = store.plan;
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
    const { store, log } = this.deps;
    const record = store.recordFor(modelId);
    log.info(`evicting ${modelId}`);
    store.setOp(record, { kind: 'evicting', level: record.server?.level ?? 'full' });
    try {
      const outcome = await this.deps.server.evict(modelId);
      if (outcome === 'claimed') log.info(`${modelId} was not evicted: a request claimed it meanwhile; the next pass decides again`);
      return outcome;
    } finally {
      store.setOp(record, null);
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
    const { store, log } = this.deps;
    const outdated = [...store.records.values()].filter((record) => {
      const demand = store.demands.get(record.modelId);
      return demand !== undefined && demand.inFlight === 0 && record.op === null && !evicted.includes(record.modelId) && isOutdated(record, demand);
    });
    for (const record of outdated) log.info(`${record.modelId}: its definition changed since it was launched; relaunching it with the new one`);
    await Promise.allSettled(outdated.map((record) => this.evictOne(record.modelId)));
  }

  /** The plan's launches that may start now: not running or busy, not backing off; at the level the ladder says. Pure read. */
  private launchesDue(plan: PlacePlan): DueLaunch[] {
    const { store } = this.deps;
    const now = this.deps.clock.elapsed();
    const due: DueLaunch[] = [];
    for (const modelId of plan.launch) {
      const record = store.records.get(modelId);
      const demand = store.demands.get(modelId);
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
    const signal = this.deps.signal();
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
          this.deps.ladder.failed(record, level, 'oom', `${modelId} ${hostMemoryReason(need, hostFree, level === 'partial' ? 'partial' : 'minimal')}`);
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
    const { store, log } = this.deps;
    const { modelId } = record;
    log.info(`launching ${modelId} at the ${level} level${describePlacement(placement)}`);
    const definitionHash = store.demands.get(modelId)?.definitionHash;
    const op = { kind: 'loading' as const, level, placement, ...(definitionHash === undefined ? {} : { definitionHash }) };
    store.setOp(record, op);
    try {
      await this.deps.server.launch(modelId, level, placement, signal);
    } catch (error) {
      // A failure is counted from its ServerExited event, which ends this op (or an eviction
      // replaced it, and its stop is no failure). The op still being this launch's means no
      // event came: a server control that broke its contract, counted here so it cannot loop hot.
      const noEventCame = record.op === op;
      if (noEventCame) store.endOp(record);
      if (!signal.aborted && noEventCame) this.deps.ladder.failed(record, level, this.kindOf(error), errorMessage(error));
      store.refresh(record);
      this.deps.trigger();
      return;
    }
    if (record.op === op) store.endOp(record);
    store.refresh(record);
    this.deps.trigger();
  }

  private kindOf(error: unknown): FailureKind {
    try {
      return this.deps.classify(error);
    } catch {
      return 'crash';
    }
  }
}

function sameLeftOut(a: LeftOut | null, b: LeftOut | null): boolean {
  return a === b || (a !== null && b !== null && a.reason === b.reason && a.strict === b.strict);
}
