// The evictions the model servers' own logs record, as the soak reads them off the admin event
// stream (LogAppended batches): the evidence for "0 evictions of a claimed server".
//
// Why the servers' logs and not the daemon's: only the supervisor knows, at the moment it stops
// a server, how many requests are claimed on it, and it writes that in the server's log (core/
// engine/supervisor/supervisor.ts, `evict`). The controller's "evicting X" comes before the
// supervisor's check, so an eviction it logged may still have stopped nothing ('claimed').
// Why not the clients' results alone: a request cut by an eviction is already a lost request,
// but nothing there says an eviction cut it, nor counts one the engine survived.
//
// Batches carry each line's position in its model's log, so a line the stream did not bring (the
// feed's rate limit for a spewing model, a reconnect) shows as a gap: counted, since an eviction
// among those lines is not seen.
import type { AdminEvent } from '../../core/contracts/admin-events.js';

export type LogBatch = Pick<Extract<AdminEvent, { type: 'LogAppended' }>, 'modelId' | 'first' | 'lines'>;

export interface LoggedEviction {
  /** Which daemon wrote it: 0 for the first, 1 after the first restart, … */
  life: number;
  modelId: string;
  pid: number;
  /** The server's phase when it was stopped: 'ready', or 'loading' for a cancelled load. */
  phase: string;
  /** Requests claimed on it at that moment. */
  inFlight: number;
}

const EVICTION = /^── llmtray: evicting '(.+)' \(pid (\d+), (\w+)\) with (\d+) request\(s\) in flight$/;

/** The eviction one server log line records, or null for every other line. Pure. */
export function parseEvictionLine(line: string): Omit<LoggedEviction, 'life'> | null {
  const m = EVICTION.exec(line);
  if (m === null) return null;
  return { modelId: m[1] as string, pid: Number(m[2]), phase: m[3] as string, inFlight: Number(m[4]) };
}

export class EvictionLog {
  readonly evictions: LoggedEviction[] = [];
  /** Lines of the servers' logs the stream skipped: evictions among them are not counted. */
  linesNotSeen = 0;
  /** Per daemon life and model, the position after the last line read. */
  private readonly next = new Map<string, number>();

  /** Folds in one batch of daemon number `life`. Lines already read (an overlap) are skipped. */
  append(life: number, batch: LogBatch): void {
    const key = `${life}/${batch.modelId}`;
    const next = this.next.get(key);
    // The first batch of a life starts wherever the stream joined; nothing is evicted before it.
    if (next !== undefined && batch.first > next) this.linesNotSeen += batch.first - next;
    const fresh = next === undefined ? batch.lines : batch.lines.slice(Math.max(0, next - batch.first));
    for (const line of fresh) {
      const eviction = parseEvictionLine(line);
      if (eviction !== null) this.evictions.push({ life, ...eviction });
    }
    this.next.set(key, Math.max(next ?? 0, batch.first + batch.lines.length));
  }
}
