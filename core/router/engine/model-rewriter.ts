// The answer's `model` renamed to the one the client asked for, when a fallback answered in its
// place: in a whole JSON answer, and line by line in an SSE stream as it passes. Apart from the
// relay (upstream.ts) because it is text work on the answer, the same for every API that
// renames (OpenAI's chat and completions, Anthropic's message_start); and the shape of every stream
// re-teller (StreamRewriter), which the protocols that translate a stream implement too.
import { StringDecoder } from 'node:string_decoder';

/** Re-tells an event stream, chunk by chunk as it arrives. */
export interface StreamRewriter {
  /** The client's text for what `chunk` completes (possibly nothing yet). */
  push(chunk: Buffer): string;
  /** What is still owed once the engine's stream ended complete; called once. */
  flush(): string;
}

/** Replaces a JSON object's top-level `model` string; null when the text is not such an object. */
export function rewriteModelField(json: string, model: string): string | null {
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !('model' in value)) return null;
    return JSON.stringify({ ...value, model });
  } catch {
    return null;
  }
}

/**
 * Rewrites the `model` of each `data: {...}` line of an SSE stream, line by line as chunks
 * arrive. Only whole lines are rewritten; a line split across chunks waits for its end, which
 * costs at most one event's latency. Other lines (comments, `[DONE]`, `event:`) pass unchanged.
 */
export class SseModelRewriter implements StreamRewriter {
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');

  /** `rewrite` renames the model in one event's JSON (null: leave the line); OpenAI's top-level `model` by default. */
  constructor(
    private readonly model: string,
    private readonly rewrite: (json: string, model: string) => string | null = rewriteModelField,
  ) {}

  /** The rewritten text for every line completed by `chunk`. */
  push(chunk: Buffer): string {
    const text = this.pending + this.decoder.write(chunk);
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline === -1) {
      this.pending = text;
      return '';
    }
    this.pending = text.slice(lastNewline + 1);
    return text
      .slice(0, lastNewline + 1)
      .split('\n')
      .map((line) => this.rewriteLine(line))
      .join('\n');
  }

  /** Whatever was held back, rewritten; call once at the end of the stream. */
  flush(): string {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    return this.rewriteLine(rest);
  }

  private rewriteLine(line: string): string {
    if (!line.startsWith('data:')) return line;
    const carriageReturn = line.endsWith('\r') ? '\r' : '';
    const payload = line.slice('data:'.length, line.length - carriageReturn.length).trim();
    if (!payload.startsWith('{')) return line;
    const rewritten = this.rewrite(payload, this.model);
    return rewritten === null ? line : `data: ${rewritten}${carriageReturn}`;
  }
}
