// `llmtray logs -f ID`: the model server's log tail, then every line as the engine writes it,
// until Ctrl-C (or the daemon stops).
//
// The order that loses nothing: subscribe to the admin event stream first, and fetch the tail
// only once the stream is live (its first event, the snapshot, proves the subscription is in
// place). Batches that arrive before the tail are held, then placed by position after it
// (core/contracts/log-lines.ts), the same rule the dashboard follows: no line is printed twice
// and none is skipped, and lines the daemon's rate limit left out show as "… N lines dropped".
import type { AdminEvent } from '../contracts/admin-events.js';
import { linesAfter } from '../contracts/log-lines.js';
import type { CliAdmin } from './admin-client.js';

type LogAppended = Extract<AdminEvent, { type: 'LogAppended' }>;

/**
 * How following ended: the person stopped it (`signal`), or the daemon's stream ended — closed,
 * or cut as a stopping daemon cuts its connections — after it had begun.
 */
export type FollowEnd = 'stopped' | 'daemon-gone';

export interface FollowOptions {
  /** How many of the tail's last lines to write before the live ones (default: all the daemon keeps). */
  tailLines?: number;
  /** Called once, with the model's id, when its log is empty because it has never started. */
  onNoLogYet?: (modelId: string) => void;
}

/**
 * Writes the log of the model named `name` (id or alias) through `write`, a line at a time,
 * until `signal` aborts or the daemon closes the stream. Rejects when the model does not exist
 * (the daemon's sentence) or the daemon cannot be reached.
 */
export async function followLogs(admin: CliAdmin, name: string, write: (line: string) => void, signal: AbortSignal, options: FollowOptions = {}): Promise<FollowEnd> {
  const held: LogAppended[] = [];
  let modelId: string | null = null;
  let next: number | null = null;
  let asked = false;
  const stopOnFailure = new AbortController();
  let failure: unknown = null;

  const place = (batch: LogAppended): void => {
    if (batch.modelId !== modelId) return;
    const placed = linesAfter(next, batch.first, batch.lines);
    next = placed.next;
    for (const line of placed.append) write(line);
  };
  const fetchTail = async (): Promise<void> => {
    try {
      const tail = await admin.getLogs({ id: name });
      modelId = tail.modelId;
      if (tail.next === 0) options.onNoLogYet?.(tail.modelId);
      const count = options.tailLines ?? tail.lines.length;
      for (const line of count === 0 ? [] : tail.lines.slice(-count)) write(line);
      next = tail.next;
      for (const batch of held.splice(0)) place(batch);
    } catch (error) {
      failure = error;
      stopOnFailure.abort();
    }
  };

  try {
    await admin.events((event) => {
      if (!asked) {
        asked = true;
        void fetchTail();
      }
      if (event.type !== 'LogAppended') return false;
      if (next === null) held.push(event);
      else place(event);
      return false;
    }, AbortSignal.any([signal, stopOnFailure.signal]));
  } catch (error) {
    if (failure !== null) throw failure;
    if (signal.aborted) return 'stopped';
    // A daemon that could not be reached at all is the client's "cannot reach" error; one that
    // went away mid-stream is the end of the log.
    if (asked) return 'daemon-gone';
    throw error;
  }
  if (failure !== null) throw failure;
  return signal.aborted ? 'stopped' : 'daemon-gone';
}
