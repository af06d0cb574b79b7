// The words for a request record, the same on every surface: `llmtray activity` and the
// dashboard's Activity tab both say "waited 2.1 s for a load" and "31 → 12 tokens (24 cached)"
// from these, so the two never disagree on what a figure means. Pure.
import type { RequestRecord } from './request-record.js';

/** A duration as a person reads it: "850 ms", "2.1 s", "1 min 05 s"; "—" for unknown. */
export function durationWords(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  return `${Math.floor(seconds / 60)} min ${String(seconds % 60).padStart(2, '0')} s`;
}

/** What it waited for and how long: "load 2.1 s", "room 300 ms", or "—" when taken at once. */
export function waitWords(record: Pick<RequestRecord, 'waited' | 'waitMs'>): string {
  return record.waited === null ? '—' : `${record.waited} ${durationWords(record.waitMs)}`;
}

/** Prompt → written tokens, with the cached part of the prompt: "31 → 12 (24 cached)"; "—" when the engine said nothing. */
export function tokenWords(record: Pick<RequestRecord, 'promptTokens' | 'cachedTokens' | 'completionTokens'>): string {
  if (record.promptTokens === null && record.completionTokens === null) return '—';
  const cached = record.cachedTokens === null || record.cachedTokens === 0 ? '' : ` (${record.cachedTokens} cached)`;
  return `${record.promptTokens ?? '?'} → ${record.completionTokens ?? '?'}${cached}`;
}

/** "45.2 tok/s", or "—". */
export function speedWords(tokensPerSecond: number | null): string {
  return tokensPerSecond === null ? '—' : `${tokensPerSecond.toFixed(1)} tok/s`;
}

/** The model as a person reads it: the one asked for, and the one that answered where a fallback did ("big → small"). */
export function modelWords(record: Pick<RequestRecord, 'model' | 'servedBy'>): string {
  const asked = record.model ?? '(none)';
  return record.servedBy !== null && record.servedBy !== record.model ? `${asked} → ${record.servedBy}` : asked;
}

/** What `activity.keepBodies` means for the page: whether bodies are kept, and how much of each. */
export function bodiesWords(keepBodiesBytes: number): string {
  if (keepBodiesBytes === 0) return 'Bodies are not kept (activity.keepBodies is not set).';
  const size = keepBodiesBytes >= 1024 ? `${Math.round(keepBodiesBytes / 1024)} KiB` : `${keepBodiesBytes} bytes`;
  return `The first ${size} of each request's body and of its answer are kept in memory (activity.keepBodies).`;
}
