// Model servers' log lines onto the admin event stream: batched, and at a bounded rate per model.
//
// Why batched: a loading llama.cpp prints a few hundred lines in a second, and an event per line
// would be a JSON envelope, an SSE frame and a React render each. Lines wait at most `intervalMs`
// (250 ms) and go out together, one LogAppended per model: the dashboard still sees a line well
// within a second of the engine writing it.
//
// Why a rate per model, with a burst: a model spewing errors (a wedged CUDA context logs the same
// failure thousands of times a second) must not flood the dashboard and every other model's lines
// with it, nor grow the SSE buffers of a slow client; yet a load's whole burst of lines should
// arrive, since that is what a person watches. So each model has a token bucket: `burstLines`
// at once, refilled at `linesPerSecond`. Over the rate, a batch carries only the newest lines it
// may (the ones that say what is happening now) and the lines before them are left out; their
// count shows as the gap between the batch's position and the previous one's end, which readers
// turn into "… N lines dropped" (core/contracts/log-lines.ts). The daemon's own log ring is not
// touched: it keeps every line, and `llmtray logs ID` or a refetch shows them. A model over its
// rate keeps its newest lines pending until it earns a token, so its last lines (and the marker)
// are never held back indefinitely.
import type { AdminEvent } from '../contracts/admin-events.js';
import type { Clock } from '../common/clock.js';

export type LogAppended = Extract<AdminEvent, { type: 'LogAppended' }>;

export interface LogFeedOptions {
  clock: Clock;
  /** Sends a batch (AdminService.publish). Called from the feed's timer; must not throw. */
  publish: (event: LogAppended) => void;
  /** Longest a line waits before it is sent, ms. Default 250. */
  intervalMs?: number;
  /** Lines per second a model may send once its burst is spent. Default 100. */
  linesPerSecond?: number;
  /** Lines a quiet model may send at once (a whole load's output). Default 500. */
  burstLines?: number;
}

export const DEFAULT_LOG_FEED = { intervalMs: 250, linesPerSecond: 100, burstLines: 500 } as const;

interface ModelFeed {
  /** Position of pending[0] in the model's log; the pending lines are consecutive. */
  first: number;
  pending: string[];
  tokens: number;
  refilledAt: number;
}

export class LogFeed {
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly linesPerSecond: number;
  private readonly burstLines: number;
  private readonly models = new Map<string, ModelFeed>();
  private timer: unknown = null;
  private closed = false;

  constructor(private readonly options: LogFeedOptions) {
    this.clock = options.clock;
    this.intervalMs = options.intervalMs ?? DEFAULT_LOG_FEED.intervalMs;
    this.linesPerSecond = options.linesPerSecond ?? DEFAULT_LOG_FEED.linesPerSecond;
    this.burstLines = options.burstLines ?? DEFAULT_LOG_FEED.burstLines;
  }

  /**
   * One line of a model's log at `position` (consecutive per model, as the supervisor numbers
   * them). Never blocks, O(1) amortised: it runs on the line's way into the log ring. A model's
   * pending lines are bounded by its burst: older ones beyond that could never be sent.
   */
  append(modelId: string, line: string, position: number): void {
    if (this.closed) return;
    let feed = this.models.get(modelId);
    if (feed === undefined) {
      feed = { first: position, pending: [], tokens: this.burstLines, refilledAt: this.clock.elapsed() };
      this.models.set(modelId, feed);
    }
    if (feed.pending.length === 0) feed.first = position;
    feed.pending.push(line);
    // Trimmed in steps of a burst, so a spewing model costs one splice per burst, not per line.
    if (feed.pending.length >= 2 * this.burstLines) {
      const excess = feed.pending.length - this.burstLines;
      feed.pending.splice(0, excess);
      feed.first += excess;
    }
    this.timer ??= this.clock.setTimeout(() => this.flush(), this.intervalMs);
  }

  /** Stops sending; pending lines are forgotten (the ring has them). Idempotent. */
  close(): void {
    this.closed = true;
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    this.timer = null;
    this.models.clear();
  }

  private flush(): void {
    this.timer = null;
    const now = this.clock.elapsed();
    let held = false;
    for (const [modelId, feed] of this.models) {
      feed.tokens = Math.min(this.burstLines, feed.tokens + ((now - feed.refilledAt) * this.linesPerSecond) / 1000);
      feed.refilledAt = now;
      if (feed.pending.length === 0) continue;
      const sendable = Math.min(feed.pending.length, Math.floor(feed.tokens));
      if (sendable === 0) {
        held = true;
        continue;
      }
      const skipped = feed.pending.length - sendable;
      const lines = skipped === 0 ? feed.pending : feed.pending.slice(skipped);
      const first = feed.first + skipped;
      feed.tokens -= sendable;
      feed.pending = [];
      this.options.publish({ type: 'LogAppended', modelId, first, lines });
    }
    if (held) this.timer = this.clock.setTimeout(() => this.flush(), this.intervalMs);
  }
}
