// What the controller tells the rest of llmtray, as one typed union of past-tense facts.
//
// Why events and not callers reading `status()` in a loop: a caller that polls a snapshot and
// then decides races the loop that owns the state (llama-swap's old `state()` bug). The admin
// service builds its snapshot from these; the router waits on them; Electron turns
// ModelQuarantined into a desktop notification. Types only.
import type { LaunchLevel } from './launch-level.js';
import type { FailureKind, RecoveryAction } from './recovery.js';
import type { ModelStatus } from './model-status.js';
import type { PlanView } from './snapshot.js';

export type ControllerEvent =
  /** A model's visible status changed; `previous` is null the first time the controller sees it. */
  | { type: 'ModelStateChanged'; modelId: string; status: ModelStatus; previous: ModelStatus | null }
  /** A pass changed the plan or acted on it (launched or evicted something). */
  | { type: 'PlanApplied'; plan: PlanView }
  /** The model will not be launched again until a person retries it or its definition changes. */
  | { type: 'ModelQuarantined'; modelId: string; reason: string; at: number }
  /** The model's fallback answers in its place until a person retries it or its definition changes. */
  | { type: 'ModelFellBack'; modelId: string; fallbackId: string; reason: string; at: number }
  /** One launch failed; `nextAction` is the ladder's answer to it. */
  | {
      type: 'LaunchFailed';
      modelId: string;
      level: LaunchLevel;
      kind: FailureKind;
      attempts: number;
      error: string;
      nextAction: RecoveryAction;
      at: number;
    }
  /** The plan started or stopped leaving the model out, or its reason changed; null: it fits now. */
  | { type: 'ModelUnschedulableChanged'; modelId: string; reason: string | null; at: number }
  /** A pass could not read the world or an eviction failed; it runs again after `retryInMs`. */
  | { type: 'ReconcileFailed'; error: string; retryInMs: number; at: number }
  /** The controller's run ended (quit): nothing will be launched any more; waiters should give up. */
  | { type: 'ControllerStopped'; at: number };

export type ControllerEventType = ControllerEvent['type'];

/** The machine code of a model that will not come, as the router's 503 `error.code`. */
export type UnservableCode = 'model_quarantined' | 'model_unschedulable' | 'model_environment_failure';

export interface Unservable {
  code: UnservableCode;
  /** A sentence a person can act on, with the numbers in it. */
  reason: string;
  /** Where it may come soon (the machine in the way, retried on a backoff): when to ask again, s. */
  retryAfterSeconds?: number;
}
