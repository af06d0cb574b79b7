// The /metrics side of the request records: per model, histograms of the time to first token,
// the generation speed and the wait for an engine, and a count of requests by status (429s
// among them), cumulative since the daemon started.
//
// Why counted as records arrive rather than computed from the request log at each scrape: the
// log is a ring (the newest 1,000), and Prometheus' histograms and counters must only grow — a
// bucket computed over a ring would fall as old records leave it, which every rate() reads as a
// counter reset. Why only catalog models: a record of a 404 carries the model name as the client
// typed it, and one label value per typo would grow the page without bound.
import type { RequestRecord } from '../contracts/requests/request-record.js';

/** Upper bounds, seconds: from a warm model's first token to a cold load's. */
export const FIRST_TOKEN_BUCKETS_S = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60] as const;
/** Upper bounds, tokens/s: a CPU's few to a GPU's hundreds. */
export const TOKENS_PER_SECOND_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500] as const;
/** Upper bounds, seconds: taken at once, a turn, a load, the activation bound. */
export const WAIT_BUCKETS_S = [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60] as const;

/** One histogram: `counts[i]` observations at or below `bounds[i]` (cumulative, as the format says), then the +Inf count. */
export interface Histogram {
  bounds: readonly number[];
  counts: number[];
  count: number;
  sum: number;
}

export interface ModelRequestMetrics {
  firstTokenSeconds: Histogram;
  tokensPerSecond: Histogram;
  waitSeconds: Histogram;
  /** Requests by status code, as text ("200", "429", "499"). */
  byStatus: Map<string, number>;
}

export class RequestHistograms {
  private readonly byModel = new Map<string, ModelRequestMetrics>();

  /** `isModel`: whether an id is a catalog model's (read per record: the catalog reloads). */
  constructor(private readonly isModel: (id: string) => boolean) {}

  /** Counts one finished request. O(buckets). */
  observe(record: RequestRecord): void {
    const model = record.servedBy ?? record.model;
    if (model === null || !this.isModel(model)) return;
    let metrics = this.byModel.get(model);
    if (metrics === undefined) {
      metrics = { firstTokenSeconds: histogram(FIRST_TOKEN_BUCKETS_S), tokensPerSecond: histogram(TOKENS_PER_SECOND_BUCKETS), waitSeconds: histogram(WAIT_BUCKETS_S), byStatus: new Map() };
      this.byModel.set(model, metrics);
    }
    if (record.firstTokenMs !== null) add(metrics.firstTokenSeconds, record.firstTokenMs / 1000);
    if (record.tokensPerSecond !== null) add(metrics.tokensPerSecond, record.tokensPerSecond);
    // A request refused before it could wait (a 404, a 400) did not queue: only those that reached activation count.
    if (record.servedBy !== null || record.waited !== null) add(metrics.waitSeconds, record.waitMs / 1000);
    const status = String(record.status);
    metrics.byStatus.set(status, (metrics.byStatus.get(status) ?? 0) + 1);
  }

  /** Every model that had a request, with its figures; for renderMetrics. */
  models(): ReadonlyMap<string, ModelRequestMetrics> {
    return this.byModel;
  }
}

function histogram(bounds: readonly number[]): Histogram {
  return { bounds, counts: bounds.map(() => 0), count: 0, sum: 0 };
}

function add(h: Histogram, value: number): void {
  h.bounds.forEach((bound, i) => {
    if (value <= bound) h.counts[i] = (h.counts[i] ?? 0) + 1;
  });
  h.count += 1;
  h.sum += value;
}
