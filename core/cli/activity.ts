// `llmtray activity`: the requests the daemon served, as a table and a per-model summary; with
// -f, every request after them as it ends, until Ctrl-C (or the daemon stops).
//
// Following loses nothing and repeats nothing the way `logs -f` does (follow-logs.ts): subscribe
// first, list once the stream is live, then print the events whose records the list did not hold.
import type { AdminEvent } from '../contracts/admin-events.js';
import type { ActivityAnswer, RequestFilter, RequestRecord } from '../contracts/requests/request-record.js';
import { matchesFilter } from '../contracts/requests/request-record.js';
import { summarizeRequests } from '../contracts/requests/request-summary.js';
import { durationWords, modelWords, speedWords, tokenWords, waitWords } from '../contracts/requests/request-words.js';
import type { CliAdmin } from './admin-client.js';
import { table } from './format.js';

const HEADER = ['TIME', 'ID', 'STATUS', 'MODEL', 'ROUTE', 'CLIENT', 'WAITED', 'FIRST TOKEN', 'TOKENS', 'SPEED', 'TOOK', 'ERROR'];

function cells(record: RequestRecord): string[] {
  return [
    new Date(record.at).toTimeString().slice(0, 8),
    record.id,
    String(record.status),
    modelWords(record),
    record.route,
    record.client,
    waitWords(record),
    durationWords(record.firstTokenMs),
    tokenWords(record),
    speedWords(record.tokensPerSecond),
    durationWords(record.durationMs),
    record.error ?? '',
  ];
}

/** The newest `count` records (oldest first, so the newest is on the last line, as in a log) and the summary over all those listed. */
export function activityText(answer: ActivityAnswer, count: number): string {
  if (answer.requests.length === 0) return `no requests yet (the daemon keeps the last ${answer.keep})`;
  const shown = answer.requests.slice(0, count).reverse();
  const summary = summarizeRequests(answer.requests);
  const summaryRows = summary.map((s) => [s.model, String(s.requests), String(s.failed), durationWords(s.firstTokenP50Ms), durationWords(s.firstTokenP95Ms), speedWords(s.tokensPerSecondP50)]);
  return [
    table(HEADER, shown.map(cells)),
    '',
    table(['MODEL', 'REQUESTS', 'FAILED', 'FIRST TOKEN P50', 'P95', 'SPEED P50'], summaryRows),
    ...(shown.length < answer.requests.length ? ['', `(the last ${shown.length} of ${answer.requests.length} requests held; -n N for more)`] : []),
  ].join('\n');
}

/** One followed record: its cells on one line, columns separated by two spaces. */
export function activityLine(record: RequestRecord): string {
  return cells(record).filter((cell) => cell !== '').join('  ');
}

/**
 * Prints the table (through `write`), then each record that ends afterwards and passes `filter`,
 * until `signal` aborts ('stopped') or the daemon's stream ends ('daemon-gone'). Rejects when the
 * daemon refuses (an invalid filter's sentence) or cannot be reached.
 */
export async function followActivity(admin: CliAdmin, filter: RequestFilter, count: number, write: (text: string) => void, signal: AbortSignal): Promise<'stopped' | 'daemon-gone'> {
  const held: RequestRecord[] = [];
  let listed: Set<string> | null = null;
  let asked = false;
  let failure: unknown = null;
  const stopOnFailure = new AbortController();
  const list = async (): Promise<void> => {
    try {
      const answer = await admin.getActivity(filter);
      write(activityText(answer, count));
      listed = new Set(answer.requests.map((r) => r.id));
      for (const record of held.splice(0)) if (!listed.has(record.id)) write(activityLine(record));
    } catch (error) {
      failure = error;
      stopOnFailure.abort();
    }
  };
  const onEvent = (event: AdminEvent): boolean => {
    if (!asked) {
      asked = true;
      void list();
    }
    if (event.type !== 'RequestRecorded' || !matchesFilter(event.record, filter)) return false;
    if (listed === null) held.push(event.record);
    else if (!listed.has(event.record.id)) write(activityLine(event.record));
    return false;
  };
  try {
    await admin.events(onEvent, AbortSignal.any([signal, stopOnFailure.signal]));
  } catch (error) {
    if (failure !== null) throw failure;
    if (signal.aborted) return 'stopped';
    if (asked) return 'daemon-gone';
    throw error;
  }
  if (failure !== null) throw failure;
  return signal.aborted ? 'stopped' : 'daemon-gone';
}
