// `llmtray activity`: the requests the daemon served, as a table and a per-model summary; with
// -f, every request after them as it ends, until Ctrl-C (or the daemon stops).
//
// Following loses nothing and repeats nothing as `logs -f` does (follow-events.ts): subscribe
// first, list once the stream is live, then print the events whose records the list did not hold.
import type { ActivityAnswer, RequestFilter, RequestRecord } from '../contracts/requests/request-record.js';
import { matchesFilter } from '../contracts/requests/request-record.js';
import { summarizeRequests } from '../contracts/requests/request-summary.js';
import { durationWords, modelWords, speedWords, tokenWords, waitWords } from '../contracts/requests/request-words.js';
import type { CliAdmin } from './admin-client.js';
import { followAfterFirstAnswer, type FollowEnd } from './follow-events.js';
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
export async function followActivity(admin: CliAdmin, filter: RequestFilter, count: number, write: (text: string) => void, signal: AbortSignal): Promise<FollowEnd> {
  let listed = new Set<string>();
  return followAfterFirstAnswer<RequestRecord>(
    admin,
    {
      pick: (event) => (event.type === 'RequestRecorded' && matchesFilter(event.record, filter) ? event.record : null),
      fetch: async () => {
        const answer = await admin.getActivity(filter);
        write(activityText(answer, count));
        listed = new Set(answer.requests.map((r) => r.id));
      },
      // A request that ended while the list was read is in the list already: printed once.
      place: (record) => {
        if (!listed.has(record.id)) write(activityLine(record));
      },
    },
    signal,
  );
}
