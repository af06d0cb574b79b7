// One generation with tools on one slot. Everything else (limits, stops, counting,
// cancellation) behaves as in generation.ts.
//
// `auto`: node-llama-cpp's LlamaChat, which renders the tools into the prompt with the chat
// wrapper (the model's own template, or node-llama-cpp's generic format for a template without
// one), watches the free text for the wrapper's call syntax, and generates a call's name and
// arguments under its own grammar once the model starts one.
//
// `required` and a named function: the answer is one call, generated here under grammars, so
// even a random-weight model gives a valid call. The call syntax's prefix (`<tool_call>\n{"name":
// "` for a Qwen-style template) is put in the context as if the model had written it; the name
// is generated under a grammar of the offered names (or is the named function); then the
// arguments under the grammar of that function's parameter schema, the one response_format
// uses (response-format.ts), so they parse to what the schema allows. Why not LlamaChat here
// too: its arguments grammar is node-llama-cpp's own, which lets an integer carry an exponent
// (3e-2) and a number a 16-digit one (Infinity once parsed), and then fails its own check of
// the arguments, a 500 (seen on the demo models for 2 seeds in 12); and forced into calling,
// it goes on calling until the token limit on a model that never ends its turn.
import { LlamaChat, LlamaText, type ChatWrapper, type LlamaGrammar, type Token } from 'node-llama-cpp';
import { chatPrompt, toChatHistory } from './openai/chat-prompt.js';
import { cachedPrefix, fittingPromptTokens, generate, repeatPenaltyOf, type FinishReason, type GenerationTarget } from './generation.js';
import { HttpError } from './http-error.js';
import { schemaGrammar } from './openai/response-format.js';
import type { ChatMessage, SamplingParams } from './openai/openai-requests.js';
import type { Slot } from './slot-pool.js';
import { offeredFunctions, toolCallId, type ToolCall, type ToolRequest } from './openai/tool-calls.js';

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
  /**
   * The calls, in order. With finishReason `length` the last one may be cut short: its arguments
   * (or its name) as far as they were written, as OpenAI returns a call the token limit cut, so
   * the client sees what the model began rather than an empty answer.
   */
  toolCalls: ToolCall[];
  finishReason: FinishReason | 'tool_calls';
  promptTokens: number;
  completionTokens: number;
  /** Of promptTokens, those the slot already held (OpenAI's `cached_tokens`, generation.ts's cachedPrefix). */
  cachedTokens: number;
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

/**
 * Gathers `auto`'s calls from LlamaChat's callbacks, streamed or not, so a streamed answer's
 * argument fragments join to exactly the arguments a non-streamed one carries. LlamaChat's argument
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

  /**
   * The calls when the token limit stopped the generation: the complete ones and the one being
   * written, if any, with its arguments so far (held newlines are the end marker's or JSON
   * whitespace, never inside a string, where a newline is escaped).
   */
  cutShort(): ToolCall[] {
    const call = this.current;
    return call === undefined ? this.calls : [...this.calls, { id: call.id, name: call.name, arguments: call.args }];
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

/** Text of the wrapper's call syntax with the function's name in it (`{{functionName}}` in plain text only, as node-llama-cpp does). */
function syntaxText(text: string | LlamaText, name: string): LlamaText {
  return LlamaText(LlamaText(text).values.map((v) => (typeof v === 'string' ? v.replaceAll('{{functionName}}', name) : v)));
}

/**
 * Waits for a slot, generates with the tools, frees the slot. Blocks for the whole generation.
 * Rejects like generate(): a 400 when the prompt (tools included) does not fit the slot or a
 * parameter schema cannot be made a grammar, the signal's reason when the caller gives up
 * waiting, node-llama-cpp's error when decoding fails.
 */
export async function generateWithTools(target: ToolGenerationTarget, input: ToolGenerationInput): Promise<ToolGenerationResult> {
  const functions = offeredFunctions(input.tools);
  const prompt = chatPrompt(target.model, target.chatWrapper, input.messages, functions);
  const promptTokens = fittingPromptTokens(target, prompt.tokens);
  if (input.sampling.maxTokens === 0) return { text: '', toolCalls: [], finishReason: 'length', promptTokens, completionTokens: 0, cachedTokens: 0 };
  if (input.tools.choice.kind === 'auto') {
    const bos = target.model.tokens.bos;
    return generateMaybeCalling(target, input, prompt.bosRendered && bos !== null ? [bos, ...prompt.tokens] : prompt.tokens, promptTokens);
  }
  return generateOneCall(target, input, prompt.tokens, promptTokens);
}

/** The grammar of each offered function's arguments; undefined for a function without parameters. */
async function argumentGrammars(target: ToolGenerationTarget, functions: ToolRequest['functions']): Promise<Map<string, LlamaGrammar | undefined>> {
  const grammars = new Map<string, LlamaGrammar | undefined>();
  for (const [name, fn] of Object.entries(functions)) {
    try {
      grammars.set(name, fn.params ? await schemaGrammar(target.model.llama, fn.params as Record<string, unknown>) : undefined);
    } catch (error) {
      throw new HttpError(400, `the parameters of tool '${name}' cannot be enforced: ${(error as Error).message}`, 'invalid_request_error', { param: 'tools' });
    }
  }
  return grammars;
}

/**
 * The call in two generations (name, then arguments), each one generate() of its own: the second
 * continues the first's context, so on the same slot it evaluates only the few new tokens.
 */
async function generateOneCall(target: ToolGenerationTarget, input: ToolGenerationInput, tokens: readonly Token[], promptTokens: number): Promise<ToolGenerationResult> {
  const { model } = target;
  const functions = offeredFunctions(input.tools);
  const names = Object.keys(functions);
  const grammars = await argumentGrammars(target, functions);
  const syntax = target.chatWrapper.settings.functions.call;
  const tokenize = (text: LlamaText): Token[] => text.tokenize(model.tokenizer, 'trimLeadingSpace');
  // A call is never cut by a stop string: the request's stops are for text.
  const sampling = { ...input.sampling, stop: [] };
  // What the slot held of the prompt, from the first of the generations: the later ones continue it.
  let cachedTokens: number | null = null;
  const cachedOf = (first: { cachedTokens: number }): void => {
    cachedTokens ??= Math.min(first.cachedTokens, promptTokens);
  };
  // The token limit cut the call: it is returned as far as it was written, never dropped.
  const cutShort = (call: ToolCall, completionTokens: number): ToolGenerationResult => ({ text: '', toolCalls: [call], finishReason: 'length', promptTokens, completionTokens, cachedTokens: cachedTokens ?? 0 });
  let context = [...tokens, ...tokenize(LlamaText(syntax.prefix))];
  let completionTokens = 0;
  let name = names[0] ?? '';
  if (names.length > 1) {
    const nameGrammar = await model.llama.createGrammar({ grammar: `root ::= ${names.map((n) => `"${n}"`).join(' | ')}` });
    const chosen = await generate(target, { tokens: context, sampling, grammar: nameGrammar, signal: input.signal });
    cachedOf(chosen);
    completionTokens += chosen.completionTokens;
    if (chosen.finishReason === 'length') {
      // Cut inside the name: the call carries the name as far as it was written, no arguments.
      const partial: ToolCall = { id: toolCallId(), name: chosen.text, arguments: '' };
      input.onToolCall?.({ index: 0, id: partial.id, name: partial.name, arguments: '' });
      return cutShort(partial, completionTokens);
    }
    if (!names.includes(chosen.text)) throw new HttpError(500, `the name grammar gave '${chosen.text}', which is not among the tools: ${names.join(', ')}`, 'server_error');
    name = chosen.text;
  }
  const call: ToolCall = { id: toolCallId(), name, arguments: '' };
  input.onToolCall?.({ index: 0, id: call.id, name, arguments: '' });
  const grammar = grammars.get(name);
  if (grammar === undefined) {
    call.arguments = '{}';
    input.onToolCall?.({ index: 0, arguments: call.arguments });
    // No generation at all (one function, no parameters): the prompt was never evaluated.
    return { text: '', toolCalls: [call], finishReason: 'tool_calls', promptTokens, completionTokens, cachedTokens: cachedTokens ?? 0 };
  }
  context = [...context, ...tokenize(LlamaText(name)), ...tokenize(syntaxText(syntax.paramsPrefix, name))];
  const left = sampling.maxTokens === undefined ? undefined : sampling.maxTokens - completionTokens;
  if (left !== undefined && left <= 0) return cutShort(call, completionTokens);
  // The arguments are what was streamed, so a stream joins to exactly what a whole answer carries.
  // After the name's generation they continue its context (this request's own tokens), whatever
  // `cache_prompt` said of the prompt.
  const args = await generate(target, {
    tokens: context, sampling: { ...sampling, maxTokens: left, cachePrompt: sampling.cachePrompt || names.length > 1 }, grammar, signal: input.signal,
    onText: (text) => {
      if (text === '') return;
      call.arguments += text;
      input.onToolCall?.({ index: 0, arguments: text });
    },
  });
  cachedOf(args);
  completionTokens += args.completionTokens;
  if (args.finishReason === 'length') return cutShort(call, completionTokens);
  return { text: '', toolCalls: [call], finishReason: 'tool_calls', promptTokens, completionTokens, cachedTokens: cachedTokens ?? 0 };
}

/** `held`: the prompt as LlamaChat evaluates it, its rendering as it is (BOS only where the template writes one). */
async function generateMaybeCalling(target: ToolGenerationTarget, input: ToolGenerationInput, held: readonly Token[], promptTokens: number): Promise<ToolGenerationResult> {
  const { pool, contextPerSlot } = target;
  const functions = offeredFunctions(input.tools);
  const s = input.sampling;
  const room = Math.max(1, contextPerSlot - promptTokens - CALL_SYNTAX_RESERVE);
  const maxTokens = Math.min(s.maxTokens ?? room, room);
  const slot = await pool.acquire(promptTokens, input.signal);
  // LlamaChat renders the same prompt as chatPrompt (chat-prompt.ts), but adds no BOS of its own
  // as a completion does: what the slot holds of `held` is what it does not evaluate again. (A
  // restore never throws; clearing the history for cache_prompt false can, and the slot goes back then.)
  const cachedTokens = await cachedPrefix(target, slot, held, s.cachePrompt).catch((error: unknown) => {
    pool.release(slot);
    throw error;
  });
  const chat = new LlamaChat({ contextSequence: slot.sequence, chatWrapper: target.chatWrapper });
  const collector = new CallCollector(input.onToolCall);
  let counted = 0;
  let textTokens = 0;
  // LlamaChat reports the tokens of a call's name and arguments to no token callback, so the
  // slot's progress (what hang detection reads) is taken from the sequence's meter too, which
  // counts a token once it is evaluated (the last one sampled never is).
  const countProgress = (atLeast = 0): void => {
    const decoded = Math.max(decodedSince(slot), textTokens, atLeast);
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
      repeatPenalty: repeatPenaltyOf(s, contextPerSlot),
      customStopTriggers: s.stop,
      signal: input.signal,
      stopOnAbortSignal: true,
      onToken: (tokens) => {
        textTokens += tokens.length;
        countProgress();
      },
      ...(input.onText ? { onTextChunk: input.onText } : {}),
      onFunctionCallParamsChunk: (chunk) => {
        collector.argumentsChunk(chunk.functionName, chunk.paramsChunk);
        countProgress();
      },
      onFunctionCall: (call) => collector.finished(call.functionName, call.params),
    });
    const stop = response.metadata.stopReason;
    // At the limit, LlamaChat generated exactly maxTokens.
    countProgress(stop === 'maxTokens' ? maxTokens : 0);
    if (stop === 'maxTokens') return { text: response.response, toolCalls: collector.cutShort(), finishReason: 'length', promptTokens, completionTokens: counted, cachedTokens };
    const finishReason = collector.calls.length > 0 ? 'tool_calls' : 'stop';
    return { text: response.response, toolCalls: collector.calls, finishReason, promptTokens, completionTokens: counted, cachedTokens };
  } finally {
    chat.dispose({ disposeSequence: false });
    pool.release(slot);
  }
}
