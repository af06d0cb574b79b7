// The visible state of one model, as the controller owns it and every surface shows it
// (tray, dashboard, CLI, /v1/models, HTTP 503 messages). Declared once here so that the
// controller, the admin API, the Electron bridge and the renderer cannot drift apart.
import type { LaunchLevel } from './launch-level.js';
import type { FailureKind, RecoveryAction } from './recovery.js';

/**
 * What a model is doing now, in the words a person reads.
 * - idle: not resident and not wanted right now.
 * - queued: wanted, waiting for its turn (memory being freed, or backing off before a retry).
 * - loading: its server is starting. ready: resident and serving. active: decoding a request.
 * - evicting: its server is stopping and its memory is not back yet.
 * - failed: the last launch failed; the recovery ladder says what comes next.
 * - degraded: resident at a smaller level (shorter context, part on the CPU, or CPU only) after failures.
 * - fallback: its configured fallback model answers in its place.
 * - quarantined: not launched again until a person retries it or its definition changes.
 */
export type ModelStateName =
  | 'idle'
  | 'queued'
  | 'loading'
  | 'ready'
  | 'active'
  | 'evicting'
  | 'failed'
  | 'degraded'
  | 'fallback'
  | 'quarantined';

export const MODEL_STATE_NAMES: readonly ModelStateName[] = [
  'idle', 'queued', 'loading', 'ready', 'active', 'evicting', 'failed', 'degraded', 'fallback', 'quarantined',
];

/**
 * The states in which a model's own server is up and answers its requests: ready, active
 * (answering now) and degraded (answering at a smaller level). What "serving" means for
 * /metrics' `llmtray_model_ready`, the tray's "Level:" line and `llmtray load`'s "it is
 * ready"; one list, so they cannot disagree about a degraded model.
 */
export const SERVING_STATES = ['ready', 'active', 'degraded'] as const satisfies readonly ModelStateName[];
export type ServingState = (typeof SERVING_STATES)[number];

export function isServing(state: ModelStateName): state is ServingState {
  return (SERVING_STATES as readonly ModelStateName[]).includes(state);
}

/**
 * The states in which a model's server exists and holds memory: serving, loading (it is taking
 * its memory now) and evicting (its memory is not back yet). A loading model counts because
 * every surface puts "N resident" beside the memory in use, which already includes it: the
 * dashboard's header, the tray's tooltip and `llmtray status` once said 2, 1 and nothing
 * during the same load, from three lists of their own.
 */
export const RESIDENT_STATES = ['loading', ...SERVING_STATES, 'evicting'] as const satisfies readonly ModelStateName[];
export type ResidentState = (typeof RESIDENT_STATES)[number];

export function isResident(state: ModelStateName): state is ResidentState {
  return (RESIDENT_STATES as readonly ModelStateName[]).includes(state);
}

/**
 * The states in which something failed or the recovery ladder changed how the model runs, the
 * most serious first (the tray's tooltip names them in this order): what the dashboard's
 * Recovery view lists and the tray counts as a problem.
 */
export const RECOVERY_STATES = ['quarantined', 'failed', 'fallback', 'degraded'] as const satisfies readonly ModelStateName[];
export type RecoveryState = (typeof RECOVERY_STATES)[number];

export function isRecovering(state: ModelStateName): state is RecoveryState {
  return (RECOVERY_STATES as readonly ModelStateName[]).includes(state);
}

/** A model's recovery memory and what the ladder will do next. */
export interface RecoveryView {
  /** The kind of the most recent failure; 'none' after a success. */
  kind: FailureKind;
  /** Consecutive failed attempts, including the one that produced `kind`. */
  attempts: number;
  /** What the ladder does next, or null when nothing is failing. */
  nextAction: RecoveryAction | null;
  /** Epoch ms at which the next attempt is due (backoff), or null when none is scheduled. */
  nextAttemptAt: number | null;
  /** The last failure in full: llama.cpp's own cause line where there is one. */
  lastError: string | null;
}

export interface ModelStatus {
  modelId: string;
  state: ModelStateName;
  /** The level it runs (or will launch) at; null while not resident and not launching. */
  level: LaunchLevel | null;
  recovery: RecoveryView;
  /** While in 'fallback': the model that answers in its place. */
  servedBy: string | null;
  /** Why the last plan left it out, as the policy's sentence; null when it was not left out. */
  unschedulableReason: string | null;
  /** What happens next, in words ("retrying in 4 s", "waiting for a retry"), or null. */
  next: string | null;
  /** Epoch ms of the last state change. */
  since: number;
}
