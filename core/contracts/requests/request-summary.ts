// The per-model summary of request records: how many, how many failed, the median and 95th
// percentile time to first token, the median generation speed. The dashboard's Activity tab and
// `llmtray activity` show it over the records the daemon holds; pure, so both say the same.
import type { RequestRecord } from './request-record.js';

export interface ModelRequestSummary {
  /** The model that answered (servedBy), else the model asked for; "(none)" for requests that named none. */
  model: string;
  requests: number;
  /** Of them, those that did not end answered: a status of 400 or more (a client that left included), or an error after a 200 (an engine's error event in its stream). */
  failed: number;
  /** Over the requests that reached a first token; null when none did. */
  firstTokenP50Ms: number | null;
  firstTokenP95Ms: number | null;
  /** Over the requests whose speed is known; null when none is. */
  tokensPerSecondP50: number | null;
}

/**
 * The value at the given percentile (0 < p ≤ 100) of `values` by the nearest-rank method: the
 * smallest value with at least p% of the values at or below it, so it is always one that was
 * seen (no interpolation inventing a time no request took). Null for no values.
 */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1] ?? null;
}

/** One summary per model, busiest first (then by name). */
export function summarizeRequests(records: readonly RequestRecord[]): ModelRequestSummary[] {
  const byModel = new Map<string, RequestRecord[]>();
  for (const record of records) {
    const model = record.servedBy ?? record.model ?? '(none)';
    const list = byModel.get(model);
    if (list === undefined) byModel.set(model, [record]);
    else list.push(record);
  }
  const summaries = [...byModel].map(([model, list]): ModelRequestSummary => {
    const firstTokens = list.flatMap((r) => (r.firstTokenMs === null ? [] : [r.firstTokenMs]));
    const speeds = list.flatMap((r) => (r.tokensPerSecond === null ? [] : [r.tokensPerSecond]));
    return {
      model,
      requests: list.length,
      failed: list.filter((r) => r.status >= 400 || r.error !== null).length,
      firstTokenP50Ms: percentile(firstTokens, 50),
      firstTokenP95Ms: percentile(firstTokens, 95),
      tokensPerSecondP50: percentile(speeds, 50),
    };
  });
  return summaries.sort((a, b) => b.requests - a.requests || (a.model < b.model ? -1 : a.model > b.model ? 1 : 0));
}
