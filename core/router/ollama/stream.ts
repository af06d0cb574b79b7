// An engine's streamed chat completion re-told as Ollama's answer: NDJSON lines (one JSON object
// a line, no blank lines, no comments) for a client that streams, one object for `stream: false`.
//
// The engine is always asked to stream (request.ts), because the final object's timings are
// measured here from its chunks: the prompt's evaluation is the time from sending to the first
// token, the generation the time from there to the end (the embedded engine reports no timings
// of its own; llama-server's would be the same figures, measured inside it). The counts are the
// engine's usage. Durations in nanoseconds, as Ollama gives them.
//
// Tool calls arrive as argument fragments; Ollama's clients expect each call whole with its
// arguments as an object, so they are collected and said on one line before the final one.
import { isObject } from '../../common/is-object.js';
import { EngineChatEvents } from '../engine/chat-events.js';
import type { StreamRewriter } from '../engine/model-rewriter.js';
import { ollamaErrorLine } from './errors.js';

/** When the request was read (`receivedMs`) and sent to the engine (`sentMs`), on `now`'s clock. */
export interface OllamaAnswerFrame {
  kind: 'chat' | 'generate';
  /** The model as the client named it. */
  model: string;
  stream: boolean;
  receivedMs: number;
  sentMs: number;
  /** A monotonic clock in ms (performance.now in production). */
  now: () => number;
  /** Wall-clock time for `created_at`. */
  wallClock?: () => Date;
}

interface CallInProgress {
  name: string;
  arguments: string;
}

/** A moment on the frame's clock in whole nanoseconds: durations between them then add up exactly to the total. */
const nanoseconds = (ms: number): number => Math.round(ms * 1e6);

export class ChatStreamToOllama implements StreamRewriter {
  private readonly events = new EngineChatEvents();
  private readonly calls = new Map<number, CallInProgress>();
  private firstTokenMs: number | null = null;
  private finishReason: string | null = null;
  private usage: { prompt: number; completion: number } | null = null;
  private chunksWithText = 0;
  /** For `stream: false`: the whole answer, said once at the end. */
  private content = '';
  private thinking = '';
  private logprobs: OllamaLogprob[] = [];
  /** The engine broke off with an error: its line was said, nothing follows. */
  private failed = false;

  constructor(private readonly frame: OllamaAnswerFrame) {}

  push(chunk: Buffer): string {
    return this.events
      .push(chunk)
      .map((event) => this.tell(event))
      .join('');
  }

  flush(): string {
    const rest = this.events
      .end()
      .map((event) => this.tell(event))
      .join('');
    if (this.failed) return rest;
    const end = this.frame.now();
    const first = this.firstTokenMs ?? end;
    const calls = this.toolCalls();
    const said = calls.length === 0 ? null : calls;
    // Streamed, the calls are a line of their own before the final one, as Ollama says them.
    const callLine = this.frame.stream && said !== null ? `${JSON.stringify({ ...this.head(), ...this.piece('', '', said), done: false })}\n` : '';
    const final = {
      ...this.head(),
      ...(this.frame.stream ? this.piece('', '', null) : this.piece(this.content, this.thinking, said)),
      ...(this.frame.stream || this.logprobs.length === 0 ? {} : { logprobs: this.logprobs }),
      done: true,
      done_reason: this.finishReason === 'length' ? 'length' : 'stop',
      total_duration: nanoseconds(end) - nanoseconds(this.frame.receivedMs),
      load_duration: nanoseconds(this.frame.sentMs) - nanoseconds(this.frame.receivedMs),
      prompt_eval_count: this.usage?.prompt ?? 0,
      prompt_eval_duration: nanoseconds(first) - nanoseconds(this.frame.sentMs),
      eval_count: this.usage?.completion ?? this.chunksWithText,
      eval_duration: nanoseconds(end) - nanoseconds(first),
      // Ollama's generate ends with the conversation's tokens to send back; llmtray keeps none
      // (a `context` sent is refused unless empty), so it gives the empty one.
      ...(this.frame.kind === 'generate' ? { context: [] } : {}),
    };
    return `${rest}${callLine}${JSON.stringify(final)}${this.frame.stream ? '\n' : ''}`;
  }

  private tell(event: ReturnType<EngineChatEvents['push']>[number]): string {
    if (this.failed) return '';
    if (event.kind === 'error') {
      this.failed = true;
      const message = isObject(event.error) && typeof event.error['message'] === 'string' ? event.error['message'] : JSON.stringify(event.error);
      return ollamaErrorLine({ message: `The model server stopped mid-answer: ${message}` });
    }
    if (event.kind !== 'chunk') return '';
    const { chunk } = event;
    const usage = chunk['usage'];
    if (isObject(usage)) this.usage = { prompt: numberOr(usage['prompt_tokens']), completion: numberOr(usage['completion_tokens']) };
    const choice: unknown = Array.isArray(chunk['choices']) ? chunk['choices'][0] : undefined;
    if (!isObject(choice)) return '';
    if (typeof choice['finish_reason'] === 'string') this.finishReason = choice['finish_reason'];
    const delta = choice['delta'];
    if (!isObject(delta)) return '';
    const logprobs = logprobsOf(choice['logprobs']);
    const text = typeof delta['content'] === 'string' ? delta['content'] : '';
    const thinking = typeof delta['reasoning_content'] === 'string' ? delta['reasoning_content'] : '';
    const toolDeltas = Array.isArray(delta['tool_calls']) ? delta['tool_calls'] : [];
    if (text === '' && thinking === '' && toolDeltas.length === 0) return '';
    this.firstTokenMs ??= this.frame.now();
    this.chunksWithText += 1;
    for (const call of toolDeltas) this.collectCall(call);
    if (!this.frame.stream) {
      this.content += text;
      this.thinking += thinking;
      this.logprobs.push(...logprobs);
      return '';
    }
    if (text === '' && thinking === '') return '';
    return `${JSON.stringify({ ...this.head(), ...this.piece(text, thinking, null), ...(logprobs.length === 0 ? {} : { logprobs }), done: false })}\n`;
  }

  private collectCall(delta: unknown): void {
    if (!isObject(delta)) return;
    const index = typeof delta['index'] === 'number' ? delta['index'] : this.calls.size;
    const fn = isObject(delta['function']) ? delta['function'] : {};
    const call = this.calls.get(index) ?? { name: '', arguments: '' };
    if (typeof fn['name'] === 'string') call.name += fn['name'];
    if (typeof fn['arguments'] === 'string') call.arguments += fn['arguments'];
    this.calls.set(index, call);
  }

  /** The calls whole, their arguments as objects (a call the token limit cut keeps its text under `arguments`: done_reason says length). */
  private toolCalls(): { function: { index: number; name: string; arguments: unknown } }[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({ function: { index, name: call.name, arguments: parseArguments(call.arguments) } }));
  }

  private head(): { model: string; created_at: string } {
    return { model: this.frame.model, created_at: (this.frame.wallClock?.() ?? new Date()).toISOString() };
  }

  /** The answer's text in this route's place: chat's `message`, generate's `response`. */
  private piece(text: string, thinking: string, calls: unknown[] | null): Record<string, unknown> {
    if (this.frame.kind === 'generate') return { response: text, ...(thinking === '' ? {} : { thinking }) };
    return { message: { role: 'assistant', content: text, ...(thinking === '' ? {} : { thinking }), ...(calls === null ? {} : { tool_calls: calls }) } };
  }
}

/** One token of Ollama's `logprobs`: the token, its log-probability, and its alternatives when asked. */
interface OllamaLogprob {
  token: string;
  logprob: number;
  top_logprobs?: { token: string; logprob: number }[];
}

/** A chunk's `choices[0].logprobs.content` in Ollama's words (the chat API's `bytes` left out: Ollama's have none). */
function logprobsOf(value: unknown): OllamaLogprob[] {
  const content = isObject(value) && Array.isArray(value['content']) ? value['content'] : [];
  return content.filter(isObject).map((entry) => {
    const top = Array.isArray(entry['top_logprobs']) ? entry['top_logprobs'].filter(isObject) : [];
    return {
      token: String(entry['token'] ?? ''),
      logprob: numberOr(entry['logprob']),
      ...(top.length === 0 ? {} : { top_logprobs: top.map((alternative) => ({ token: String(alternative['token'] ?? ''), logprob: numberOr(alternative['logprob']) })) }),
    };
  });
}

function numberOr(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function parseArguments(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
