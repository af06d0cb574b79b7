// Reads what a request cost from the engine's answer as it passes through: the first token's
// arrival, the usage (prompt, cached and written tokens) and the engine's own timings — without
// holding the answer back or changing a byte of it.
//
// Where each figure comes from, by engine and shape:
// - llama-server: `timings` on a whole answer and on a stream's last chunk — `prompt_n` (prompt
//   tokens evaluated), `cache_n` (taken from its cache), `predicted_n`, `prompt_ms`,
//   `predicted_per_second`; `usage` where it writes one.
// - the embedded engine: OpenAI's `usage` with `prompt_tokens_details.cached_tokens`, on a whole
//   answer and on a stream's last chunk (always, asked or not: completion-handlers.ts).
// - an error the engine answered, or ended its stream with: its `error.message`.
// - a llama-server serving Anthropic's Messages API itself: `usage.input_tokens` (without the
//   cache's), `cache_read_input_tokens`, `output_tokens`, in `message_start` and `message_delta`.
//
// Why scan text rather than parse every event: an event per token is the hot path; only an
// event that names `usage`, `timings` or `error` is parsed (one or two per answer), the
// first-token search stops at the first token, and of a whole answer only those three objects
// are parsed (objectAt), never its choices or its embeddings. A line split across chunks is held until its end, at most
// MAX_LINE_BYTES of it (a longer one is a whole answer's JSON, read at the end instead).
import { StringDecoder } from 'node:string_decoder';
import type { AnswerTap, EngineUsage } from '../http/request-trace.js';

/** A whole answer longer than this is not parsed for its usage: its figures stay unknown rather than the relay holding megabytes. */
const MAX_WHOLE_ANSWER_BYTES = 1024 * 1024;
const MAX_LINE_BYTES = 64 * 1024;

/** A token's text in an event of any of the served shapes: OpenAI's content/text/arguments, reasoning, Anthropic's text and input_json deltas. */
const TOKEN_TEXT = /"(?:content|text|arguments|reasoning_content|partial_json|thinking)":"[^"]/;
const MARKERS = ['"usage"', '"timings"', '"error"'];

export class UsageTap implements AnswerTap {
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';
  private whole: string[] | null;
  private wholeBytes = 0;
  private firstTokenSeen = false;
  private readonly usage: EngineUsage = { promptTokens: null, cachedTokens: null, completionTokens: null, promptMs: null, tokensPerSecond: null };
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  /** Some of the answer was left out of `body()`. */
  truncated = false;
  /** The engine's own words where it answered an error (`error.message`, OpenAI's and Anthropic's shape alike). */
  errorMessage: string | null = null;

  /**
   * `eventStream`: the answer is Server-Sent Events (read event by event) rather than one JSON
   * document (read whole at the end). `keepBytes`: how much of the answer `body()` keeps; 0: none.
   * `onFirstToken` is called once, at the chunk that carries the first token's text.
   */
  constructor(
    private readonly eventStream: boolean,
    private readonly keepBytes: number,
    private readonly onFirstToken: () => void,
  ) {
    this.whole = eventStream ? null : [];
  }

  /** One chunk of the answer, as it reaches the client. Never throws. */
  push(chunk: Buffer): void {
    if (this.keepBytes > 0) this.keep(chunk);
    if (this.whole !== null) {
      this.wholeBytes += chunk.length;
      if (this.wholeBytes <= MAX_WHOLE_ANSWER_BYTES) this.whole.push(this.decoder.write(chunk));
      else this.whole = [];
      return;
    }
    const text = this.pending + this.decoder.write(chunk);
    if (!this.firstTokenSeen && TOKEN_TEXT.test(text)) {
      this.firstTokenSeen = true;
      this.onFirstToken();
    }
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline === -1) {
      this.pending = text.length <= MAX_LINE_BYTES ? text : '';
      return;
    }
    this.pending = text.length - lastNewline - 1 <= MAX_LINE_BYTES ? text.slice(lastNewline + 1) : '';
    if (!MARKERS.some((marker) => text.includes(marker))) return;
    for (const line of text.slice(0, lastNewline).split('\n')) {
      if (line.startsWith('data:') && MARKERS.some((marker) => line.includes(marker))) this.read(line.slice('data:'.length).trim());
    }
  }

  /** The figures once the answer ended (whole or not). Call once. */
  end(): EngineUsage {
    if (this.whole !== null && this.wholeBytes <= MAX_WHOLE_ANSWER_BYTES) {
      this.whole.push(this.decoder.end());
      this.readWhole(this.whole.join(''));
    } else if (this.pending.startsWith('data:')) {
      this.read(this.pending.slice('data:'.length).trim());
    }
    return this.usage;
  }

  /** The answer as far as `keepBytes` allowed. */
  body(): string {
    return Buffer.concat(this.kept).toString('utf8');
  }

  private keep(chunk: Buffer): void {
    const room = this.keepBytes - this.keptBytes;
    if (room <= 0) {
      this.truncated = true;
      return;
    }
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    if (part.length < chunk.length) this.truncated = true;
    this.kept.push(Buffer.from(part));
    this.keptBytes += part.length;
  }

  /**
   * A whole answer's figures, from its `usage`, `timings` and `error` objects alone: an
   * embeddings answer is a megabyte of numbers, and parsing all of it on the event loop to read
   * three counts would hold every other request up for milliseconds.
   */
  private readWhole(text: string): void {
    const usage = objectAt(text, 'usage');
    if (usage !== null) this.readUsage(usage);
    const timings = objectAt(text, 'timings');
    if (timings !== null) this.readTimings(timings);
    const error = objectAt(text, 'error');
    if (error !== null && typeof error['message'] === 'string') this.errorMessage ??= error['message'];
  }

  /** Takes whatever cost figures one JSON document holds; a later document's figure replaces an earlier one's. */
  private read(json: string): void {
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      return;
    }
    if (!isRecord(value)) return;
    const message = isRecord(value['message']) ? value['message'] : null;
    const usage = isRecord(value['usage']) ? value['usage'] : message !== null && isRecord(message['usage']) ? message['usage'] : null;
    if (usage !== null) this.readUsage(usage);
    if (isRecord(value['timings'])) this.readTimings(value['timings']);
    const error = value['error'];
    if (isRecord(error) && typeof error['message'] === 'string') this.errorMessage ??= error['message'];
  }

  private readUsage(usage: Record<string, unknown>): void {
    const u = this.usage;
    const details = isRecord(usage['prompt_tokens_details']) ? usage['prompt_tokens_details'] : null;
    const openAIPrompt = count(usage['prompt_tokens']);
    if (openAIPrompt !== null) {
      u.promptTokens = openAIPrompt;
      const cached = details === null ? null : count(details['cached_tokens']);
      if (cached !== null) u.cachedTokens = cached;
    }
    const openAICompletion = count(usage['completion_tokens']);
    if (openAICompletion !== null) u.completionTokens = openAICompletion;
    // Anthropic's input_tokens leaves out what the cache gave: the prompt is their sum.
    const input = count(usage['input_tokens']);
    const cacheRead = count(usage['cache_read_input_tokens']);
    if (input !== null) {
      u.promptTokens = input + (cacheRead ?? 0);
      if (cacheRead !== null) u.cachedTokens = cacheRead;
    }
    const output = count(usage['output_tokens']);
    if (output !== null) u.completionTokens = output;
  }

  private readTimings(timings: Record<string, unknown>): void {
    const u = this.usage;
    const evaluated = count(timings['prompt_n']);
    const cached = count(timings['cache_n']);
    if (evaluated !== null) u.promptTokens = evaluated + (cached ?? 0);
    if (cached !== null) u.cachedTokens = cached;
    const predicted = count(timings['predicted_n']);
    if (predicted !== null) u.completionTokens = predicted;
    const promptMs = timings['prompt_ms'];
    if (typeof promptMs === 'number' && Number.isFinite(promptMs) && promptMs >= 0) u.promptMs = promptMs;
    const speed = timings['predicted_per_second'];
    if (typeof speed === 'number' && Number.isFinite(speed) && speed > 0) u.tokensPerSecond = speed;
  }
}

/**
 * The object that the last `"key":` in `text` names, parsed alone: from its `{` to the brace that
 * closes it (strings skipped, so a brace inside one does not count). Null when there is none or it
 * does not parse. A key inside a string cannot match: there its quotes are escaped.
 */
export function objectAt(text: string, key: string): Record<string, unknown> | null {
  const at = text.lastIndexOf(`"${key}"`);
  if (at === -1) return null;
  let i = at + key.length + 2;
  while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t' || text[i] === ':')) i++;
  if (text[i] !== '{') return null;
  let depth = 0;
  let inString = false;
  for (let end = i; end < text.length; end++) {
    const c = text[end];
    if (inString) {
      if (c === '\\') end++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) {
      try {
        const value: unknown = JSON.parse(text.slice(i, end + 1));
        return isRecord(value) ? value : null;
      } catch {
        return null;
      }
    }
  }
  return null;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function count(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : null;
}
