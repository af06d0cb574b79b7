// The controller's records and the publisher of their changes: the one source every answer
// about a model comes from (read-model.ts), the one place its status is derived and said, and
// the one writer of the records: the fold, the ladder and the pass ask for each change by its
// name here, so what the controller remembers changes in one file.
//
// Beside the records it keeps the last pass's reading of the world (the demands, the memory
// observation) and its plan, each replaced whole at every pass: a record's status and the read
// model's answers depend on them, and one copy of each, here, is what keeps every answer a
// function of the same facts rather than of a cache kept up to date by hand.
import type { ModelStatus } from '../contracts/model-status.js';
import type { PlanView } from '../contracts/snapshot.js';
import type { ControllerEvent } from '../contracts/controller-events.js';
import type { Emitter } from '../common/emitter.js';
import type { Clock } from './effects.js';
import { deriveStatus, sameStatus } from './derive-status.js';
import type { MemoryObservation } from './memory-observation.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { LeftOut } from '../contracts/plan.js';
import type { RecoveryState } from '../policy/recover.js';
import { newRecord, NO_FAILURE, verdictOf, type Demands, type ModelRecord, type RecordedServer } from './model-record.js';

/** A record as its one writer sees it. */
type Writable<T> = { -readonly [K in keyof T]: T[K] };

export class RecordStore {
  readonly records = new Map<string, ModelRecord>();
  /** The desired state's models as the last pass read them. */
  demands: Demands = new Map();
  /** What the last pass saw of memory; null before the first pass. */
  memory: MemoryObservation | null = null;
  /** The last pass's plan with its reasons; null before the first pass. */
  plan: PlanView | null = null;

  constructor(
    private readonly clock: Clock,
    private readonly events: Emitter<ControllerEvent>,
  ) {}

  /** The model's record, made on first sight (a demand, or a server event for a model no pass has read yet). */
  recordFor(modelId: string): ModelRecord {
    let record = this.records.get(modelId);
    if (record === undefined) {
      record = newRecord(modelId);
      this.records.set(modelId, record);
    }
    return record;
  }

  /** Recomputes the model's status and publishes it if it says something new. */
  refresh(record: ModelRecord): void {
    const body = deriveStatus({ record, demand: this.demands.get(record.modelId), verdict: verdictOf(record, this.demands), desired: record.desired });
    const previous = record.status;
    if (previous !== null && sameStatus(previous, body)) return;
    const status: ModelStatus = { ...body, since: this.clock.now() };
    write(record).status = status;
    this.emit({ type: 'ModelStateChanged', modelId: record.modelId, status, previous });
  }

  /** The controller starts (or ends: null) something on the model; its status says so at once. */
  setOp(record: ModelRecord, op: ModelRecord['op']): void {
    write(record).op = op;
    this.refresh(record);
  }

  /** Its operation is over, said by whoever saw it end; the caller refreshes once it has read the rest. */
  endOp(record: ModelRecord): void {
    write(record).op = null;
  }

  // Its server, as the supervisor's lifecycle events say (server-event-fold.ts, Controller.served).

  /** A process of its launch now runs, loading, where its loading op put it. */
  serverSpawned(record: ModelRecord, level: LaunchLevel, pid: number): void {
    const op = record.op;
    write(record).server = {
      level,
      pid,
      phase: 'loading',
      ...(op?.kind === 'loading' ? { placement: op.placement, ...(op.definitionHash === undefined ? {} : { definitionHash: op.definitionHash }) } : {}),
    };
  }

  /** Its server `pid` is ready: what was known of that process stays, and it has answered nothing yet. */
  serverReady(record: ModelRecord, level: LaunchLevel, pid: number): void {
    write(record).server = { ...(record.server?.pid === pid ? record.server : {}), level, pid, phase: 'ready', served: false };
  }

  /** Its server `pid` ended; null: a launch that never ran a process, after whatever it replaced was stopped. */
  serverEnded(record: ModelRecord, pid: number | null): void {
    if (pid === null || record.server?.pid === pid) write(record).server = null;
  }

  /** Its ready server answered a request. */
  serverServed(record: ModelRecord, server: RecordedServer): void {
    write(record).server = { ...server, served: true };
  }

  // Its failures, as the recovery ladder counts them (recovery-ladder.ts).

  /** One more failure on its ladder: `recovery` is the rung now, no retry is due until one is set. */
  failed(record: ModelRecord, recovery: RecoveryState, error: string, diedWhileServing: boolean): void {
    const w = write(record);
    w.recovery = recovery;
    w.lastError = error;
    w.diedWhileServing = diedWhileServing;
    w.retry = null;
  }

  /** A backed-off retry is due at `retry` (see ModelRecord.retry). */
  retryAt(record: ModelRecord, retry: NonNullable<ModelRecord['retry']>): void {
    write(record).retry = retry;
  }

  /** Its failures are forgotten: a person's retry, a new definition, proven health. */
  forgetFailures(record: ModelRecord): void {
    const w = write(record);
    w.recovery = NO_FAILURE;
    w.lastError = null;
    w.diedWhileServing = false;
    w.retry = null;
  }

  // What the last pass read and decided of it (reconcile-pass.ts).

  /** The definition the pass read for it. */
  sawDefinition(record: ModelRecord, definitionHash: string): void {
    write(record).definitionHash = definitionHash;
  }

  /** The policy was asked for it this pass (itself, or standing in for a model that falls back to it). */
  setDesired(record: ModelRecord, desired: boolean): void {
    write(record).desired = desired;
  }

  /** The models left out that it would have let in, had no busy model been busy. */
  setYieldsTo(record: ModelRecord, yieldsTo: readonly string[]): void {
    write(record).yieldsTo = yieldsTo;
  }

  /** Why it waits to move up to a faster placement; null when it does not. */
  setMovingUp(record: ModelRecord, movingUp: string | null): void {
    write(record).movingUp = movingUp;
  }

  /** Why the plan left it out; null when it did not. */
  setLeftOut(record: ModelRecord, leftOut: LeftOut | null): void {
    write(record).leftOut = leftOut;
  }

  emit(event: ControllerEvent): void {
    this.events.fire(event);
  }
}

/** The one place a record is written: the store's own steps above. */
function write(record: ModelRecord): Writable<ModelRecord> {
  return record as Writable<ModelRecord>;
}
