// A model's failures and its proof of health: climbing the recovery ladder one rung per
// failure (core/policy/recover.ts) and arranging what it says, the backed-off retry, and the
// trial a failing model's relaunched server must pass before its ladder starts over.
//
// Why apart from the pass: failures arrive as server events and launch rejections at any time,
// between passes as much as during one; what they change is the record, and the next pass
// reads it. Every delay is a timer on the injected clock, per model, re-armed, never doubled.
import { launchLevelAfter } from '../policy/recover.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { FailureKind } from '../contracts/recovery.js';
import { backoffDelay, type BackoffOptions } from './backoff.js';
import { seconds } from './derive-status.js';
import type { Clock, Log } from './effects.js';
import { fallbackReason, quarantineReason, verdictOf, type ModelRecord } from './model-record.js';
import { OneShotTimer } from './one-shot-timer.js';
import type { RecordStore } from './record-store.js';

/**
 * Ready is not healthy: an engine that dies at its first decode, or exits on its own once
 * ready, reaches ready at every launch. Were ready to reset the ladder, such a model would be
 * relaunched forever and never parked (seen: 200 launches in four minutes). So a relaunched
 * model proves itself by answering a request, or by staying ready this long.
 */
export const DEFAULT_HEALTHY_AFTER_MS = 30_000;

/** How often a model held up by the machine (FailureKind 'environment') is tried again. */
export const ENVIRONMENT_RECHECK_MS = 2_000;

/** When a failure happened: a launch that never got to ready; a server that died after it had served; or one that died after ready without having answered anything. */
export type FailedWhen = 'loading' | 'unproven' | 'serving';

export interface RecoveryLadderDeps {
  store: RecordStore;
  clock: Clock;
  log: Log;
  backoff: BackoffOptions;
  healthyAfterMs: () => number;
  /** Whether the loop runs (no timer is armed otherwise). */
  live: () => boolean;
  /** Asks for a pass. */
  trigger: () => void;
}

export class RecoveryLadder {
  private readonly retryTimers = new Map<string, OneShotTimer>();
  /** Per model: the end of a relaunched server's trial (see DEFAULT_HEALTHY_AFTER_MS). */
  private readonly healthTimers = new Map<string, OneShotTimer>();

  constructor(private readonly deps: RecoveryLadderDeps) {}

  /** Climbs the ladder one rung and arranges what it says. */
  failed(record: ModelRecord, level: LaunchLevel, kind: FailureKind, error: string, when: FailedWhen = 'loading'): void {
    const { store, clock, log } = this.deps;
    const { modelId } = record;
    const what = when === 'serving' ? 'died while serving' : when === 'unproven' ? 'died after it was ready, before it answered anything' : 'failed to launch';
    const failure = kind === 'none' ? 'crash' : kind;
    // The machine's failures are not the model's: a streak of them, and the model's own streak,
    // are counted apart, so a full disk cannot push a good model up its ladder.
    const sameStreak = (record.recovery.kind === 'environment') === (failure === 'environment');
    // diedWhileServing, any death after ready, answered or not: with a request waiting, such a
    // model competes for memory as any model does (kept to memory nobody wants, a waiting request
    // could never get it back from an idle one: the soak stalled so on a fresh server frozen at
    // its first request). Its ladder counts the death either way.
    store.failed(record, { kind: failure, attempts: (sameStreak ? record.recovery.attempts : 0) + 1 }, error, when !== 'loading');
    const verdict = verdictOf(record, store.demands) ?? 'retry';
    const at = clock.now();
    const fields = { level, kind: record.recovery.kind, attempts: record.recovery.attempts, error };
    store.emit({ type: 'LaunchFailed', modelId, level, kind: record.recovery.kind, attempts: record.recovery.attempts, error, nextAction: verdict, at });
    switch (verdict) {
      case 'retry': {
        // The machine's condition is looked at again soon, whatever the streak: the model is
        // back as soon as it has cleared, and a launch that fails before any process runs costs nothing.
        const delayMs = failure === 'environment' ? ENVIRONMENT_RECHECK_MS : backoffDelay(record.recovery.attempts, this.deps.backoff);
        store.retryAt(record, { at: at + delayMs, dueAt: clock.elapsed() + delayMs, delayMs });
        // Said once when the machine gets in the way, not at every look.
        if (!(failure === 'environment' && sameStreak)) log.warn(`${modelId} ${what}; retrying in ${seconds(delayMs)}`, fields);
        if (this.deps.live()) this.timer(this.retryTimers, modelId).set(delayMs, () => this.deps.trigger());
        store.refresh(record);
        return;
      }
      case 'degrade':
        log.warn(`${modelId} ${what}; relaunching at the ${launchLevelAfter(record.recovery)} level`, fields);
        store.refresh(record);
        this.deps.trigger();
        return;
      case 'fallback': {
        const fallbackId = store.demands.get(modelId)?.fallbackId ?? '';
        const reason = fallbackReason(record, fallbackId);
        log.warn(`${modelId} ${what}; falling back to ${fallbackId}`, fields);
        store.refresh(record);
        store.emit({ type: 'ModelFellBack', modelId, fallbackId, reason, at });
        this.deps.trigger();
        return;
      }
      case 'quarantine': {
        const reason = quarantineReason(record, store.demands);
        log.error(`${modelId} is quarantined: ${reason}`, fields);
        store.refresh(record);
        store.emit({ type: 'ModelQuarantined', modelId, reason, at });
        // It leaves the desired set: the next pass drops it from the plan, frees the memory the
        // plan had set aside for it, and lets the models it was keeping out come back.
        this.deps.trigger();
        return;
      }
    }
  }

  /** Forgets the model's failures (a person's retry, a new definition, proven health): its next launch is 'full' again. */
  reset(record: ModelRecord): void {
    this.deps.store.forgetFailures(record);
    this.retryTimers.get(record.modelId)?.clear();
    this.endTrial(record.modelId);
  }

  /** The model's ready server answered a request: the proof of health that starts a failing model's ladder over. */
  served(record: ModelRecord): void {
    if (record.server?.phase !== 'ready') return;
    this.deps.store.serverServed(record, record.server);
    if (record.recovery.attempts > 0) this.provedHealthy(record, 'it answered a request');
  }

  /** Arms the trial of a failing model's server `pid` that just became ready. */
  startTrial(record: ModelRecord, pid: number): void {
    if (!this.deps.live()) return;
    const trialMs = this.deps.healthyAfterMs();
    this.timer(this.healthTimers, record.modelId).set(trialMs, () => {
      if (record.server?.pid === pid && record.server.phase === 'ready' && record.recovery.attempts > 0) this.provedHealthy(record, `it stayed ready for ${seconds(trialMs)}`);
    });
  }

  /** Its server is gone: a trial in progress is over, unproven. */
  endTrial(modelId: string): void {
    this.healthTimers.get(modelId)?.clear();
  }

  /** The record is forgotten: its retry timer with it. */
  forget(modelId: string): void {
    this.retryTimers.get(modelId)?.clear();
    this.retryTimers.delete(modelId);
  }

  clearTimers(): void {
    for (const timer of this.retryTimers.values()) timer.clear();
    for (const timer of this.healthTimers.values()) timer.clear();
  }

  /** A failing model's server proved itself: the ladder starts over, so its next launch is 'full' again. */
  private provedHealthy(record: ModelRecord, why: string): void {
    this.deps.log.info(`${record.modelId} is healthy again (${why}); its recovery ladder starts over`, { attempts: record.recovery.attempts, kind: record.recovery.kind });
    this.reset(record);
    this.deps.store.refresh(record);
  }

  private timer(timers: Map<string, OneShotTimer>, modelId: string): OneShotTimer {
    let timer = timers.get(modelId);
    if (timer === undefined) {
      timer = new OneShotTimer(this.deps.clock);
      timers.set(modelId, timer);
    }
    return timer;
  }
}
