// A model's visible status, derived from the record and what the last pass observed.
//
// Why derived and not stored and mutated: the state machine then has exactly one place where
// its precedence is written (an operation in progress, then the ladder's verdict, then
// residency, then want), and a status can never disagree with the facts it came from.
import { launchLevelAfter } from '../policy/recover.js';
import { stateWord, type ModelPhase, type ModelStatus } from '../contracts/model-status.js';
import type { ModelDemand } from './effects.js';
import { isOutdated, type ModelRecord } from './model-record.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { RecoveryAction } from '../contracts/recovery.js';

export interface StatusFacts {
  record: ModelRecord;
  demand: ModelDemand | undefined;
  /** verdictOf(record, demands). */
  verdict: RecoveryAction | null;
  /** Desired by the last pass: wanted itself, or standing in for a model that falls back to it. */
  desired: boolean;
}

export type StatusBody = Omit<ModelStatus, 'since'>;

export function deriveStatus({ record, demand, verdict, desired }: StatusFacts): StatusBody {
  const nextLevel = launchLevelAfter(record.recovery);
  const decoding = (demand?.inFlight ?? 0) > 0;
  const body = (phase: ModelPhase, level: LaunchLevel | null, next: string | null, servedBy: string | null = null): StatusBody => {
    // Busy is a serving model's: requests that wait for a loading or failed one are not decoded.
    const busy = phase === 'serving' && decoding;
    return {
      modelId: record.modelId,
      state: stateWord(phase, level, busy),
      phase,
      level,
      busy,
      recovery: {
        kind: record.recovery.kind,
        attempts: record.recovery.attempts,
        nextAction: verdict,
        nextAttemptAt: record.retry?.at ?? null,
        lastError: record.lastError,
      },
      servedBy,
      unschedulableReason: record.leftOut?.reason ?? null,
      next,
    };
  };

  if (record.op?.kind === 'evicting') return body('evicting', record.op.level, 'stopping; its memory is not back yet');
  const starting = record.op?.kind === 'loading' ? record.op.level : record.server?.phase === 'loading' ? record.server.level : null;
  if (starting !== null) return body('loading', starting, `starting at the ${starting} level`);
  if (verdict === 'quarantine') return body('quarantined', null, 'waiting for a retry or a changed definition');
  if (verdict === 'fallback') {
    const fallbackId = demand?.fallbackId ?? null;
    return body('fallback', null, `${fallbackId} answers until a retry or a changed definition`, fallbackId);
  }
  if (record.server?.phase === 'ready') {
    const outdated = demand !== undefined && isOutdated(record, demand);
    return body('serving', record.server.level, outdated ? 'runs its old definition; relaunching with the new one once its requests finish' : record.movingUp);
  }
  if (verdict !== null) {
    if (!desired) return body('failed', nextLevel, `relaunching at the ${nextLevel} level when next wanted`);
    if (verdict === 'retry' && record.retry !== null) return body('failed', nextLevel, `retrying in ${seconds(record.retry.delayMs)}`);
    return body('failed', nextLevel, `relaunching at the ${nextLevel} level`);
  }
  if (desired) {
    const leftOut = record.leftOut;
    const next = leftOut === null ? 'waiting for its turn' : leftOut.strict ? 'waiting until a pinned model is unpinned or memory grows' : 'waiting for memory';
    return body('queued', null, next);
  }
  return body('idle', null, null);
}

/** Whether two statuses say the same thing (ignoring when they were made). */
export function sameStatus(a: StatusBody, b: StatusBody): boolean {
  const { since: _a, ...left } = a as ModelStatus;
  const { since: _b, ...right } = b as ModelStatus;
  return JSON.stringify(left) === JSON.stringify(right);
}

/** "4 s", "1.5 s": delays for people. */
export function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}
