// One generation with tools on one slot, through node-llama-cpp's LlamaChat: it renders the
// tools into the prompt with the chat wrapper (the model's own template, or node-llama-cpp's
// generic format for a template without one), watches the output for the wrapper's call
// syntax, and generates a call's function name and arguments under a grammar built from the
// tools, so every call it returns names a declared function with arguments valid under its
// schema. Everything else (limits, stops, counting, cancellation) behaves as in generation.ts.
//
// `required` and a named function: the wrapper's state is marked "initially engaged", so
// LlamaChat starts the answer in its function-calling mode (the call prefix in the context,
// the name under grammar) instead of free text; for a named function only that function is
// offered (offeredFunctions), so the grammar can produce no other name. Even a random-weight model then answers
// with a valid call.
import { LlamaChat, type ChatWrapper } from 'node-llama-cpp';
import { chatPrompt, toChatHistory } from './chat-prompt.js';
import { fittingPromptTokens, repeatPenaltyOf, type FinishReason, type GenerationTarget } from './generation.js';
import type { ChatMessage, SamplingParams } from './openai-requests.js';
import type { Slot } from './slot-pool.js';
import { offeredFunctions, toolCallId, type ToolCall, type ToolRequest } from './tool-calls.js';

/** A piece of a call as it streams: the first of each call has its id and name, and arguments ''. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  name?: string;
  arguments: string;
}

export interface ToolGenerationInput {
  messages: readonly ChatMessage[];
  tools: ToolRequest;
  sampling: SamplingParams;
  signal: AbortSignal;
  /** Receives the answer's text as it is generated. */
  onText?: (text: string) => void;
  /** Receives the calls as they are generated, in OpenAI's streaming order. */
  onToolCall?: (delta: ToolCallDelta) => void;
}

export interface ToolGenerationResult {
  text: string;
  /** The complete calls; a call cut short by the token limit is left out. */
  toolCalls: ToolCall[];
  finishReason: FinishReason | 'tool_calls';
  promptTokens: number;
  completionTokens: number;
}

export interface ToolGenerationTarget extends GenerationTarget {
  chatWrapper: ChatWrapper;
}

/**
 * Room kept free in the slot's context beyond the generated tokens: LlamaChat writes each
 * call's syntax (prefix, separators, suffix) into the context without counting it as generated,
 * and a context that fills up makes it shift the conversation, which a single request cannot
 * survive. Generation therefore stops (finish_reason `length`) this far before the end.
 */
const CALL_SYNTAX_RESERVE = 128;

/** The wrapper, with every answer starting in function-calling mode. */
function callingWrapper(wrapper: ChatWrapper): ChatWrapper {
  const forced = Object.create(wrapper) as ChatWrapper;
  forced.generateContextState = (options) => {
    const state = wrapper.generateContextState(options);
    return {
      contextText: state.contextText,
      stopGenerationTriggers: state.stopGenerationTriggers,
      ...(state.ignoreStartText ? { ignoreStartText: state.ignoreStartText } : {}),
      functionCall: { initiallyEngaged: true, disengageInitiallyEngaged: [] },
    };
  };
  return forced;
}

/**
 * Gathers the calls from LlamaChat's callbacks, in both modes, so a streamed answer's argument
 * fragments join to exactly the arguments a non-streamed one carries. LlamaChat's argument
 * text ends with its grammar's end marker (four newlines), which is not part of the JSON:
 * trailing newlines are held back until more text shows they were inside it.
 */
class CallCollector {
  readonly calls: ToolCall[] = [];
  private current: { id: string; name: string; args: string; held: string } | undefined;

  constructor(private readonly emit: ((delta: ToolCallDelta) => void) | undefined) {}

  argumentsChunk(name: string, chunk: string): void {
    const call = this.start(name);
    const text = call.held + chunk;
    const kept = text.replace(/\n+$/, '');
    call.held = text.slice(kept.length);
    if (kept === '') return;
    call.args += kept;
    this.emit?.({ index: this.calls.length, arguments: kept });
  }

  /** A call is complete; `params` as LlamaChat parsed them, for a call whose arguments never streamed. */
  finished(name: string, params: unknown): void {
    const call = this.start(name);
    if (call.args === '') {
      call.args = JSON.stringify(params ?? {});
      this.emit?.({ index: this.calls.length, arguments: call.args });
    }
    this.calls.push({ id: call.id, name: call.name, arguments: call.args });
    this.current = undefined;
  }

  private start(name: string): { id: string; name: string; args: string; held: string } {
    if (this.current === undefined) {
      this.current = { id: toolCallId(), name, args: '', held: '' };
      this.emit?.({ index: this.calls.length, id: this.current.id, name, arguments: '' });
    }
    return this.current;
  }
}

/** Tokens generated on `slot` since it was taken: the meter's outputs, less the prompt's last token. */
function decodedSince(slot: Slot): number {
  return Math.max(0, slot.sequence.tokenMeter.usedOutputTokens - slot.meterAtTake.usedOutputTokens - 1);
}

/**
 * Waits for a slot, generates with the tools, frees the slot. Blocks for the whole generation.
 * Rejects like generate(): a 400 when the prompt (tools included) does not fit the slot, the
 * signal's reason when the caller gives up waiting, node-llama-cpp's error when decoding fails.
 */
export async function generateWithTools(target: ToolGenerationTarget, input: ToolGenerationInput): Promise<ToolGenerationResult> {
  const { pool, contextPerSlot } = target;
  const functions = offeredFunctions(input.tools);
  const prompt = chatPrompt(target.model, target.chatWrapper, input.messages, functions);
  const promptTokens = fittingPromptTokens(target, prompt.tokens);
  const s = input.sampling;
  const room = Math.max(1, contextPerSlot - promptTokens - CALL_SYNTAX_RESERVE);
  const maxTokens = Math.min(s.maxTokens ?? room, room);
  if (s.maxTokens === 0) return { text: '', toolCalls: [], finishReason: 'length', promptTokens, completionTokens: 0 };
  const slot = await pool.acquire(promptTokens, input.signal);
  const chat = new LlamaChat({ contextSequence: slot.sequence, chatWrapper: input.tools.choice.kind === 'auto' ? target.chatWrapper : callingWrapper(target.chatWrapper) });
  const collector = new CallCollector(input.onToolCall);
  let counted = 0;
  // LlamaChat reports the tokens of a call's name and arguments to no token callback, so the
  // slot's progress (what hang detection reads) is taken from the sequence's meter instead.
  const countProgress = (): void => {
    const decoded = decodedSince(slot);
    if (decoded > counted) pool.countDecoded(slot, decoded - counted);
    counted = Math.max(counted, decoded);
  };
  try {
    const response = await chat.generateResponse(toChatHistory(input.messages), {
      functions,
      documentFunctionParams: true,
      ...(input.tools.parallel ? {} : { maxParallelFunctionCalls: 1 }),
      maxTokens,
      temperature: s.temperature,
      topK: s.topK,
      topP: s.topP,
      minP: s.minP,
      ...(s.seed === undefined ? {} : { seed: s.seed }),
      repeatPenalty: repeatPenaltyOf(s),
      customStopTriggers: s.stop,
      signal: input.signal,
      stopOnAbortSignal: true,
      onToken: () => countProgress(),
      ...(input.onText ? { onTextChunk: input.onText } : {}),
      onFunctionCallParamsChunk: (chunk) => {
        collector.argumentsChunk(chunk.functionName, chunk.paramsChunk);
        countProgress();
      },
      onFunctionCall: (call) => collector.finished(call.functionName, call.params),
    });
    countProgress();
    const stop = response.metadata.stopReason;
    const finishReason = stop === 'maxTokens' ? 'length' : collector.calls.length > 0 ? 'tool_calls' : 'stop';
    return { text: response.response, toolCalls: collector.calls, finishReason, promptTokens, completionTokens: counted };
  } finally {
    chat.dispose({ disposeSequence: false });
    pool.release(slot);
  }
}
