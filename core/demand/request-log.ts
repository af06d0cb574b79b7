// The newest requests the router served, in memory: a ring of `activity.keep` records (default
// 1,000), the oldest dropped as a new one comes. What `GET /api/activity`, the event stream, the
// CLI and the dashboard's Activity tab read (core/contracts/requests/request-record.ts).
//
// Why a ring in memory and not a file: the question it answers is "what just happened" ("why was
// that answer slow?"); a log on disk would be a second access log to rotate, and the records
// hold prompts' sizes and client names a person did not ask to have written down. A fixed-size
// array indexed modulo its length rather than push and shift: shift is O(n) per request, on the
// request path.
import { Emitter, type Event } from '../common/emitter.js';
import { matchesFilter, type RequestFilter, type RequestRecord } from '../contracts/requests/request-record.js';
import { DEFAULT_ACTIVITY_KEEP } from '../catalog/config/schema.js';

export class RequestLog {
  private slots: (RequestRecord | undefined)[];
  /** Where the next record goes; the newest is the one before it. */
  private next = 0;
  private count = 0;
  private readonly recorded = new Emitter<RequestRecord>('the request log');

  /** Each record as it is added (the admin event stream, the /metrics histograms). */
  readonly onRecorded: Event<RequestRecord> = this.recorded.event;

  /** `keep`: how many records are held, at least 1. */
  constructor(keep: number = DEFAULT_ACTIVITY_KEEP) {
    this.slots = new Array<RequestRecord | undefined>(Math.max(1, keep));
  }

  /** How many records it holds at most. */
  get keep(): number {
    return this.slots.length;
  }

  /** Adds a finished request's record, dropping the oldest when full. O(1); never throws (a listener's throw is reported by the emitter). */
  add(record: RequestRecord): void {
    this.slots[this.next] = record;
    this.next = (this.next + 1) % this.slots.length;
    this.count = Math.min(this.count + 1, this.slots.length);
    this.recorded.fire(record);
  }

  /** The records `filter` asks for, newest first, at most `limit`. O(keep). */
  list(filter: RequestFilter = {}, limit: number = this.slots.length): RequestRecord[] {
    const found: RequestRecord[] = [];
    for (let back = 1; back <= this.count && found.length < limit; back++) {
      const record = this.slots[(this.next - back + this.slots.length) % this.slots.length];
      if (record !== undefined && matchesFilter(record, filter)) found.push(record);
    }
    return found;
  }

  /**
   * Holds `keep` records from now on (a config reload), keeping the newest of those it has.
   * Idempotent for the same size.
   */
  resize(keep: number): void {
    const size = Math.max(1, keep);
    if (size === this.slots.length) return;
    const kept = this.list({}, size).reverse();
    this.slots = new Array<RequestRecord | undefined>(size);
    kept.forEach((record, index) => (this.slots[index] = record));
    this.count = kept.length;
    this.next = kept.length % size;
  }
}
