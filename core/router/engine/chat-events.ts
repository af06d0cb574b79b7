// An engine's streamed chat completion (OpenAI's chat SSE), read as whole events from the raw
// chunks it arrives in, for the translators that re-tell it in another API's stream
// (anthropic/stream.ts, responses/stream.ts). One reader, so that every translation splits lines,
// joins `data:` lines, tells keep-alives and `[DONE]` apart and skips what is not a JSON object
// the same way. An event split across network chunks waits only for its own end.
import { StringDecoder } from 'node:string_decoder';
import { isObject } from '../../common/is-object.js';

export type EngineChatEvent =
  /** An event of comments only: the engine's keep-alive during a long prompt. */
  | { kind: 'keep-alive' }
  | { kind: 'done' }
  /** A chunk that carries `error`: the engine's mid-stream failure. */
  | { kind: 'error'; error: unknown }
  | { kind: 'chunk'; chunk: Record<string, unknown> };

export class EngineChatEvents {
  private readonly decoder = new StringDecoder('utf8');
  /** Text after the last complete line. */
  private pending = '';
  /** The `data:` lines of the event being read, and whether it had a comment. */
  private data: string[] = [];
  private comment = false;

  /** The events completed by `chunk` of the engine's stream. */
  push(chunk: Buffer): EngineChatEvent[] {
    return this.consume(this.decoder.write(chunk));
  }

  /** The events still owed once the stream has ended; call once. */
  end(): EngineChatEvent[] {
    // A last event without its blank line is still an event: the stream's end terminates it.
    return this.consume(`${this.decoder.end()}\n\n`);
  }

  private consume(text: string): EngineChatEvent[] {
    const lines = (this.pending + text).split('\n');
    this.pending = lines.pop() ?? '';
    const events: EngineChatEvent[] = [];
    for (const raw of lines) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line === '') {
        const event = this.dispatch();
        if (event !== null) events.push(event);
      } else if (line.startsWith(':')) this.comment = true;
      else if (line.startsWith('data:')) this.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
      // `event:`, `id:` and `retry:` lines say nothing a chat chunk needs.
    }
    return events;
  }

  private dispatch(): EngineChatEvent | null {
    const data = this.data.join('\n');
    const wasComment = this.comment;
    this.data = [];
    this.comment = false;
    if (data === '') return wasComment ? { kind: 'keep-alive' } : null;
    if (data.trim() === '[DONE]') return { kind: 'done' };
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      return null;
    }
    if (!isObject(chunk)) return null;
    if (chunk['error'] !== undefined) return { kind: 'error', error: chunk['error'] };
    return { kind: 'chunk', chunk };
  }
}
