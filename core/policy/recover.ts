// The recovery ladder: what to do after a model server failed, by cause and by how often.
//
// Why by cause: an out-of-memory launch repeated unchanged fails the same way every time, so
// it is never simply retried; a crash with no sign of memory trouble often is transient; a
// hang may be a slow load once, a wedged runtime after that. Why a ladder that only climbs:
// a model that fails whatever we do must end in quarantine, not in a hot restart loop that
// eats the reconcile pass and the GPU.
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { FailureKind, RecoveryAction } from '../contracts/recovery.js';

/** Severity rank of each action; the ladder never goes down it as attempts grow. */
export const RECOVERY_SEVERITY: Readonly<Record<RecoveryAction, number>> = {
  retry: 0,
  degrade: 1,
  fallback: 2,
  quarantine: 3,
};

export function severity(action: RecoveryAction): number {
  return RECOVERY_SEVERITY[action];
}

/**
 * A model's failure memory: the kind of the most recent failure and how many consecutive
 * attempts have failed, the one that produced this state included. Proof of health (an
 * answered request, or a trial survived: core/controller) resets it to
 * { kind: 'none', attempts: 0 }.
 */
export interface RecoveryState {
  kind: FailureKind;
  attempts: number;
}

type Failure = Exclude<FailureKind, 'none'>;

/**
 * The action for attempt 1, 2, 3, ... of each kind; past the end of a row is quarantine.
 *
 *   | kind    | 1          | 2          | 3          | 4          | 5+         |
 *   | oom     | degrade    | degrade    | degrade    | fallback   | quarantine |
 *   | hang    | retry      | degrade    | degrade    | fallback   | quarantine |
 *   | crash   | retry      | retry      | retry      | retry      | quarantine |
 *   | invalid | quarantine | quarantine | quarantine | quarantine | quarantine |
 *   | environment | retry  | retry      | retry      | retry      | retry, for ever |
 */
const ACTION_LADDER: Readonly<Record<Failure, readonly RecoveryAction[]>> = {
  oom: ['degrade', 'degrade', 'degrade', 'fallback'],
  hang: ['retry', 'degrade', 'degrade', 'fallback'],
  crash: ['retry', 'retry', 'retry', 'retry'],
  // Every retry of a file that cannot be loaded fails the same way; its first caller should
  // hear why within seconds, not after four backoffs.
  invalid: [],
  // Not the model's fault: a full disk or an unplugged drive is fixed by a person or by time,
  // and the model must come back by itself when it is. It never climbs (recover() says retry).
  environment: [],
};

/**
 * The level for the launch after attempt 1, 2, ...; past the end of a row the last entry
 * holds.
 *
 *   | kind    | 1               | 2               | 3 and more      |
 *   | oom     | smaller-context | partial         | minimal         |
 *   | hang    | full            | smaller-context | smaller-context |
 *   | crash   | full            | full            | full            |
 *
 * oom: the first degrade shrinks the context, the second moves part of the layers to host
 * RAM, the third the whole model to the CPU. Why partial before the CPU: a model a little too
 * big for the device still runs its device half at GPU speed, where the CPU alone is several
 * times slower. hang: a wedged load is not a memory shortage, so it only gets the lighter
 * context, never the CPU. crash: nothing suggests the size was at fault.
 */
const LEVEL_LADDER: Readonly<Record<Failure, readonly LaunchLevel[]>> = {
  oom: ['smaller-context', 'partial', 'minimal'],
  hang: ['full', 'smaller-context'],
  crash: ['full'],
  invalid: ['full'],
  environment: ['full'],
};

/**
 * The next action for a failing model. kind 'none' or attempts <= 0 (or not a number) answers
 * 'retry': there is no failure to escalate, and 'retry' is the action that changes nothing.
 * Pure and total.
 */
export function recover(state: RecoveryState): RecoveryAction {
  const attempt = attemptOf(state);
  if (attempt === null || attempt.kind === 'environment') return 'retry';
  return ACTION_LADDER[attempt.kind][attempt.index] ?? 'quarantine';
}

/**
 * The level the next launch of this model should use given its failure history; 'full' when
 * nothing failed. For a given kind it never grows back as attempts grow: a model that was
 * shrunk is not relaunched bigger while it keeps failing. Pure and total.
 */
export function launchLevelAfter(state: RecoveryState): LaunchLevel {
  const attempt = attemptOf(state);
  if (attempt === null) return 'full';
  const row = LEVEL_LADDER[attempt.kind];
  return row[Math.min(attempt.index, row.length - 1)] ?? 'full';
}

/** The ladder row and zero-based column for a state, or null when nothing has failed. */
function attemptOf(state: RecoveryState): { kind: Failure; index: number } | null {
  const attempts = Math.floor(state.attempts);
  if (state.kind === 'none' || !(attempts >= 1)) return null;
  return { kind: state.kind, index: attempts - 1 };
}
