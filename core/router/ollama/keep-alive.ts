// Ollama's `keep_alive`: how long the model stays loaded after this request. A number is
// seconds; a string is a Go duration ("5m", "1h30m", "300ms") or a number of seconds ("300");
// a negative value is "for ever"; 0 unloads the model once the request is done (or at once, for
// a request with nothing to generate). llmtray says the same as the model's idle TTL from now on
// (never past a pin: a pinned model stays whatever is asked, as a pin promises). Pure.
import { describe } from '../http/errors.js';

/** `ms`: the idle TTL asked for; Infinity for "for ever", 0 for "unload". */
export type KeepAlive = { ok: true; ms: number | null } | { ok: false; message: string };

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, μs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const GO_DURATION = /^([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g;

/** `keep_alive` as an idle TTL in ms (null: not sent), or why it cannot be read. */
export function readKeepAlive(value: unknown): KeepAlive {
  if (value === undefined || value === null) return { ok: true, ms: null };
  if (typeof value === 'number' && Number.isFinite(value)) return { ok: true, ms: fromSeconds(value) };
  if (typeof value === 'string') {
    const text = value.trim();
    if (text !== '' && Number.isFinite(Number(text))) return { ok: true, ms: fromSeconds(Number(text)) };
    const match = GO_DURATION.exec(text);
    if (match !== null) {
      let ms = 0;
      for (const [, amount, unit] of text.matchAll(PART)) ms += Number(amount) * (UNIT_MS[unit as string] as number);
      return { ok: true, ms: match[1] === '-' ? (ms === 0 ? 0 : Infinity) : Math.round(ms) };
    }
  }
  return { ok: false, message: `'keep_alive' must be a number of seconds or a duration such as "5m", "1h30m" or "-1" (for ever); got ${describe(value)}.` };
}

function fromSeconds(seconds: number): number {
  return seconds < 0 ? Infinity : Math.round(seconds * 1000);
}
