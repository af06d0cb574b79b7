// The visible state of one model, as the controller owns it and every surface shows it
// (tray, dashboard, CLI, /v1/models, HTTP 503 messages). Declared once here so that the
// controller, the admin API, the Electron bridge and the renderer cannot drift apart.
import type { LaunchLevel } from './launch-level.js';
import type { FailureKind, RecoveryAction } from './recovery.js';

/**
 * Where a model is in its life, one axis of its visible state (the others are its level and
 * whether it is busy). Kept apart from the summary word so that a degraded model that answers
 * is still degraded, and a busy one still busy: the summary word can say only one of the two.
 * - idle: not resident and not wanted right now.
 * - queued: wanted, waiting for its turn (memory being freed, or backing off before a retry).
 * - loading: its server is starting.
 * - serving: its own server is up and answers its requests, at its level.
 * - evicting: its server is stopping and its memory is not back yet.
 * - failed: the last launch failed; the recovery ladder says what comes next.
 * - fallback: its configured fallback model answers in its place.
 * - quarantined: not launched again until a person retries it or its definition changes.
 */
export type ModelPhase = 'idle' | 'queued' | 'loading' | 'serving' | 'evicting' | 'failed' | 'fallback' | 'quarantined';

/**
 * What a model is doing now, in one word a person reads: the phase, except that a serving model
 * is `active` while busy, `ready` at the full level and `degraded` below it (stateWord). The
 * word every surface and the API have always shown; a surface that must say both "degraded"
 * and "answering" reads phase, level and busy instead.
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
 * The one summary word of phase × level × busy. Busy wins over the level so that the word is
 * the one it has always been (`active` while decoding, at any level); the level and busy stay
 * in the status for the surfaces that say both.
 */
export function stateWord(phase: ModelPhase, level: LaunchLevel | null, busy: boolean): ModelStateName {
  if (phase !== 'serving') return phase;
  if (busy) return 'active';
  return level === null || level === 'full' ? 'ready' : 'degraded';
}

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

/** The phase a summary word says: ready, active and degraded are all serving. */
export function phaseOfState(state: ModelStateName): ModelPhase {
  return isServing(state) ? 'serving' : state;
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
 * The states on their way in or out: wanted and waiting, starting, or giving memory back. What
 * the tray's icon shows as "loading" and counts in its tooltip.
 */
export const CHANGING_STATES = ['queued', 'loading', 'evicting'] as const satisfies readonly ModelStateName[];

/**
 * Why a model needs a person's attention, the most serious first (the tray's tooltip names them
 * in this order): quarantined, failed, answered by its fallback, serving below its full level
 * (degraded, busy or not), or any other phase with a failure on record (recovering: retrying,
 * loading again, or queued after one).
 */
export const ATTENTION_WORDS = ['quarantined', 'failed', 'fallback', 'degraded', 'recovering'] as const;
export type AttentionWord = (typeof ATTENTION_WORDS)[number];

/**
 * Why this model needs attention, or null when it does not. The one meaning of "needs
 * attention": the tray counts it, the dashboard lists it under Recovery and offers Retry, the
 * CLI names it. Read from the phase and level, not the summary word, so that a degraded model
 * does not drop out while it answers a request.
 */
export function attentionWord(status: Pick<ModelStatus, 'phase' | 'level' | 'recovery'>): AttentionWord | null {
  const { phase } = status;
  if (phase === 'quarantined' || phase === 'failed' || phase === 'fallback') return phase;
  if (isDegraded(status)) return 'degraded';
  return status.recovery.kind === 'none' ? null : 'recovering';
}

/** Serving below its full level, busy or not: what `degraded` means (the state word says it only while idle). */
export function isDegraded(status: Pick<ModelStatus, 'phase' | 'level'>): boolean {
  return status.phase === 'serving' && status.level !== null && status.level !== 'full';
}

export function needsAttention(status: Pick<ModelStatus, 'phase' | 'level' | 'recovery'>): boolean {
  return attentionWord(status) !== null;
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
  /** The summary word: stateWord(phase, level, busy). */
  state: ModelStateName;
  phase: ModelPhase;
  /** The level it runs (or will launch) at; null while not resident and not launching. */
  level: LaunchLevel | null;
  /** Serving and decoding a request now. */
  busy: boolean;
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
