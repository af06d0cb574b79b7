// `llmtray logs -f ID`: the model server's log tail, then every line as the engine writes it,
// until Ctrl-C (or the daemon stops). Batches that arrive before the tail are placed by position
// after it (core/contracts/log-lines.ts), the same rule the dashboard follows: no line is printed
// twice and none is skipped, and lines the daemon's rate limit left out show as "… N lines
// dropped". The order of subscribing and asking: follow-events.ts.
import type { AdminEvent } from '../contracts/admin-events.js';
import { linesAfter } from '../contracts/log-lines.js';
import type { CliAdmin } from './admin-client.js';
import { followAfterFirstAnswer, type FollowEnd } from './follow-events.js';

export type { FollowEnd } from './follow-events.js';

type LogAppended = Extract<AdminEvent, { type: 'LogAppended' }>;

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
  let modelId: string | null = null;
  let next: number | null = null;
  return followAfterFirstAnswer<LogAppended>(
    admin,
    {
      pick: (event) => (event.type === 'LogAppended' ? event : null),
      fetch: async () => {
        const tail = await admin.getLogs({ id: name });
        modelId = tail.modelId;
        if (tail.next === 0) options.onNoLogYet?.(tail.modelId);
        const count = options.tailLines ?? tail.lines.length;
        for (const line of count === 0 ? [] : tail.lines.slice(-count)) write(line);
        next = tail.next;
      },
      place: (batch) => {
        if (batch.modelId !== modelId) return;
        const placed = linesAfter(next, batch.first, batch.lines);
        next = placed.next;
        for (const line of placed.append) write(line);
      },
    },
    signal,
  );
}
