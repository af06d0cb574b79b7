// Knowing when a model server is ready, promptly and without hammering it.
//
// Why a notification and not a fixed poll: llama-swap polled /health every 250 ms, so every
// swap paid up to 250 ms of idle waiting, and a per-request swap pays it every time. The
// engine already says when it is ready — llama-server prints "model loaded" and "listening on
// http://…" — so that line wakes one confirming GET /health (none after the embedded engine's
// own line, which it writes only once it serves: EMBEDDED_READY_LINE). The backoff poll (5 ms, doubling,
// at most 1 s) is only the fallback for engines that print no such line; it starts fast
// because a tiny model loads in milliseconds.
import type { Clock } from '../../common/clock.js';
import { engineGet } from './engine-get.js';

/** Lines after which the engine is probably ready (llama-server's and the embedded engine's wording). */
export const READY_LINE = /\bmodel loaded\b|\blistening on\b|\bserver is listening\b/i;

/**
 * The embedded engine's own ready line, which it writes after it has switched /health to 200,
 * in the same synchronous step (core/engine/embedded/main.ts): from that engine, the line is
 * proof, and the confirming GET would only add its round trip to every load. llama-server
 * writes "model loaded" before it turns ready, so its line is always confirmed.
 */
export const EMBEDDED_READY_LINE = /^srv {2}llama_server: model loaded$/;

const FIRST_POLL_MS = 5;
const MAX_POLL_MS = 1_000;
const HEALTH_TIMEOUT_MS = 2_000;

export type Health =
  | { kind: 'ready' }
  /** Up and loading (503); progress 0…1 where the engine reports it. */
  | { kind: 'loading'; progress: number | null }
  /** Not listening yet, or not answering. */
  | { kind: 'unreachable' };

/** One GET /health. Never rejects. */
export async function checkHealth(port: number, apiKey: string): Promise<Health> {
  const answer = await engineGet(port, apiKey, '/health', HEALTH_TIMEOUT_MS);
  if (answer?.status === 200) return { kind: 'ready' };
  if (answer?.status === 503) return { kind: 'loading', progress: parseLoadProgress(answer.body) };
  return { kind: 'unreachable' };
}

/**
 * The load progress in a 503 body, 0…1, or null when the engine does not report one.
 * Accepts `{"progress":0.4}`, `{"status":"loading","progress":40}` style percentages, and the
 * same inside llama-server's `{"error":{…}}` envelope. Pure.
 */
export function parseLoadProgress(body: string): number | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return null;
  }
  const candidates = [parsed, (parsed as { error?: unknown } | null)?.error];
  for (const candidate of candidates) {
    const value = (candidate as { progress?: unknown } | null | undefined)?.progress;
    if (typeof value === 'number' && Number.isFinite(value) && value >= 0) {
      return value > 1 ? Math.min(value / 100, 1) : value;
    }
  }
  return null;
}

/**
 * A doorbell: `ring()` wakes the current `wait` at once, or the next one if nobody waits now —
 * a ready line that arrives while a health check is in flight must not be lost.
 */
export class Doorbell {
  private rung = false;
  private wake: (() => void) | null = null;

  ring(): void {
    this.rung = true;
    this.wake?.();
  }

  /** Resolves after `ms` on `clock`, on a ring, or on abort (whichever is first); clears its timer. */
  wait(ms: number, signal: AbortSignal, clock: Clock): Promise<void> {
    if (this.rung || signal.aborted) {
      this.rung = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clock.clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = null;
        this.rung = false;
        resolve();
      };
      const timer = clock.setTimeout(done, ms);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }
}

/**
 * Resolves when GET /health answers 200, or when `provenReady` says the engine's own line has
 * proven it (EMBEDDED_READY_LINE). Checks once at once, then after each doorbell ring or
 * backoff step. Rejects with the signal's reason when aborted (the supervisor aborts on the
 * child's exit, the load timeout or an eviction).
 */
export async function waitUntilReady(options: {
  port: number;
  apiKey: string;
  doorbell: Doorbell;
  signal: AbortSignal;
  clock: Clock;
  onProgress?: (progress: number | null) => void;
  provenReady?: () => boolean;
}): Promise<void> {
  let delay = FIRST_POLL_MS;
  for (;;) {
    options.signal.throwIfAborted();
    if (options.provenReady?.() === true) return;
    const health = await checkHealth(options.port, options.apiKey);
    options.signal.throwIfAborted();
    if (health.kind === 'ready') return;
    if (health.kind === 'loading') options.onProgress?.(health.progress);
    await options.doorbell.wait(delay, options.signal, options.clock);
    delay = Math.min(delay * 2, MAX_POLL_MS);
  }
}
