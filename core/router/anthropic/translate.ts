// Anthropic's Messages API to OpenAI's chat completions and back, for engines that speak only
// the latter: the embedded engine, and llama-server builds older than its own /v1/messages.
//
// What is translated is what both APIs can say: the system prompt (a string, or text blocks),
// user and assistant turns of text, tools and tool turns (tools.ts), `max_tokens`,
// `stop_sequences`, `temperature`, `top_p`, `top_k` (llama-server's extension, which the
// embedded engine takes too) and streaming. What cannot be said in the chat API without
// guessing — images, documents, server tools — is refused with a 400 that names the block,
// never dropped; request fields the chat API cannot say (extended thinking, …) are refused by
// the field table (openai/request-fields.ts) before translating. The model's earlier thinking blocks are refused
// with the rest: the translated path never produces them, so they only appear in a
// conversation that began on another engine.
//
// The answer's stop reason comes from OpenAI's `finish_reason`, which does not say which stop
// ended it: a stop sequence and the model's own end of turn both read 'end_turn' here. A
// llama-server that serves /v1/messages itself reports 'stop_sequence' and the sequence. Pure.
import { readChatCompletion, type Translated } from '../openai/chat-translation.js';
import type { AnthropicContentBlock, AnthropicCountTokensRequest, AnthropicMessage, AnthropicMessagesRequest, AnthropicStopReason, AnthropicUsage } from '../../contracts/protocols/anthropic.js';
import type { OpenAIChatCompletionRequest, OpenAIChatMessage } from '../../contracts/protocols/openai.js';
import { invalidRequest, type RouterError } from '../http/errors.js';
import { toChatToolChoice, toChatTools, toChatTurn, toToolUseBlocks, type Result } from './tools.js';
import { isObject } from '../../common/is-object.js';

/** Whom a translation is for, as its refusals name it. */
export interface TranslationTarget {
  /** The model server's name for the model. */
  servedBy: string;
  /**
   * Whether that server serves /v1/messages itself, and the translation was chosen for the
   * request's tool choice (route.ts): a refusal then does not point at such a build.
   */
  servesMessages: boolean;
}

/**
 * The chat messages that say the same prompt: the system prompt first (text blocks joined by a
 * blank line, as separate paragraphs), then each turn: text blocks as OpenAI text parts, tool
 * blocks as tools.ts says. Refuses the first block the chat API cannot say, naming
 * it; `target` names the engine in the refusal.
 */
export function toChatMessages(request: AnthropicCountTokensRequest, target: TranslationTarget): Translated<OpenAIChatMessage[]> {
  const out: OpenAIChatMessage[] = [];
  if (request.system !== undefined && request.system !== null) {
    const text = typeof request.system === 'string' ? request.system : request.system.map((block) => block.text).join('\n\n');
    out.push({ role: 'system', content: text });
  }
  for (const [index, message] of request.messages.entries()) {
    if (typeof message.content === 'string') {
      out.push({ role: message.role, content: message.content });
      continue;
    }
    const turn = toChatTurn(message.role, message.content, `messages[${index}].content`);
    if (!turn.ok) return refused(turn, target);
    out.push(...turn.value);
  }
  return { ok: true, value: out };
}

/** The request's tools and tool choice in chat words (nothing when it has none). */
export function toChatToolFields(request: AnthropicCountTokensRequest, target: TranslationTarget): Translated<Record<string, unknown>> {
  const fields: Record<string, unknown> = {};
  const tools = request['tools'];
  if (Array.isArray(tools) && tools.length > 0) {
    const translated = toChatTools(tools);
    if (!translated.ok) return refused(translated, target);
    fields['tools'] = translated.value;
  }
  const choice = request['tool_choice'];
  if (choice !== undefined && choice !== null) {
    const translated = toChatToolChoice(choice);
    if (!translated.ok) return refused(translated, target);
    Object.assign(fields, translated.value);
  }
  return { ok: true, value: fields };
}

/** A Messages request as a chat completion request asking `model` (the engine's name for it). */
export function toChatCompletionRequest(request: AnthropicMessagesRequest, model: string, target: TranslationTarget): Translated<OpenAIChatCompletionRequest> {
  const messages = toChatMessages(request, target);
  if (!messages.ok) return messages;
  const tools = toChatToolFields(request, target);
  if (!tools.ok) return tools;

  const chat: OpenAIChatCompletionRequest = { model, messages: messages.value, max_tokens: request.max_tokens, ...tools.value };
  if (request.stop_sequences !== undefined && request.stop_sequences !== null) chat.stop = request.stop_sequences;
  for (const field of ['temperature', 'top_p', 'top_k'] as const) {
    const value = request[field];
    if (value !== undefined && value !== null) chat[field] = value;
  }
  const user = request.metadata?.user_id;
  if (typeof user === 'string') chat['user'] = user;
  if (request.stream === true) {
    chat.stream = true;
    // The usage (input and output tokens) that message_delta reports: llama-server sends it on
    // the last chunk anyway, OpenAI and the embedded engine on request.
    chat.stream_options = { include_usage: true };
  }
  return { ok: true, value: chat };
}

/**
 * A chat completion answer (JSON text) as an Anthropic message, named `model` when given (a
 * fallback) and by the engine's own name otherwise. Null when the text is not a chat completion.
 */
export function toAnthropicMessage(text: string, model: string | null): AnthropicMessage | null {
  const answer = readChatCompletion(text);
  if (answer === null) return null;
  const { completion, choice, message } = answer;
  const content = message['content'];
  const blocks: AnthropicContentBlock[] = typeof content === 'string' && content !== '' ? [{ type: 'text', text: content }] : [];
  const calls = message['tool_calls'];
  const cut = choice['finish_reason'] === 'length';
  if (Array.isArray(calls) && calls.length > 0) {
    const uses = toToolUseBlocks(calls, cut);
    if (uses === null) return null;
    blocks.push(...uses);
  }
  return {
    id: typeof completion['id'] === 'string' ? completion['id'] : 'msg_llmtray',
    type: 'message',
    role: 'assistant',
    content: blocks,
    model: model ?? (typeof completion['model'] === 'string' ? completion['model'] : ''),
    stop_reason: stopReasonWithCalls(choice['finish_reason'], Array.isArray(calls) && calls.length > 0),
    stop_sequence: null,
    usage: usageOf(completion['usage'], null),
  };
}

/**
 * The stop_reason of an answer that may hold calls. An engine may end a tool call with 'stop'
 * (llama-server does without --jinja's parser): the calls are what the client must act on
 * either way, so they make it tool_use; but calls the token limit cut are not to be run, and
 * max_tokens says so, as the Messages API ends an incomplete tool_use block.
 */
export function stopReasonWithCalls(finishReason: unknown, hasCalls: boolean): AnthropicStopReason {
  if (finishReason === 'length') return 'max_tokens';
  return hasCalls ? 'tool_use' : stopReasonOf(finishReason);
}

/** OpenAI's finish_reason as Anthropic's stop_reason ('length' is max_tokens; 'stop' cannot tell a stop sequence from the end of a turn). */
function stopReasonOf(finishReason: unknown): AnthropicStopReason {
  if (finishReason === 'length') return 'max_tokens';
  if (finishReason === 'tool_calls') return 'tool_use';
  return 'end_turn';
}

/**
 * OpenAI's usage as Anthropic's: prompt tokens read from the engine's cache
 * (`prompt_tokens_details.cached_tokens`, llama-server's) count apart from the evaluated ones,
 * as the Messages API counts them. `outputFallback` stands in for a missing completion count.
 */
export function usageOf(usage: unknown, outputFallback: number | null): AnthropicUsage {
  const record = isObject(usage) ? usage : {};
  const prompt = count(record['prompt_tokens']);
  const details = record['prompt_tokens_details'];
  const cached = isObject(details) ? count(details['cached_tokens']) : 0;
  const output = typeof record['completion_tokens'] === 'number' ? count(record['completion_tokens']) : (outputFallback ?? 0);
  return {
    input_tokens: Math.max(0, prompt - cached),
    output_tokens: output,
    ...(isObject(details) && typeof details['cached_tokens'] === 'number' ? { cache_read_input_tokens: cached } : {}),
  };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}

function refused<T>(failure: Extract<Result<unknown>, { ok: false }>, target: TranslationTarget): Translated<T> {
  const { param, message } = failure.problem;
  if (failure.untranslatable === true) return untranslatable(param, message, target);
  return { ok: false, error: invalidRequest(param, message) };
}

function untranslatable<T>(param: string, what: string, { servedBy, servesMessages }: TranslationTarget): Translated<T> {
  const says = 'a system prompt, text turns, tools and tool turns only';
  const message = servesMessages
    ? `'${param}' ${what}, which llmtray's translation for '${servedBy}' cannot carry: it says ${says}.`
    : `'${param}' ${what}, which the model server for '${servedBy}' cannot take: it speaks only OpenAI's chat API, into which llmtray translates ${says}. A llama-server build that serves /v1/messages itself takes the request as it is.`;
  return { ok: false, error: invalidRequest(param, message) };
}
