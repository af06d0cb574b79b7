// The answers the router, the snapshot and the admin commands ask of the controller, each a
// function of the records (record-store.ts) as they are at the moment of asking, with the last
// pass's reading of the world (demands, memory) and its plan.
//
// Why nothing here is stored: a second copy of what runs (a map of what the last pass counted,
// of whom it would swap) can be behind the records; a question asked between passes then gets
// the answer of a world that has changed. Derived on each ask, a record change (a server that
// stopped, a launch that began) is in every answer at once. All are pure lookups: O(1) per model
// or O(models), no I/O, safe on the request path.
import type { ModelStatus } from '../contracts/model-status.js';
import type { PlanView } from '../contracts/snapshot.js';
import type { Unservable } from '../contracts/controller-events.js';
import type { Placement } from '../contracts/plan.js';
import { isOutdated, NONE, quarantineReason, servingModelOf, verdictOf } from './model-record.js';
import type { RecordStore } from './record-store.js';
import { heldBy } from './residents.js';
import { spareWanted } from './spare-verdict.js';

export class ReadModel {
  constructor(private readonly store: Pick<RecordStore, 'records' | 'demands' | 'memory' | 'plan'>) {}

  /** The model's status as last published, or undefined when the controller has not seen it. */
  status(modelId: string): ModelStatus | undefined {
    return this.store.records.get(modelId)?.status ?? undefined;
  }

  /** Every known model's status, by id. */
  statuses(): ModelStatus[] {
    return [...this.store.records.values()]
      .flatMap((r) => (r.status === null ? [] : [r.status]))
      .sort((a, b) => (a.modelId < b.modelId ? -1 : a.modelId > b.modelId ? 1 : 0));
  }

  /** The last pass's plan with its reasons and when it was made; null before the first pass. */
  lastPlan(): PlanView | null {
    return this.store.plan;
  }

  /** The model that answers for `modelId`: itself, or its fallback while in 'fallback'. */
  servingModel(modelId: string): string {
    return servingModelOf(modelId, this.store.records, this.store.demands);
  }

  /**
   * Why the model will not come if asked now, or null when it may: quarantined (final until a
   * retry), or left out of the last plan in the strict sense — it cannot fit even with every
   * evictable model gone (may be stale: call reconcileNow and ask again before refusing). A
   * model kept out only until busy or higher-ranked models make room is not unservable: a
   * request for it waits (see waitReason). While it falls back, its fallback's problem counts
   * as its own.
   */
  whyUnservable(modelId: string): Unservable | null {
    const own = this.ownUnservable(modelId);
    if (own !== null) return own;
    const serving = this.servingModel(modelId);
    if (serving === modelId) return null;
    const inner = this.ownUnservable(serving);
    return inner === null ? null : { code: inner.code, reason: `its fallback ${serving} is unavailable: ${inner.reason}` };
  }

  /**
   * Why the model that serves for `modelId` is not up yet, in words, for a request that waited
   * out its bound: the plan's reason while it waits for room, else what it is doing.
   */
  waitReason(modelId: string): string {
    const serving = this.servingModel(modelId);
    const record = this.store.records.get(serving);
    const subject = serving === modelId ? 'it' : `its fallback ${serving}`;
    if (record === undefined) return `${subject} is waiting for its first pass`;
    const failed = record.recovery.attempts > 0 ? `its last launch failed (${record.recovery.kind}: ${record.lastError ?? 'no reason given'}) and ` : '';
    if (record.leftOut !== null) return `${subject === 'it' ? '' : `${subject}: `}${failed}it is waiting for memory: ${record.leftOut.reason}`;
    const status = record.status;
    if (status === null) return `${subject} is waiting for its first pass`;
    // Every refusal carries the last failure's words: "failed (retrying in 2 s)" alone hid a full disk.
    const lastFailure = record.recovery.attempts > 0 ? `; its last launch failed (${record.recovery.kind}: ${record.lastError ?? 'no reason given'})` : '';
    return `${subject} is ${status.state}${status.next === null ? '' : ` (${status.next})`}${lastFailure}`;
  }

  /**
   * The models that `modelId` stands in the way of: those the last plan left out that it would
   * have launched, with `modelId` evicted, had no busy model been busy. Empty when it is in
   * nobody's way. The router uses it to end a busy model's turn: once such a model has waited
   * long enough, new requests for `modelId` wait too, so it drains and the swap happens
   * (requests are served grouped by model, and no model starves).
   */
  yieldsTo(modelId: string): readonly string[] {
    return this.store.records.get(modelId)?.yieldsTo ?? NONE;
  }

  /** Where the model's server runs or loads, as its launch was placed; null when none runs (or one this controller did not launch). */
  placement(modelId: string): Placement | null {
    const record = this.store.records.get(modelId);
    return record?.server?.placement ?? (record?.op?.kind === 'loading' ? record.op.placement : null);
  }

  /**
   * What the model's server holds (or its launch in flight will), and where: priced as the pass
   * prices it, by the last pass's measurement, so a memory picture drawn from it agrees with the
   * plan's reasons. Null when it holds nothing now.
   */
  held(modelId: string): { bytes: number; placement: Placement | null } | null {
    const record = this.store.records.get(modelId);
    return record === undefined ? null : heldBy(record, this.store.demands, this.store.memory?.serverBytes ?? null);
  }

  /**
   * The model's server runs a definition that has since changed: new requests wait for its
   * relaunch rather than being answered by the old one (a context of 1024 where 2048 is
   * configured, a replaced file's old weights).
   */
  definitionPending(modelId: string): boolean {
    const record = this.store.records.get(modelId);
    const demand = this.store.demands.get(modelId);
    return record !== undefined && demand !== undefined && isOutdated(record, demand);
  }

  /** Whether a warm spare may be kept beside what runs now (spare-verdict.ts). */
  spareWanted(): boolean {
    return spareWanted(this.store.records, this.store.demands, this.store.memory);
  }

  private ownUnservable(modelId: string): Unservable | null {
    const record = this.store.records.get(modelId);
    if (record === undefined) return null;
    const demands = this.store.demands;
    if (verdictOf(record, demands) === 'quarantine') return { code: 'model_quarantined', reason: quarantineReason(record, demands) };
    if (record.leftOut?.strict === true) return { code: 'model_unschedulable', reason: record.leftOut.reason };
    // The machine in the way (its file missing, the data dir's disk full): the model waits and is
    // retried, never quarantined, but a request is not held through backoffs that may last until
    // a person plugs a drive back in. Not while a retry runs or its server is up: the condition may have cleared.
    if (record.recovery.kind === 'environment' && record.op === null && record.server === null && record.retry !== null && record.lastError !== null) {
      return { code: 'model_environment_failure', reason: record.lastError, retryAfterSeconds: Math.max(1, Math.ceil(record.retry.delayMs / 1000)) };
    }
    return null;
  }
}
