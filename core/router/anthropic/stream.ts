// A streamed chat completion (OpenAI's SSE) re-told as a streamed Anthropic message, event by
// event as the engine's chunks arrive: message_start at the first chunk, one text block
// (content_block_start, a content_block_delta per piece of text, content_block_stop), then
// message_delta with the stop reason and the usage, and message_stop.
//
// Why incremental, on raw chunks: the point of streaming is that a person sees each token when
// it is made, so nothing is collected; an event split across network chunks waits only for its
// own end (one event's latency at most, as SseModelRewriter). Every Anthropic event carries an
// `event:` line: the Anthropic SDKs skip events without one. An engine's keep-alive comment
// becomes a `ping` event, Anthropic's own keep-alive, so a client's idle timer is fed the same
// way during a long prompt. An engine's mid-stream error becomes an `error` event and ends the
// translation; so does a stream that ends without a finish_reason (the answer is not complete,
// and message_stop would say it was). Pure apart from its own state.
import type { AnthropicContentBlock, AnthropicErrorBody, AnthropicStreamEvent } from '../../contracts/protocols/anthropic.js';
import { anthropicErrorBody, anthropicErrorEvent } from './errors.js';
import { stopReasonWithCalls, usageOf } from './translate.js';
import { EngineChatEvents, type EngineChatEvent } from '../engine/chat-events.js';
import { isObject } from '../../common/is-object.js';

export interface ChatStreamOptions {
  /** The model the message names: a fallback's id; null to keep the engine's own name. */
  model: string | null;
  /** The model that answers, for error messages. */
  servedBy: string;
}

export class ChatStreamToMessages {
  private readonly events = new EngineChatEvents();
  private started = false;
  /** The content block being written: its Anthropic index, and for a tool call its chat index. */
  private open: { kind: 'text' } | { kind: 'tool'; callIndex: number } | null = null;
  private blocks = 0;
  private toolUsed = false;
  private pieces = 0;
  private finishReason: unknown = null;
  private usage: unknown = null;
  /** Once true (message_stop or an error event written), nothing more is written. */
  private ended = false;

  constructor(private readonly options: ChatStreamOptions) {}

  /** The Anthropic events completed by `chunk` of the engine's stream, as SSE text. */
  push(chunk: Buffer): string {
    return this.translate(this.events.push(chunk));
  }

  /** The events still owed once the engine's stream has ended completely; call once. */
  flush(): string {
    let out = this.translate(this.events.end());
    if (this.ended) return out;
    if (this.finishReason !== null) return out + this.finish();
    out += this.fail(`The model server for '${this.options.servedBy}' ended its stream before the answer was complete. The answer above is partial.`, 'engine_stream_interrupted');
    return out;
  }

  private translate(events: readonly EngineChatEvent[]): string {
    let out = '';
    for (const engineEvent of events) out += this.dispatch(engineEvent);
    return out;
  }

  /** One complete SSE event of the engine's. */
  private dispatch(engineEvent: EngineChatEvent): string {
    if (this.ended) return '';
    // The Messages API's own keep-alive.
    if (engineEvent.kind === 'keep-alive') return event({ type: 'ping' });
    if (engineEvent.kind === 'done') return this.finish();
    if (engineEvent.kind === 'error') return this.engineError(engineEvent.error);
    const chunk = engineEvent.chunk;

    let out = this.start(chunk);
    const choice: unknown = Array.isArray(chunk['choices']) ? chunk['choices'][0] : undefined;
    if (isObject(choice)) {
      const delta = choice['delta'];
      const text = isObject(delta) ? delta['content'] : undefined;
      if (typeof text === 'string' && text !== '') {
        if (this.open?.kind !== 'text') out += this.openBlock({ kind: 'text' }, { type: 'text', text: '' });
        this.pieces++;
        out += event({ type: 'content_block_delta', index: this.blocks - 1, delta: { type: 'text_delta', text } });
      }
      const calls = isObject(delta) ? delta['tool_calls'] : undefined;
      if (Array.isArray(calls)) for (const call of calls) out += this.toolCallPiece(call);
      if (choice['finish_reason'] !== null && choice['finish_reason'] !== undefined) this.finishReason = choice['finish_reason'];
    }
    if (isObject(chunk['usage'])) this.usage = chunk['usage'];
    return out;
  }

  /**
   * One chunk of a streamed tool call (OpenAI's `delta.tool_calls[i]`): the first chunk of a call
   * (a new `index`, with its id and name) opens its tool_use block; its argument pieces follow as
   * input_json_delta, which the SDKs join and parse when the block stops.
   */
  private toolCallPiece(call: unknown): string {
    if (!isObject(call)) return '';
    const fn = isObject(call['function']) ? call['function'] : {};
    const callIndex = typeof call['index'] === 'number' ? call['index'] : 0;
    let out = '';
    if (this.open?.kind !== 'tool' || this.open.callIndex !== callIndex) {
      this.toolUsed = true;
      const id = typeof call['id'] === 'string' ? call['id'] : `toolu_${this.blocks}`;
      const name = typeof fn['name'] === 'string' ? fn['name'] : '';
      out += this.openBlock({ kind: 'tool', callIndex }, { type: 'tool_use', id, name, input: {} });
    }
    const args = fn['arguments'];
    if (typeof args === 'string' && args !== '') {
      this.pieces++;
      out += event({ type: 'content_block_delta', index: this.blocks - 1, delta: { type: 'input_json_delta', partial_json: args } });
    }
    return out;
  }

  /** Closes the block being written, if any, and opens the next one. */
  private openBlock(kind: NonNullable<ChatStreamToMessages['open']>, block: AnthropicContentBlock): string {
    const out = this.closeBlock();
    this.open = kind;
    return out + event({ type: 'content_block_start', index: this.blocks++, content_block: block });
  }

  private closeBlock(): string {
    if (this.open === null) return '';
    this.open = null;
    return event({ type: 'content_block_stop', index: this.blocks - 1 });
  }

  /** message_start, once, from the first chunk (or with what is known, if none came). */
  private start(chunk: Record<string, unknown> | null): string {
    if (this.started) return '';
    this.started = true;
    const usage = usageOf(chunk?.['usage'], 0);
    return event({
      type: 'message_start',
      message: {
        id: typeof chunk?.['id'] === 'string' ? chunk['id'] : 'msg_llmtray',
        type: 'message',
        role: 'assistant',
        content: [],
        model: this.options.model ?? (typeof chunk?.['model'] === 'string' ? chunk['model'] : this.options.servedBy),
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input_tokens, output_tokens: 0 },
      },
    });
  }

  private finish(): string {
    if (this.ended) return '';
    let out = this.start(null);
    out += this.closeBlock();
    // The usage arrives on the last chunks, after message_start went out: input_tokens is sent
    // here too (the SDKs take message_delta's counts as the whole message's totals).
    const usage = usageOf(this.usage, this.pieces);
    out += event({
      type: 'message_delta',
      // As for a whole answer (translate.ts): calls made are what the client acts on,
      // unless the token limit cut them.
      delta: { stop_reason: stopReasonWithCalls(this.finishReason, this.toolUsed), stop_sequence: null },
      // Anthropic's input_tokens leaves out the tokens read from the cache, which come beside it.
      usage: {
        output_tokens: usage.output_tokens,
        input_tokens: usage.input_tokens,
        ...(usage.cache_read_input_tokens === undefined ? {} : { cache_read_input_tokens: usage.cache_read_input_tokens }),
      },
    });
    out += event({ type: 'message_stop' });
    this.ended = true;
    return out;
  }

  private engineError(error: unknown): string {
    const inner = isObject(error) ? error : {};
    const message = typeof inner['message'] === 'string' ? inner['message'] : `The model server for '${this.options.servedBy}' failed mid-answer.`;
    const code = typeof inner['code'] === 'string' ? inner['code'] : typeof inner['type'] === 'string' ? inner['type'] : null;
    const status = typeof inner['code'] === 'number' ? inner['code'] : 500;
    this.ended = true;
    return anthropicErrorEvent(anthropicErrorBody({ status, message, code }));
  }

  private fail(message: string, code: string): string {
    this.ended = true;
    const body: AnthropicErrorBody = anthropicErrorBody({ status: 502, message, code });
    return anthropicErrorEvent(body);
  }
}

/** One Anthropic SSE event: its `event:` line (the type) and its data. */
function event(data: Exclude<AnthropicStreamEvent, AnthropicErrorBody>): string {
  return `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}
