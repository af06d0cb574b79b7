// A streamed chat completion (OpenAI's chat SSE) re-told as a streamed Response, event by event
// as the engine's chunks arrive: response.created and response.in_progress at the first chunk;
// for a thinking model's reasoning (the chat API's `delta.reasoning_content`) a reasoning item
// (response.output_item.added, response.content_part.added of a reasoning_text part, a
// response.reasoning_text.delta per piece, response.reasoning_text.done,
// response.content_part.done, response.output_item.done); for the text a message item (the same
// item and part events around a response.output_text.delta per piece, carrying its tokens' log
// probabilities when they were asked for, and response.output_text.done); for each tool call a function_call item whose arguments come as
// response.function_call_arguments.delta and .done; last response.completed, or
// response.incomplete when the engine stopped at the length limit. Every event carries its
// `sequence_number` and an `event:` line with its type, as OpenAI's stream does.
//
// Why incremental, on raw chunks: as for the Messages API (anthropic/stream.ts), a person sees
// each token when it is made. An engine's keep-alive comment stays a comment (the Responses API
// has no ping event; every SSE client skips comments, and they still feed an idle timer). An
// engine's mid-stream error becomes an `error` event and ends the stream; so does a stream that
// ends without a finish_reason (the answer is not complete, and response.completed would say it
// was). Pure apart from its own state and the clock it is given.
import type {
  ResponseFunctionCall,
  ResponseObject,
  ResponseOutputItem,
  ResponseOutputMessage,
  ResponseReasoningItem,
  ResponseStreamEvent,
  ResponseTokenLogprob,
} from '../../contracts/protocols/openai-responses.js';
import { EngineChatEvents, type EngineChatEvent } from '../engine/chat-events.js';
import type { RouterError } from '../http/errors.js';
import type { StreamRewriter } from '../engine/model-rewriter.js';
import { callItemId, finishedResponse, messageItemId, reasoningItemId, responseLogprobsOf, responseShell, responseUsageOf, type ResponseFrame } from './translate.js';
import { isObject } from '../../common/is-object.js';

type Event = ResponseStreamEvent extends infer E ? (E extends ResponseStreamEvent ? Omit<E, 'sequence_number'> : never) : never;

/** The `error` event that ends a Responses stream, numbered `sequenceNumber`; the `openai` SDK raises it as an APIError. */
export function responsesErrorEvent(error: Pick<RouterError, 'code' | 'message' | 'param'>, sequenceNumber: number): string {
  return sse({ type: 'error', code: error.code, message: error.message, param: error.param }, sequenceNumber);
}

export class ChatStreamToResponses implements StreamRewriter {
  private readonly events = new EngineChatEvents();
  private sequence = 0;
  private shell: ResponseObject | null = null;
  /** The items finished so far; the open one, if any, is at index `output.length`. */
  private readonly output: ResponseOutputItem[] = [];
  private open: OpenText | OpenReasoning | { kind: 'call'; chatIndex: number; item: ResponseFunctionCall } | null = null;
  private calls = 0;
  private texts = 0;
  private reasonings = 0;
  private finishReason: unknown = null;
  private usage: unknown = null;
  /** Once true (response.completed or an error event written), nothing more is written. */
  private ended = false;

  /** `now`: the clock in seconds, for completed_at. */
  constructor(
    private readonly frame: ResponseFrame,
    private readonly servedBy: string,
    private readonly now: () => number,
  ) {}

  /** The Responses events completed by `chunk` of the engine's stream, as SSE text. */
  push(chunk: Buffer): string {
    return this.translate(this.events.push(chunk));
  }

  /** The events still owed once the engine's stream has ended completely; call once. */
  flush(): string {
    const out = this.translate(this.events.end());
    if (this.ended) return out;
    if (this.finishReason !== null) return out + this.finish();
    return out + this.errorEvent({ code: 'engine_stream_interrupted', param: null, message: `The model server for '${this.servedBy}' ended its stream before the answer was complete. The answer above is partial.` });
  }

  /** The error event that ends this stream, numbered after what it sent; nothing more is written after it. */
  errorEvent(error: Pick<RouterError, 'code' | 'message' | 'param'>): string {
    this.ended = true;
    return responsesErrorEvent(error, this.sequence++);
  }

  private translate(events: readonly EngineChatEvent[]): string {
    let out = '';
    for (const engineEvent of events) out += this.dispatch(engineEvent);
    return out;
  }

  /** One complete SSE event of the engine's. */
  private dispatch(engineEvent: EngineChatEvent): string {
    if (this.ended) return '';
    // The Responses API has no ping event: the comment stays a comment, which still feeds an idle timer.
    if (engineEvent.kind === 'keep-alive') return ': keep-alive\n\n';
    if (engineEvent.kind === 'done') return this.finish();
    if (engineEvent.kind === 'error') return this.engineError(engineEvent.error);
    const chunk = engineEvent.chunk;

    let out = this.start(chunk);
    const choice: unknown = Array.isArray(chunk['choices']) ? chunk['choices'][0] : undefined;
    if (isObject(choice)) {
      const delta = isObject(choice['delta']) ? choice['delta'] : {};
      // A chunk's reasoning precedes its text: the model thinks before it answers.
      if (typeof delta['reasoning_content'] === 'string' && delta['reasoning_content'] !== '') out += this.reasoningPiece(delta['reasoning_content']);
      if (typeof delta['content'] === 'string' && delta['content'] !== '') out += this.textPiece(delta['content'], responseLogprobsOf(choice['logprobs']));
      if (Array.isArray(delta['tool_calls'])) for (const call of delta['tool_calls']) out += this.toolCallPiece(call);
      if (choice['finish_reason'] !== null && choice['finish_reason'] !== undefined) this.finishReason = choice['finish_reason'];
    }
    if (isObject(chunk['usage'])) this.usage = chunk['usage'];
    return out;
  }

  /** response.created and response.in_progress, once, from the first chunk (or with what is known, if none came). */
  private start(chunk: Record<string, unknown> | null): string {
    if (this.shell !== null) return '';
    const createdAt = typeof chunk?.['created'] === 'number' ? chunk['created'] : this.frame.createdAt;
    const model = typeof chunk?.['model'] === 'string' ? chunk['model'] : this.servedBy;
    const shell = responseShell({ ...this.frame, createdAt }, model);
    this.shell = shell;
    return this.event({ type: 'response.created', response: shell }) + this.event({ type: 'response.in_progress', response: shell });
  }

  /** A piece of the text, with the log probabilities of its tokens (empty when none were asked for). */
  private textPiece(text: string, logprobs: ResponseTokenLogprob[]): string {
    let out = '';
    if (this.open?.kind !== 'text') out += this.openText();
    const open = this.open as OpenText;
    open.text += text;
    open.logprobs.push(...logprobs);
    out += this.event({ type: 'response.output_text.delta', item_id: open.item.id, output_index: this.output.length, content_index: 0, delta: text, logprobs });
    return out;
  }

  private reasoningPiece(text: string): string {
    let out = '';
    if (this.open?.kind !== 'reasoning') out += this.openReasoning();
    const open = this.open as OpenReasoning;
    open.text += text;
    out += this.event({ type: 'response.reasoning_text.delta', item_id: open.item.id, output_index: this.output.length, content_index: 0, delta: text });
    return out;
  }

  private openReasoning(): string {
    const out = this.closeItem('completed');
    const id = this.reasonings === 0 ? reasoningItemId(this.frame.id) : `${reasoningItemId(this.frame.id)}_${this.reasonings}`;
    this.reasonings++;
    const item: ResponseReasoningItem = { type: 'reasoning', id, summary: [], content: [], status: 'in_progress' };
    this.open = { kind: 'reasoning', item, text: '' };
    return (
      out +
      this.event({ type: 'response.output_item.added', output_index: this.output.length, item }) +
      this.event({ type: 'response.content_part.added', item_id: id, output_index: this.output.length, content_index: 0, part: { type: 'reasoning_text', text: '' } })
    );
  }

  private openText(): string {
    const out = this.closeItem('completed');
    // Text after a tool call is a message item of its own, with an id of its own.
    const id = this.texts === 0 ? messageItemId(this.frame.id) : `${messageItemId(this.frame.id)}_${this.texts}`;
    this.texts++;
    const item: ResponseOutputMessage = { type: 'message', id, status: 'in_progress', role: 'assistant', content: [] };
    this.open = { kind: 'text', item, text: '', logprobs: [] };
    const at = { item_id: item.id, output_index: this.output.length, content_index: 0 };
    return (
      out +
      this.event({ type: 'response.output_item.added', output_index: this.output.length, item }) +
      this.event({ type: 'response.content_part.added', ...at, part: { type: 'output_text', text: '', annotations: [], logprobs: [] } })
    );
  }

  /**
   * One chunk of a streamed tool call (the chat API's `delta.tool_calls[i]`): the first chunk of
   * a call (a new `index`, with its id and name) opens its function_call item; its argument
   * pieces follow as response.function_call_arguments.delta.
   */
  private toolCallPiece(call: unknown): string {
    if (!isObject(call)) return '';
    const fn = isObject(call['function']) ? call['function'] : {};
    const chatIndex = typeof call['index'] === 'number' ? call['index'] : 0;
    let out = '';
    if (this.open?.kind !== 'call' || this.open.chatIndex !== chatIndex) {
      out += this.closeItem('completed');
      const id = callItemId(this.frame.id, this.calls++);
      const item: ResponseFunctionCall = {
        type: 'function_call',
        id,
        call_id: typeof call['id'] === 'string' ? call['id'] : id,
        name: typeof fn['name'] === 'string' ? fn['name'] : '',
        arguments: '',
        status: 'in_progress',
      };
      this.open = { kind: 'call', chatIndex, item };
      out += this.event({ type: 'response.output_item.added', output_index: this.output.length, item: { ...item } });
    }
    const open = this.open as { kind: 'call'; item: ResponseFunctionCall };
    const piece = fn['arguments'];
    if (typeof piece === 'string' && piece !== '') {
      open.item.arguments += piece;
      out += this.event({ type: 'response.function_call_arguments.delta', item_id: open.item.id, output_index: this.output.length, delta: piece });
    }
    return out;
  }

  /** Ends the open item, if any, with its .done events, and adds it to the output. */
  private closeItem(status: 'completed' | 'incomplete'): string {
    const open = this.open;
    if (open === null) return '';
    this.open = null;
    const outputIndex = this.output.length;
    let out = '';
    if (open.kind === 'text') {
      const part = { type: 'output_text' as const, text: open.text, annotations: [] as [], logprobs: open.logprobs };
      const at = { item_id: open.item.id, output_index: outputIndex, content_index: 0 };
      const item: ResponseOutputMessage = { ...open.item, status, content: [part] };
      out += this.event({ type: 'response.output_text.done', ...at, text: open.text, logprobs: open.logprobs });
      out += this.event({ type: 'response.content_part.done', ...at, part });
      out += this.event({ type: 'response.output_item.done', output_index: outputIndex, item });
      this.output.push(item);
    } else if (open.kind === 'reasoning') {
      const part = { type: 'reasoning_text' as const, text: open.text };
      const at = { item_id: open.item.id, output_index: outputIndex, content_index: 0 };
      const item: ResponseReasoningItem = { ...open.item, status, content: [part] };
      out += this.event({ type: 'response.reasoning_text.done', ...at, text: open.text });
      out += this.event({ type: 'response.content_part.done', ...at, part });
      out += this.event({ type: 'response.output_item.done', output_index: outputIndex, item });
      this.output.push(item);
    } else {
      // `incomplete`: the token limit cut the call, its arguments stop midway.
      const item: ResponseFunctionCall = { ...open.item, status };
      out += this.event({ type: 'response.function_call_arguments.done', item_id: item.id, output_index: outputIndex, name: item.name, arguments: item.arguments });
      out += this.event({ type: 'response.output_item.done', output_index: outputIndex, item });
      this.output.push(item);
    }
    return out;
  }

  private finish(): string {
    if (this.ended) return '';
    let out = this.start(null);
    const status = this.finishReason === 'length' ? 'incomplete' : 'completed';
    // As for a whole answer (translate.ts): an answer of nothing, or of reasoning alone,
    // still has one message, empty; reasoning cut off at the length limit is itself incomplete.
    if (this.texts === 0 && this.calls === 0) out += this.closeItem(status) + this.openText();
    out += this.closeItem(status);
    const response = finishedResponse(this.shell as ResponseObject, [...this.output], this.finishReason, responseUsageOf(this.usage), this.now());
    out += this.event({ type: status === 'incomplete' ? 'response.incomplete' : 'response.completed', response });
    this.ended = true;
    return out;
  }

  private engineError(error: unknown): string {
    const inner = isObject(error) ? error : {};
    const message = typeof inner['message'] === 'string' ? inner['message'] : `The model server for '${this.servedBy}' failed mid-answer.`;
    const code = typeof inner['code'] === 'string' ? inner['code'] : typeof inner['type'] === 'string' ? inner['type'] : null;
    return this.errorEvent({ code, message, param: typeof inner['param'] === 'string' ? inner['param'] : null });
  }

  private event(data: Event): string {
    return sse(data, this.sequence++);
  }
}

interface OpenText {
  kind: 'text';
  item: ResponseOutputMessage;
  text: string;
  /** The tokens of `text` so far, when log probabilities were asked for. */
  logprobs: ResponseTokenLogprob[];
}

interface OpenReasoning {
  kind: 'reasoning';
  item: ResponseReasoningItem;
  text: string;
}

/** One Responses SSE event: its `event:` line (the type) and its data, numbered. */
function sse(data: Event, sequenceNumber: number): string {
  return `event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: sequenceNumber })}\n\n`;
}
