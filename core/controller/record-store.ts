// The controller's records and the publisher of their changes: the one source every answer
// about a model comes from (read-model.ts), and the one place its status is derived and said.
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
import { newRecord, verdictOf, type Demands, type ModelRecord } from './model-record.js';

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
    record.status = status;
    this.emit({ type: 'ModelStateChanged', modelId: record.modelId, status, previous });
  }

  setOp(record: ModelRecord, op: ModelRecord['op']): void {
    record.op = op;
    this.refresh(record);
  }

  emit(event: ControllerEvent): void {
    this.events.fire(event);
  }
}
