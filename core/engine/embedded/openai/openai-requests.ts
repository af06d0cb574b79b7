// Reads OpenAI-style request bodies into what the engine needs, refusing what it cannot
// honour with a 400 that names the field and the value. Pure: no model, no I/O.
//
// Defaults are llama-server's, not OpenAI's or node-llama-cpp's (temperature 0.8, top_k 40,
// top_p 0.95, min_p 0.05, no repeat penalty, no token limit but the context), so a model
// answers the same whichever engine serves it.
import { badRequest } from '../http-error.js';
import { readChatLogprobs, readCompletionLogprobs } from './logprobs.js';
import { NATIVE_EMBEDDING_FIELDS, NATIVE_GENERATION_FIELDS, readNativeGenerationOptions, refuseNativeFields, type NativeGenerationOptions } from './native-fields.js';
import { readResponseFormat, type ResponseFormat } from './response-format.js';
import { readToolRequest, type ToolRequest } from './tool-calls.js';

/** What a request asks of its generation: sampling, limits, and llama.cpp's own options (native-fields.ts). */
export interface SamplingParams extends NativeGenerationOptions {
  /** undefined: until a stop or the end of the slot's context, as llama-server's n_predict -1. */
  maxTokens: number | undefined;
  temperature: number;
  topK: number;
  topP: number;
  minP: number;
  seed: number | undefined;
  stop: string[];
  presencePenalty: number;
  frequencyPenalty: number;
  repeatPenalty: number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'developer' | 'tool';
  content: string;
  /** An assistant turn's calls, in order, their arguments parsed. */
  toolCalls?: { id: string; name: string; arguments: unknown }[];
  /** A tool turn: the id of the call it answers (OpenAI's tool_call_id). */
  toolCallId?: string;
}

export interface ChatRequest {
  messages: ChatMessage[];
  responseFormat: ResponseFormat;
  /** undefined: no tools, or `tool_choice: "none"`. */
  tools: ToolRequest | undefined;
  stream: boolean;
  includeUsage: boolean;
  sampling: SamplingParams;
  /** Alternatives per token for log probabilities; undefined: none asked. */
  logprobs: number | undefined;
}

export interface CompletionRequest {
  /** Text to tokenize, or tokens given directly. */
  prompt: string | number[];
  stream: boolean;
  includeUsage: boolean;
  sampling: SamplingParams;
  /** Alternatives per token for log probabilities; undefined: none asked. */
  logprobs: number | undefined;
}

export interface EmbeddingRequest {
  /** Texts, or token ids given directly (OpenAI's number[] and number[][] forms). */
  inputs: (string | number[])[];
  encoding: 'float' | 'base64';
}

type Body = Record<string, unknown>;

export function asObject(body: unknown): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  return body as Body;
}

/**
 * Fields a client can send that this engine does not honour, each with what it would have
 * asked for. Served without them, the answer would look right and be wrong (a tool call
 * never made, a probability never given), so a request that sets one is refused by name.
 * A field set to its "off" value (false, null, an empty list) asks for nothing and passes.
 */
const UNHONOURED_CHAT: Readonly<Record<string, string>> = {
  functions: 'function calling',
  function_call: 'function calling',
  logit_bias: 'token biases',
  audio: 'audio output',
  prediction: 'predicted outputs',
  web_search_options: 'web search',
  reasoning_effort: 'reasoning',
};

const UNHONOURED_COMPLETION: Readonly<Record<string, string>> = {
  logit_bias: 'token biases',
  suffix: 'fill-in-the-middle (use /infill)',
  best_of: 'best-of sampling',
};

function asksForNothing(v: unknown): boolean {
  return v === undefined || v === null || v === false || v === 0 || v === 'none' || (Array.isArray(v) && v.length === 0)
    || (typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0);
}

function refuseUnhonoured(body: Body, table: Readonly<Record<string, string>>, endpoint: string): void {
  for (const [field, what] of Object.entries(table)) {
    if (!asksForNothing(body[field])) {
      throw badRequest(`'${field}' (${what}) is not supported by this engine's ${endpoint}; remove it, or serve this model with a llama-server that supports it`, field);
    }
  }
  const modalities = body['modalities'];
  if (modalities !== undefined && modalities !== null && !(Array.isArray(modalities) && modalities.every((m) => m === 'text'))) {
    throw badRequest(`'modalities' ${JSON.stringify(modalities)}: this engine answers text only`, 'modalities');
  }
}

function numberField(body: Body, name: string, fallback: number, min: number, max: number): number {
  const v = body[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw badRequest(`'${name}' must be a number from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v;
}

function integerField(body: Body, name: string, min: number): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw badRequest(`'${name}' must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
}

function stopField(body: Body): string[] {
  const v = body['stop'];
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s): s is string => typeof s === 'string')) {
    throw badRequest(`'stop' must be a string or an array of strings, got ${JSON.stringify(v)}`);
  }
  return list.filter((s) => s.length > 0);
}

function readSampling(body: Body): SamplingParams {
  const n = integerField(body, 'n', 1);
  if (n !== undefined && n !== 1) throw badRequest(`'n' must be 1: this server generates one choice per request, got ${n}`);
  // OpenAI's newer name first, then the classic one, then llama-server's own; -1 = no limit.
  const maxTokens = integerField(body, 'max_completion_tokens', -1) ?? integerField(body, 'max_tokens', -1) ?? integerField(body, 'n_predict', -1);
  const seed = integerField(body, 'seed', -1);
  return {
    maxTokens: maxTokens === undefined || maxTokens < 0 ? undefined : maxTokens,
    temperature: numberField(body, 'temperature', 0.8, 0, 100),
    topK: numberField(body, 'top_k', 40, 0, Number.MAX_SAFE_INTEGER),
    topP: numberField(body, 'top_p', 0.95, 0, 1),
    minP: numberField(body, 'min_p', 0.05, 0, 1),
    seed: seed === undefined || seed < 0 ? undefined : seed,
    stop: stopField(body),
    presencePenalty: numberField(body, 'presence_penalty', 0, -2, 2),
    frequencyPenalty: numberField(body, 'frequency_penalty', 0, -2, 2),
    repeatPenalty: numberField(body, 'repeat_penalty', 1, 0, 10),
    ...readNativeGenerationOptions(body),
  };
}

function streamFields(body: Body): { stream: boolean; includeUsage: boolean } {
  const stream = body['stream'] === true;
  const options = body['stream_options'];
  const includeUsage = typeof options === 'object' && options !== null && (options as Body)['include_usage'] === true;
  return { stream, includeUsage };
}

const ROLES: ReadonlySet<string> = new Set(['system', 'user', 'assistant', 'developer', 'tool']);

/** Text of a message's content: a string, or the text parts of a content array. */
function contentText(content: unknown, index: number): string {
  if (content === undefined || content === null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.map((part: unknown, p) => {
      const o = typeof part === 'object' && part !== null ? (part as Body) : {};
      if (o['type'] === 'text' && typeof o['text'] === 'string') return o['text'];
      throw badRequest(`messages[${index}].content[${p}] has type ${JSON.stringify(o['type'])}; only text parts are supported by this model`);
    }).join('');
  }
  throw badRequest(`messages[${index}].content must be a string or an array of parts`);
}

/** A body's `messages`, each with a known role and its text. Shared by chat completions and /apply-template. */
export function readChatMessages(body: Body): ChatMessage[] {
  const messages = body['messages'];
  if (!Array.isArray(messages) || messages.length === 0) throw badRequest("'messages' must be a non-empty array");
  const read = messages.map((m: unknown, i): ChatMessage => {
    const o = typeof m === 'object' && m !== null ? (m as Body) : {};
    const role = o['role'];
    if (typeof role !== 'string' || !ROLES.has(role)) throw badRequest(`messages[${i}].role must be one of system, user, assistant, developer, tool; got ${JSON.stringify(role)}`);
    if (!asksForNothing(o['function_call'])) {
      throw badRequest(`messages[${i}].function_call is the deprecated form of a call; send tool_calls`, `messages[${i}].function_call`);
    }
    const message: ChatMessage = { role: role as ChatMessage['role'], content: contentText(o['content'], i) };
    if (role === 'assistant' && !asksForNothing(o['tool_calls'])) message.toolCalls = readToolCalls(o['tool_calls'], i);
    if (role === 'tool' && typeof o['tool_call_id'] === 'string') message.toolCallId = o['tool_call_id'];
    return message;
  });
  read.forEach((m, i) => checkToolResult(read, i));
  return read;
}

/** An assistant message's `tool_calls`, arguments parsed: the template writes them as JSON of its own. */
function readToolCalls(value: unknown, index: number): NonNullable<ChatMessage['toolCalls']> {
  const at = `messages[${index}].tool_calls`;
  if (!Array.isArray(value)) throw badRequest(`${at} must be an array`, at);
  return value.map((call: unknown, c) => {
    const o = typeof call === 'object' && call !== null ? (call as Body) : {};
    const fn = typeof o['function'] === 'object' && o['function'] !== null ? (o['function'] as Body) : {};
    if (typeof fn['name'] !== 'string' || typeof fn['arguments'] !== 'string') {
      throw badRequest(`${at}[${c}] must be {"id", "type": "function", "function": {"name", "arguments"}} with arguments a JSON string`, `${at}[${c}]`);
    }
    let args: unknown;
    try {
      args = fn['arguments'].trim() === '' ? {} : JSON.parse(fn['arguments']);
    } catch {
      throw badRequest(`${at}[${c}].function.arguments is not JSON: ${JSON.stringify(fn['arguments'])}`, `${at}[${c}].function.arguments`);
    }
    return { id: typeof o['id'] === 'string' ? o['id'] : '', name: fn['name'], arguments: args };
  });
}

/**
 * A tool message answers a call of the assistant message before it (other tool messages between
 * them): the template renders a call and its result as one exchange, and a result without its
 * call has no place in it.
 */
function checkToolResult(messages: readonly ChatMessage[], index: number): void {
  const message = messages[index];
  if (message?.role !== 'tool') return;
  let caller = index - 1;
  while (messages[caller]?.role === 'tool') caller--;
  const calls = messages[caller]?.toolCalls;
  const at = `messages[${index}]`;
  if (calls === undefined) throw badRequest(`${at} is a tool result, but the message before it made no tool calls`, `${at}.role`);
  if (message.toolCallId !== undefined && !calls.some((c) => c.id === message.toolCallId)) {
    throw badRequest(`${at}.tool_call_id ${JSON.stringify(message.toolCallId)} is not one of the calls of messages[${caller}]`, `${at}.tool_call_id`);
  }
  if (index - caller > calls.length) throw badRequest(`${at}: more tool results than messages[${caller}] made calls`, `${at}.role`);
}

export function readChatRequest(raw: unknown): ChatRequest {
  const body = asObject(raw);
  refuseUnhonoured(body, UNHONOURED_CHAT, 'chat completions');
  refuseNativeFields(body, NATIVE_GENERATION_FIELDS, 'chat completions');
  const tools = readToolRequest(body);
  const responseFormat = readResponseFormat(body['response_format']);
  if (tools !== undefined && responseFormat.kind !== 'text') {
    throw badRequest("'response_format' with 'tools' cannot both be enforced: an answer is either a tool call or JSON of the format", 'response_format');
  }
  const logprobs = readChatLogprobs(body);
  // Tool calls are generated apart from the token loop that reads probabilities.
  if (tools !== undefined && logprobs !== undefined) throw badRequest("'logprobs' cannot be given with 'tools' on the embedded engine: its tool calls are generated without token probabilities", 'logprobs');
  const sampling = readSampling(body);
  // A JSON answer and a tool call end where their grammar is complete, with an end-of-generation
  // token: with those tokens barred, the grammar would leave nothing to sample.
  if (sampling.ignoreEos && (tools !== undefined || responseFormat.kind !== 'text')) {
    throw badRequest(`'ignore_eos' cannot be given with ${tools !== undefined ? "'tools'" : "'response_format' JSON"} on the embedded engine: the answer ends with an end-of-generation token where its grammar is complete`, 'ignore_eos');
  }
  return { messages: readChatMessages(body), responseFormat, tools, ...streamFields(body), sampling, logprobs };
}

export function readCompletionRequest(raw: unknown): CompletionRequest {
  const body = asObject(raw);
  refuseUnhonoured(body, UNHONOURED_COMPLETION, 'completions');
  refuseNativeFields(body, NATIVE_GENERATION_FIELDS, 'completions');
  let prompt = body['prompt'];
  // One prompt per request; OpenAI's array-of-one form is accepted as that prompt.
  if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string') prompt = prompt[0];
  const isTokens = Array.isArray(prompt) && prompt.length > 0 && prompt.every((t) => Number.isSafeInteger(t) && (t as number) >= 0);
  if (typeof prompt !== 'string' && !isTokens) throw badRequest("'prompt' must be a string or an array of token ids (one prompt per request)");
  return { prompt: prompt as string | number[], ...streamFields(body), sampling: readSampling(body), logprobs: readCompletionLogprobs(body) };
}

function isTokenArray(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((t) => Number.isSafeInteger(t) && (t as number) >= 0);
}

/**
 * `input` in each of OpenAI's forms: a string, strings, a token array, token arrays.
 * `encoding_format` base64 is what the openai SDK asks for by default (and decodes as
 * little-endian float32): answering floats to it gives the client junk numbers, silently.
 * `dimensions` is refused: these models give their full width, and a vector cut short
 * without the model having been trained for it (Matryoshka) is not a smaller embedding.
 */
export function readEmbeddingRequest(raw: unknown): EmbeddingRequest {
  const body = asObject(raw);
  refuseNativeFields(body, NATIVE_EMBEDDING_FIELDS, 'embeddings');
  const input = body['input'] ?? body['content'];
  const inputs: unknown[] = typeof input === 'string' || isTokenArray(input) ? [input] : Array.isArray(input) ? input : [];
  if (inputs.length === 0 || !inputs.every((s) => (typeof s === 'string') || isTokenArray(s))) {
    throw badRequest("'input' must be a string, an array of strings, an array of token ids, or an array of token id arrays", 'input');
  }
  const encoding = body['encoding_format'] ?? 'float';
  if (encoding !== 'float' && encoding !== 'base64') throw badRequest(`'encoding_format' must be float or base64, got ${JSON.stringify(encoding)}`, 'encoding_format');
  if (body['dimensions'] !== undefined && body['dimensions'] !== null) {
    throw badRequest(`'dimensions' is not supported: this model's embeddings have one width and are not truncated`, 'dimensions');
  }
  return { inputs: inputs as (string | number[])[], encoding };
}
