// Ollama's `/api/chat` and `/api/generate` bodies said as an OpenAI chat completion request,
// the one request every engine serves (as anthropic/translate.ts and responses/translate.ts say
// theirs). Checked and translated when the request is read, before anything loads, so a request
// the translation cannot say costs no load; what depends on the engine (`think`) is decided once
// the engine is known (route.ts).
//
// The engine is always asked to stream (with usage): the answer's timings are measured from its
// chunks (the embedded engine reports none), and a client that asked `stream: false` gets the
// stream collected into one object (stream.ts). Pure.
import { isObject } from '../../common/is-object.js';
import { describe, invalidRequest, type RouterError } from '../http/errors.js';
import type { ChatTool, ChatToolCall, Translated } from '../openai/chat-translation.js';
import { OLLAMA_FIELDS, OLLAMA_OPTIONS, refusedOllamaField, type OllamaEndpoint } from './fields.js';
import { ollamaRefused } from './errors.js';
import { readKeepAlive } from './keep-alive.js';

/** What the translation must know of the model the request names. */
export interface OllamaModelFacts {
  /** It has a vision projector: images are carried as image parts. */
  vision: boolean;
  /** The context it launches with, tokens: `options.num_ctx` above it is refused. */
  contextTokens: number;
}

/** A body read as JSON, with its `model`; before the model is resolved. */
export interface OllamaBody {
  body: Record<string, unknown>;
  model: string;
}

export interface OllamaGeneration {
  /** The model as the client named it; the answer's `model` says it back. */
  model: string;
  stream: boolean;
  /** `keep_alive` in ms (Infinity: for ever); null when not sent. */
  keepAliveMs: number | null;
  /** No prompt and no messages: Ollama's load (or, with keep_alive 0, unload). */
  empty: boolean;
  /** `think` as sent: truthy asks for thinking, false asks for none, null said nothing. */
  think: boolean | null;
  /** The chat completion request, without `model` (the engine's name goes there at send). */
  chat: Record<string, unknown>;
}

/** The body as JSON with a string `model`, or the 400 that says what is wrong. */
export function readOllamaBody(raw: Buffer): Translated<OllamaBody> {
  let body: unknown;
  try {
    body = JSON.parse(raw.toString('utf8'));
  } catch (error) {
    return { ok: false, error: invalidRequest(null, `The request body is not JSON: ${(error as Error).message}`) };
  }
  if (!isObject(body)) return { ok: false, error: invalidRequest(null, `The request body must be a JSON object; got ${describe(body)}.`) };
  // Ollama's older clients said `name`; its server still takes it.
  const model = body['model'] ?? body['name'];
  if (typeof model !== 'string' || model === '') return { ok: false, error: invalidRequest('model', `'model' is required: the name of a model (GET /api/tags lists them); got ${describe(model)}.`) };
  return { ok: true, value: { body, model } };
}

/** Refuses a field the table refuses, or one it does not know. */
function refusedFields(endpoint: OllamaEndpoint, body: Record<string, unknown>): RouterError | null {
  const { name: _old, ...rest } = body;
  const top = refusedOllamaField(OLLAMA_FIELDS[endpoint], rest);
  if (top !== null) return ollamaRefused(top.field, top.why);
  const options = body['options'];
  if (options === undefined || options === null) return null;
  if (!isObject(options)) return invalidRequest('options', `'options' must be an object; got ${describe(options)}.`);
  const option = refusedOllamaField(OLLAMA_OPTIONS, options);
  return option === null ? null : ollamaRefused(`options.${option.field}`, option.why);
}

/** `/api/chat` or `/api/generate` as a chat completion request, or the refusal naming what cannot be said. */
export function toOllamaGeneration(endpoint: 'chat' | 'generate', read: OllamaBody, facts: OllamaModelFacts): Translated<OllamaGeneration> {
  const { body, model } = read;
  const refusal = refusedFields(endpoint, body);
  if (refusal !== null) return { ok: false, error: refusal };
  const keepAlive = readKeepAlive(body['keep_alive']);
  if (!keepAlive.ok) return { ok: false, error: invalidRequest('keep_alive', keepAlive.message) };
  const stream = body['stream'] ?? true;
  if (typeof stream !== 'boolean') return { ok: false, error: invalidRequest('stream', `'stream' must be true or false; got ${describe(stream)}.`) };
  const think = body['think'] ?? null;
  if (think !== null && typeof think !== 'boolean' && !['high', 'medium', 'low'].includes(think as string)) {
    return { ok: false, error: invalidRequest('think', `'think' must be true, false, "high", "medium" or "low"; got ${describe(think)}.`) };
  }
  const messages = endpoint === 'chat' ? chatMessages(body['messages'], facts) : generateMessages(body, facts);
  if (!messages.ok) return messages;
  const sampling = samplingOf(body['options'], facts);
  if (!sampling.ok) return sampling;
  const format = formatOf(body['format']);
  if (!format.ok) return format;
  const tools = endpoint === 'chat' ? toolsOf(body['tools']) : { ok: true as const, value: null };
  if (!tools.ok) return tools;
  const topLevel = endpoint === 'chat' ? providerFields(body, tools.value !== null) : { ok: true as const, value: {} };
  if (!topLevel.ok) return topLevel;
  const logprobs = logprobsOf(body['logprobs'], body['top_logprobs']);
  if (!logprobs.ok) return logprobs;
  const chat: Record<string, unknown> = {
    messages: messages.value,
    stream: true,
    stream_options: { include_usage: true },
    ...topLevel.value,
    ...logprobs.value,
    ...sampling.value,
    ...(format.value === null ? {} : { response_format: format.value }),
    ...(tools.value === null ? {} : { tools: tools.value }),
  };
  return { ok: true, value: { model, stream, keepAliveMs: keepAlive.ms, empty: messages.value.length === 0, think: think === null ? null : think !== false, chat } };
}

function chatMessages(value: unknown, facts: OllamaModelFacts): Translated<Record<string, unknown>[]> {
  if (value === undefined || value === null) return { ok: true, value: [] };
  if (!Array.isArray(value)) return { ok: false, error: invalidRequest('messages', `'messages' must be a list; got ${describe(value)}.`) };
  const out: Record<string, unknown>[] = [];
  // Ollama's tool results name the tool, not the call: each answers the earliest call of that name not answered yet.
  const unanswered: { id: string; name: string }[] = [];
  for (const [i, message] of value.entries()) {
    const at = `messages[${i}]`;
    if (!isObject(message)) return { ok: false, error: invalidRequest(at, `'${at}' must be an object; got ${describe(message)}.`) };
    const { role, content = '' } = message;
    if (typeof content !== 'string') return { ok: false, error: invalidRequest(`${at}.content`, `'${at}.content' must be a string; got ${describe(content)}.`) };
    const parts = withImages(content, message['images'], `${at}.images`, facts);
    if (!parts.ok) return parts;
    for (const field of Object.keys(message)) {
      if (!['role', 'content', 'images', 'tool_calls', 'tool_name', 'tool_call_id', 'thinking'].includes(field)) {
        return { ok: false, error: ollamaRefused(`${at}.${field}`, 'it is not a field of an Ollama message that llmtray knows') };
      }
    }
    if (role === 'system' || role === 'user') {
      out.push({ role, content: parts.value });
    } else if (role === 'assistant') {
      const calls = toolCallsOf(message['tool_calls'], i);
      if (!calls.ok) return calls;
      unanswered.push(...calls.value.map((call) => ({ id: call.id, name: call.function.name })));
      const thinking = message['thinking'];
      out.push({
        role,
        content: parts.value,
        ...(calls.value.length === 0 ? {} : { tool_calls: calls.value }),
        // The engine's template decides what the model sees of an earlier turn's reasoning, as for /v1/responses.
        ...(typeof thinking === 'string' && thinking !== '' ? { reasoning_content: thinking } : {}),
      });
    } else if (role === 'tool') {
      const name = message['tool_name'];
      const callId = message['tool_call_id'];
      const index = typeof callId === 'string' ? unanswered.findIndex((call) => call.id === callId) : unanswered.findIndex((call) => name === undefined || call.name === name);
      if (index === -1) {
        const which = typeof name === 'string' ? `of the tool '${name}'` : 'with no tool_name';
        return { ok: false, error: invalidRequest(at, `'${at}' is a tool result ${which}, but no assistant message before it called that tool; send the assistant's tool_calls before their results.`) };
      }
      const [call] = unanswered.splice(index, 1);
      out.push({ role: 'tool', tool_call_id: (call as { id: string }).id, content: parts.value });
    } else {
      return { ok: false, error: invalidRequest(`${at}.role`, `'${at}.role' must be system, user, assistant or tool; got ${describe(role)}.`) };
    }
  }
  return { ok: true, value: out };
}

function generateMessages(body: Record<string, unknown>, facts: OllamaModelFacts): Translated<Record<string, unknown>[]> {
  const { prompt = '', system } = body;
  if (typeof prompt !== 'string') return { ok: false, error: invalidRequest('prompt', `'prompt' must be a string; got ${describe(prompt)}.`) };
  if (system !== undefined && system !== null && typeof system !== 'string') return { ok: false, error: invalidRequest('system', `'system' must be a string; got ${describe(system)}.`) };
  const parts = withImages(prompt, body['images'], 'images', facts);
  if (!parts.ok) return parts;
  if (prompt === '' && parts.value === prompt) return { ok: true, value: [] };
  return { ok: true, value: [...(typeof system === 'string' && system !== '' ? [{ role: 'system', content: system }] : []), { role: 'user', content: parts.value }] };
}

/** The text alone, or text and image parts where images were sent to a model that sees. */
function withImages(text: string, images: unknown, field: string, facts: OllamaModelFacts): Translated<string | Record<string, unknown>[]> {
  if (images === undefined || images === null || (Array.isArray(images) && images.length === 0)) return { ok: true, value: text };
  if (!Array.isArray(images) || !images.every((image) => typeof image === 'string')) {
    return { ok: false, error: invalidRequest(field, `'${field}' must be a list of base64-encoded images; got ${describe(images)}.`) };
  }
  if (!facts.vision) return { ok: false, error: invalidRequest(field, `'${field}' cannot be honoured: this model has no vision projector (an mmproj file beside it), so it cannot see images.`) };
  const imageParts = (images as string[]).map((data) => ({ type: 'image_url', image_url: { url: `data:${imageType(data)};base64,${data}` } }));
  return { ok: true, value: [...(text === '' ? [] : [{ type: 'text', text }]), ...imageParts] };
}

/** The media type a base64 image's first bytes say (the engines decode by content; the type is a label). */
function imageType(base64: string): string {
  if (base64.startsWith('/9j/')) return 'image/jpeg';
  if (base64.startsWith('R0lGOD')) return 'image/gif';
  if (base64.startsWith('UklGR')) return 'image/webp';
  return 'image/png';
}

function toolCallsOf(value: unknown, messageIndex: number): Translated<ChatToolCall[]> {
  if (value === undefined || value === null) return { ok: true, value: [] };
  const at = `messages[${messageIndex}].tool_calls`;
  if (!Array.isArray(value)) return { ok: false, error: invalidRequest(at, `'${at}' must be a list; got ${describe(value)}.`) };
  const calls: ChatToolCall[] = [];
  for (const [j, call] of value.entries()) {
    const fn = isObject(call) ? call['function'] : undefined;
    if (!isObject(fn) || typeof fn['name'] !== 'string') return { ok: false, error: invalidRequest(`${at}[${j}].function.name`, `'${at}[${j}]' must be {"function": {"name": ..., "arguments": {...}}}.`) };
    const args = fn['arguments'] ?? {};
    const id = isObject(call) && typeof call['id'] === 'string' ? call['id'] : `call_${messageIndex}_${j}`;
    calls.push({ id, type: 'function', function: { name: fn['name'], arguments: typeof args === 'string' ? args : JSON.stringify(args) } });
  }
  return { ok: true, value: calls };
}

function toolsOf(value: unknown): Translated<ChatTool[] | null> {
  if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) return { ok: true, value: null };
  if (!Array.isArray(value)) return { ok: false, error: invalidRequest('tools', `'tools' must be a list; got ${describe(value)}.`) };
  const tools: ChatTool[] = [];
  for (const [i, tool] of value.entries()) {
    const fn = isObject(tool) ? tool['function'] : undefined;
    if (!isObject(tool) || (tool['type'] ?? 'function') !== 'function' || !isObject(fn) || typeof fn['name'] !== 'string') {
      return { ok: false, error: invalidRequest(`tools[${i}]`, `'tools[${i}]' must be a function tool, {"type": "function", "function": {"name": ..., "parameters": {...}}}; got ${describe(tool)}.`) };
    }
    tools.push({
      type: 'function',
      function: { name: fn['name'], ...(typeof fn['description'] === 'string' ? { description: fn['description'] } : {}), parameters: fn['parameters'] ?? { type: 'object', properties: {} } },
    });
  }
  return { ok: true, value: tools };
}

/**
 * The fields ollama-ai-provider-v2 sends beside Ollama's (fields.ts says why they are honoured):
 * `temperature`, `top_p`, `max_output_tokens` and `tool_choice`, in the chat API's words.
 */
function providerFields(body: Record<string, unknown>, hasTools: boolean): Translated<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [field, as] of [['temperature', 'temperature'], ['top_p', 'top_p'], ['max_output_tokens', 'max_tokens']] as const) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) return { ok: false, error: invalidRequest(field, `'${field}' must be a number; got ${describe(value)}.`) };
    out[as] = value;
  }
  const choice = body['tool_choice'];
  if (choice === undefined || choice === null) return { ok: true, value: out };
  if (!hasTools) return { ok: false, error: invalidRequest('tool_choice', `'tool_choice' needs 'tools'; none were sent.`) };
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { ok: true, value: { ...out, tool_choice: choice } };
  const name = isObject(choice) && choice['type'] === 'function' ? (choice['name'] ?? (isObject(choice['function']) ? choice['function']['name'] : undefined)) : undefined;
  if (typeof name !== 'string') {
    return { ok: false, error: invalidRequest('tool_choice', `'tool_choice' must be "auto", "none", "required" or {"type": "function", "name": ...}; got ${describe(choice)}.`) };
  }
  return { ok: true, value: { ...out, tool_choice: { type: 'function', function: { name } } } };
}

/** `logprobs` and `top_logprobs` as the chat API takes them: the alternatives only with the tokens' own. */
function logprobsOf(logprobs: unknown, top: unknown): Translated<Record<string, unknown>> {
  if (logprobs !== undefined && logprobs !== null && typeof logprobs !== 'boolean') return { ok: false, error: invalidRequest('logprobs', `'logprobs' must be true or false; got ${describe(logprobs)}.`) };
  if (top === undefined || top === null || top === 0) return { ok: true, value: logprobs === true ? { logprobs: true } : {} };
  if (typeof top !== 'number' || !Number.isInteger(top) || top < 0 || top > 20) return { ok: false, error: invalidRequest('top_logprobs', `'top_logprobs' must be a whole number from 0 to 20; got ${describe(top)}.`) };
  if (logprobs !== true) return { ok: false, error: invalidRequest('top_logprobs', "'top_logprobs' needs 'logprobs': true, as Ollama's API says.") };
  return { ok: true, value: { logprobs: true, top_logprobs: top } };
}

function formatOf(value: unknown): Translated<Record<string, unknown> | null> {
  if (value === undefined || value === null || value === '') return { ok: true, value: null };
  if (value === 'json') return { ok: true, value: { type: 'json_object' } };
  if (isObject(value)) return { ok: true, value: { type: 'json_schema', json_schema: { name: 'format', schema: value, strict: true } } };
  return { ok: false, error: invalidRequest('format', `'format' must be "json" or a JSON schema; got ${describe(value)}.`) };
}

const NUMBER_OPTIONS: Record<string, string> = {
  temperature: 'temperature',
  top_k: 'top_k',
  top_p: 'top_p',
  min_p: 'min_p',
  seed: 'seed',
  repeat_penalty: 'repeat_penalty',
  presence_penalty: 'presence_penalty',
  frequency_penalty: 'frequency_penalty',
};

/** The honoured options in the chat API's words (refusedFields refused the rest already). */
function samplingOf(value: unknown, facts: OllamaModelFacts): Translated<Record<string, unknown>> {
  if (!isObject(value)) return { ok: true, value: {} };
  const out: Record<string, unknown> = {};
  for (const [option, field] of Object.entries(NUMBER_OPTIONS)) {
    const v = value[option];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v)) return { ok: false, error: invalidRequest(`options.${option}`, `'options.${option}' must be a number; got ${describe(v)}.`) };
    out[field] = v;
  }
  const predict = value['num_predict'];
  if (predict !== undefined && predict !== null) {
    if (typeof predict !== 'number' || !Number.isInteger(predict) || predict < -2) {
      return { ok: false, error: invalidRequest('options.num_predict', `'options.num_predict' must be a whole number, -1 or -2 for no limit; got ${describe(predict)}.`) };
    }
    if (predict >= 0) out['max_tokens'] = predict;
  }
  const stop = value['stop'];
  if (stop !== undefined && stop !== null) {
    const list = typeof stop === 'string' ? [stop] : stop;
    if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) return { ok: false, error: invalidRequest('options.stop', `'options.stop' must be a list of strings; got ${describe(stop)}.`) };
    out['stop'] = list;
  }
  const context = numCtxRefusal(value['num_ctx'], facts);
  return context === null ? { ok: true, value: out } : { ok: false, error: context };
}

/** `num_ctx` up to the model's context is what it serves anyway; above it, said with the config key that raises it. Null: honoured. */
export function numCtxRefusal(numCtx: unknown, facts: OllamaModelFacts): RouterError | null {
  if (numCtx === undefined || numCtx === null) return null;
  if (typeof numCtx !== 'number' || !Number.isInteger(numCtx) || numCtx < 1) return invalidRequest('options.num_ctx', `'options.num_ctx' must be a positive whole number; got ${describe(numCtx)}.`);
  if (numCtx <= facts.contextTokens) return null;
  return ollamaRefused(
    'options.num_ctx',
    `this model launches with a context of ${facts.contextTokens} tokens, fewer than the ${numCtx} asked; a request does not relaunch a model with another context (raise its \`ctx\` in llmtray's config.yaml)`,
  );
}
