// What the controller remembers about one model between passes, and the pure readings of it.
//
// Why so little is stored: everything else (is it wanted, what does it cost) is read fresh on
// every pass. The record keeps what the world cannot tell us again: the failure memory, the
// operation the controller itself has in progress, its server as the supervisor's lifecycle
// events said (the one truth about what is resident: a view of events, never a snapshot to
// compare), and the last status it published (to emit a change only when there is one).
import { recover, type RecoveryState } from '../policy/recover.js';
import type { ModelStatus } from '../contracts/model-status.js';
import type { ModelDemand } from './effects.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { LeftOut, Placement } from '../contracts/plan.js';
import type { RecoveryAction } from '../contracts/recovery.js';
import type { ReportedServerPhase } from '../contracts/server-events.js';

/** Its server as the lifecycle events said: see ModelRecord.server. */
export interface RecordedServer {
  readonly level: LaunchLevel;
  readonly pid: number;
  /** loading from ServerSpawned, ready from ServerReady: the supervisor's words for its server's life. */
  readonly phase: ReportedServerPhase;
  readonly served?: boolean;
  readonly placement?: Placement;
  readonly definitionHash?: string;
}

/**
 * One model's memory between passes. Read anywhere; written only by the record store's named
 * steps (record-store.ts), so every change to what the controller remembers has one home.
 */
export interface ModelRecord {
  readonly modelId: string;
  readonly recovery: RecoveryState;
  /** The last launch failure's message; null after a success or a reset. */
  readonly lastError: string | null;
  /**
   * The last failure was a server dying after it had been ready (killed, crashed or hung), not
   * a launch that never got there. Such a model loaded with this very definition, so with a
   * request waiting it competes for memory as any model does while its ladder counts the death;
   * only failed launches are kept to memory nobody wants (see policy-inputs.ts).
   */
  readonly diedWhileServing: boolean;
  /**
   * A backed-off retry: no launch before `dueAt` (the clock's elapsed(), so a wall-clock step
   * neither holds nor hurries it); `at` is the same moment in epoch ms, shown as nextAttemptAt.
   * Null when none is pending.
   */
  readonly retry: { at: number; dueAt: number; delayMs: number } | null;
  /**
   * What the controller is doing to it now; at most one thing at a time. A launch's failure is
   * counted from its ServerExited event, which ends its loading op; its rejection counts only
   * while that op is still its own (no event came), and the next launch may start before the
   * rejection arrives.
   */
  readonly op: { kind: 'loading'; level: LaunchLevel; placement: Placement; definitionHash?: string } | { kind: 'evicting'; level: LaunchLevel } | null;
  /**
   * Its server, folded from the lifecycle events: spawned (phase loading), ready; null when none
   * runs. `placement` is where the launch put it (absent for a server this controller did not
   * launch). `served`: since it became ready it answered a request (Controller.served).
   * `definitionHash`: the definition it was launched with (absent: not this controller's launch).
   */
  readonly server: RecordedServer | null;
  /** The last pass asked the policy for it: wanted itself, or standing in for a model that falls back to it. */
  readonly desired: boolean;
  /** Why the last plan left it out; null when the plan did not leave it out. */
  readonly leftOut: LeftOut | null;
  /** The models the last plan left out that it would have launched with this one evicted, had no busy model been busy (Controller.yieldsTo). */
  readonly yieldsTo: readonly string[];
  /** Why it has not moved up to the faster placement the last pass found for it (move-up.ts); null when none waits. */
  readonly movingUp: string | null;
  /** The definition seen on the last pass; a change resets the recovery ladder. */
  readonly definitionHash: string | null;
  /** The status last published; null before the first. */
  readonly status: ModelStatus | null;
}

/** No model: the yieldsTo of a model in nobody's way. */
export const NONE: readonly string[] = Object.freeze([]);

export const NO_FAILURE: Readonly<RecoveryState> = Object.freeze({ kind: 'none', attempts: 0 });

export function newRecord(modelId: string): ModelRecord {
  return {
    modelId,
    recovery: NO_FAILURE,
    lastError: null,
    diedWhileServing: false,
    retry: null,
    op: null,
    server: null,
    desired: false,
    leftOut: null,
    yieldsTo: NONE,
    movingUp: null,
    definitionHash: null,
    status: null,
  };
}

export type Demands = ReadonlyMap<string, ModelDemand>;
export type Records = ReadonlyMap<string, ModelRecord>;

/**
 * Why the model cannot fall back, or null when it can: its fallback must be configured,
 * another model, and in the catalog. A ladder that says fallback with a problem here means
 * quarantine (DESIGN: "with none configured it means quarantine").
 */
export function fallbackProblem(modelId: string, demands: Demands): string | null {
  const fallbackId = demands.get(modelId)?.fallbackId;
  if (fallbackId === undefined) return 'it has no fallback model configured';
  if (fallbackId === modelId) return 'its fallback is itself';
  if (!demands.has(fallbackId)) return `its fallback '${fallbackId}' is not in the catalog`;
  return null;
}

/** The ladder's answer for the model with the catalog applied; null when nothing is failing. */
export function verdictOf(record: ModelRecord, demands: Demands): RecoveryAction | null {
  if (record.recovery.kind === 'none' || record.recovery.attempts < 1) return null;
  const action = recover(record.recovery);
  return action === 'fallback' && fallbackProblem(record.modelId, demands) !== null ? 'quarantine' : action;
}

/**
 * The model that answers for `modelId`: itself, or while its ladder says fallback, its
 * fallback (and that one's, if it is falling back too). A cycle of fallbacks stops at the
 * last model before it repeats, which is itself in fallback and so is never launched: the
 * request waits out its bound rather than the loop spinning.
 */
export function servingModelOf(modelId: string, records: Records, demands: Demands): string {
  let current = modelId;
  // Made only once a fallback is followed: every request asks, and almost none falls back.
  let seen: Set<string> | null = null;
  for (;;) {
    const record = records.get(current);
    const next = demands.get(current)?.fallbackId;
    if (record === undefined || next === undefined || verdictOf(record, demands) !== 'fallback') return current;
    seen ??= new Set([modelId]);
    if (seen.has(next)) return current;
    seen.add(next);
    current = next;
  }
}

function failedLaunches(recovery: RecoveryState): string {
  return `failed ${recovery.attempts} launch${recovery.attempts === 1 ? '' : 'es'} in a row`;
}

function lastFailure(record: ModelRecord): string {
  return `last failure: ${record.recovery.kind}${record.lastError === null ? '' : ` — ${record.lastError}`}`;
}

/** Why a quarantined model will not be launched, and what lifts it. */
export function quarantineReason(record: ModelRecord, demands: Demands): string {
  const problem = recover(record.recovery) === 'fallback' ? fallbackProblem(record.modelId, demands) : null;
  const ladder = problem === null ? '' : `; the ladder says fall back, but ${problem}`;
  return `${failedLaunches(record.recovery)} (${lastFailure(record)})${ladder}. It is quarantined until you retry it or change its definition.`;
}

/** Why a model's fallback answers in its place, and what ends that. */
export function fallbackReason(record: ModelRecord, fallbackId: string): string {
  return `${failedLaunches(record.recovery)} (${lastFailure(record)}). ${fallbackId} answers in its place until you retry it or change its definition.`;
}

/** Its ready server was launched with another definition than the model has now (a new context, file, arguments…). */
export function isOutdated(record: ModelRecord, demand: ModelDemand): boolean {
  const launchedWith = record.server?.definitionHash;
  return record.server?.phase === 'ready' && launchedWith !== undefined && launchedWith !== demand.definitionHash;
}
