// Hang detection by progress: a server answering requests that makes no progress for its hang
// limit is hung.
//
// Why progress and not /health: llama-server's /health stays 200 during a wedged decode and
// after some CUDA failures, and a stopped process (SIGSTOP, a debugger, a frozen driver) keeps
// its port open, so a client waits forever on a socket that never closes — a user waited more
// than 130 s with no error. Why not a plain timeout on the request: a long prompt on a slow
// machine legitimately sends nothing for minutes before its first token.
//
// So, while requests are in flight (DESIGN.md, "Engines"): progress is bytes relayed to any
// client, or — when nothing was relayed since the last look — the engine both answering its
// health probe and showing movement on its /slots counters (prompt tokens processed, tokens
// decoded). A long prompt moves the counters batch by batch; a wedged decode does not, and a
// stopped process answers nothing at all. An engine without /slots is judged by its health
// probe alone.
import type { Clock } from '../../../common/clock.js';

/** What one look at the engine found. */
export interface EngineLook {
  /** GET /health answered at all (any status) within the look's time. */
  healthAnswered: boolean;
  /** A signature of the /slots counters; null when /slots did not answer; 'unsupported' when the engine has none. */
  slots: string | null | 'unsupported';
}

export interface HangWatchOptions {
  clock: Clock;
  /** No progress for this long, ms, with requests in flight: hung. */
  limitMs: number;
  /** A counter the claims bump whenever bytes reach a client. */
  progressMark(): number;
  /** Requests in flight now, for the reason. */
  inFlight(): number;
  /** One look at the engine, bounded by `timeoutMs`. Never rejects. */
  look(timeoutMs: number): Promise<EngineLook>;
  /** Called once, when the server is judged hung. */
  onHung(reason: string): void;
}

/** How often to look: often enough to judge within a quarter of the limit, never busier than every 50 ms, at most every 5 s. */
export function lookIntervalMs(limitMs: number): number {
  return Math.min(5_000, Math.max(50, Math.floor(limitMs / 4)));
}

export class HangWatch {
  private timer: unknown = null;
  /** A look is under way (its tick schedules the next one). */
  private looking = false;
  private running = false;
  private lastMark = 0;
  private lastProgressAt = 0;
  private lastSlots: string | null | undefined = undefined;
  private lastLook: EngineLook | null = null;

  constructor(private readonly options: HangWatchOptions) {}

  /**
   * Starts watching from now (the first request's start counts as progress). Idempotent. A
   * look still pending from an earlier watch is kept rather than replaced: under steady
   * traffic every request is a busy turn, and a timer set and cleared for each was work on
   * the request path (issue 14). That look may come sooner than a full interval after this
   * start; it only looks, and judges against this start's moment.
   */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.lastMark = this.options.progressMark();
    this.lastProgressAt = this.options.clock.elapsed();
    this.lastSlots = undefined;
    this.lastLook = null;
    if (this.timer === null && !this.looking) this.schedule();
  }

  /** Stops watching (no request in flight any more). Idempotent. A pending look finds it stopped and ends there. */
  stop(): void {
    this.running = false;
  }

  /** Stops watching and drops the pending look: for a server that ended. Idempotent. */
  close(): void {
    this.running = false;
    if (this.timer !== null) this.options.clock.clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(): void {
    const interval = lookIntervalMs(this.options.limitMs);
    this.timer = this.options.clock.setTimeout(() => {
      this.timer = null;
      void this.tick(interval);
    }, interval);
  }

  private async tick(interval: number): Promise<void> {
    if (!this.running) return;
    const { clock, limitMs } = this.options;
    const mark = this.options.progressMark();
    if (mark !== this.lastMark) {
      this.lastMark = mark;
      this.lastProgressAt = clock.elapsed();
      this.schedule();
      return;
    }
    this.looking = true;
    const look = await this.options.look(Math.min(interval, 5_000)).finally(() => {
      this.looking = false;
    });
    if (!this.running) return;
    this.lastLook = look;
    const slotsMoved =
      look.slots === 'unsupported' || (look.slots !== null && this.lastSlots !== undefined && look.slots !== this.lastSlots);
    if (look.slots !== null && look.slots !== 'unsupported') this.lastSlots = look.slots;
    if (this.options.progressMark() !== this.lastMark || (look.healthAnswered && slotsMoved)) {
      this.lastMark = this.options.progressMark();
      this.lastProgressAt = clock.elapsed();
    }
    const still = clock.elapsed() - this.lastProgressAt;
    if (still >= limitMs) {
      this.stop();
      this.options.onHung(this.reason(still));
      return;
    }
    this.schedule();
  }

  private reason(stillMs: number): string {
    const n = this.options.inFlight();
    const look = this.lastLook;
    const why =
      look === null || !look.healthAnswered
        ? 'its health probe did not answer'
        : look.slots === null
          ? 'its /slots did not answer'
          : 'its /slots counters did not move';
    return `it made no progress for ${Math.round(stillMs / 100) / 10} s with ${n} request${n === 1 ? '' : 's'} in flight: no bytes to its clients, and ${why}`;
  }
}
