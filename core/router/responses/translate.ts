// OpenAI's Responses API said in its chat completions API, and back, for every engine: neither
// the embedded engine nor a llama-server claims /v1/responses today (EngineClaim has no such
// flag; the supervisor asks a llama-server only about Anthropic's /v1/messages), so a Responses
// request is always translated. A flag like `anthropicMessages` would let a build that serves the
// API take the request as it is (as anthropic/route.ts does).
//
// What is translated is what both APIs can say: `instructions` (a system message), `input` as
// a string or as message items (roles user, system, developer, assistant; text parts), an
// assistant's `function_call` items (its tool_calls), `reasoning` items (their reasoning_text, as
// the answers give it back: that assistant turn's `reasoning_content`) and
// `function_call_output` items (tool messages), function tools in Responses' flat shape,
// `tool_choice`, `parallel_tool_calls`, `text.format` (response_format), `max_output_tokens`,
// `temperature`, `top_p`, token log probabilities (`include: ['message.output_text.logprobs']`,
// `top_logprobs`) and streaming. What the chat API cannot say — images, files, audio, refusals,
// reasoning summaries and encrypted reasoning, references to stored items, hosted tools, other
// `include` values — is refused with a 400 naming it, never dropped; request fields are judged
// by the field table first (openai/request-fields.ts: `previous_response_id`, `store: true`, …).
//
// The answer is a Response: a reasoning item with a thinking model's reasoning text (the chat
// API's `reasoning_content`, as llama-server answers it), then one message item with the text
// (its token log probabilities when asked), one function_call item per tool call,
// `status: 'incomplete'` with `incomplete_details.reason: 'max_output_tokens'` when the engine
// stopped at the length limit. Pure.
import { readChatCompletion, type ChatTool, type ChatToolCall, type ChatToolChoice, type Translated } from '../openai/chat-translation.js';
import type { OpenAIChatMessage } from '../../contracts/protocols/openai.js';
import type {
  ResponseFunctionCall,
  ResponseFunctionTool,
  ResponseObject,
  ResponseOutputItem,
  ResponsesRequest,
  ResponseTokenLogprob,
  ResponseUsage,
} from '../../contracts/protocols/openai-responses.js';
import type { EngineKind } from '../../contracts/snapshot.js';
import { describe, invalidRequest, type RouterError } from '../http/errors.js';
import { isObject } from '../../common/is-object.js';

/** The chat request that asks what `request` asks, less its `model` (the claim decides that). */
export type ChatRequestBody = Record<string, unknown> & { messages: OpenAIChatMessage[] };

/** Refused: `what` says what the item or field is; the sentence says why it cannot be taken. */
function untranslatable<T>(param: string, what: string): Translated<T> {
  return {
    ok: false,
    error: invalidRequest(
      param,
      `'${param}' ${what}, which llmtray cannot translate: it answers the Responses API through its engines' chat completions, which take instructions, text turns, function tools and their calls and outputs only. llmtray refuses it rather than answer as if it were not sent.`,
    ),
  };
}

function malformed<T>(param: string, message: string): Translated<T> {
  return { ok: false, error: invalidRequest(param, message) };
}

/** A Responses request as a chat request; refuses the first item or field the chat API cannot say, naming it. */
export function toChatRequest(request: ResponsesRequest): Translated<ChatRequestBody> {
  const messages = toChatMessages(request);
  if (!messages.ok) return messages;
  const chat: ChatRequestBody = { messages: messages.value };
  if (typeof request.max_output_tokens === 'number') chat['max_tokens'] = request.max_output_tokens;
  for (const field of ['temperature', 'top_p', 'parallel_tool_calls'] as const) {
    const value = request[field];
    if (value !== undefined && value !== null) chat[field] = value;
  }
  if (Array.isArray(request.tools) && request.tools.length > 0) {
    const tools = toChatTools(request.tools);
    if (!tools.ok) return tools;
    chat['tools'] = tools.value;
  }
  if (request.tool_choice !== undefined && request.tool_choice !== null) {
    const choice = toChatToolChoice(request.tool_choice);
    if (!choice.ok) return choice;
    chat['tool_choice'] = choice.value;
  }
  if (request.text !== undefined && request.text !== null) {
    const format = toResponseFormat(request.text);
    if (!format.ok) return format;
    if (format.value !== null) chat['response_format'] = format.value;
  }
  const logprobs = toChatLogprobs(request);
  if (!logprobs.ok) return logprobs;
  Object.assign(chat, logprobs.value);
  if (request.stream === true) {
    chat['stream'] = true;
    // The usage response.completed reports: llama-server sends it on the last chunk anyway, the embedded engine on request.
    chat['stream_options'] = { include_usage: true };
  }
  return { ok: true, value: chat };
}

/** `instructions` first (as a system message), then `input`: a string is one user turn; items are turns, calls and call outputs. */
function toChatMessages(request: ResponsesRequest): Translated<OpenAIChatMessage[]> {
  const out: OpenAIChatMessage[] = [];
  if (typeof request.instructions === 'string' && request.instructions !== '') out.push({ role: 'system', content: request.instructions });
  if (typeof request.input === 'string') {
    out.push({ role: 'user', content: request.input });
    return { ok: true, value: out };
  }
  for (const [index, item] of request.input.entries()) {
    const param = `input[${index}]`;
    if (!isObject(item)) return malformed(param, `${param} must be an input item, an object such as {"role":"user","content":"…"}; got ${describe(item)}.`);
    const type = item['type'] ?? 'message';
    if (type === 'message') {
      const message = toChatMessage(item, param);
      if (!message.ok) return message;
      // The text after a reasoning item is the turn that reasoning led to.
      const last = out.at(-1);
      if (message.value.role === 'assistant' && last !== undefined && isReasoningOnly(last)) last.content = message.value.content;
      else out.push(message.value);
    } else if (type === 'reasoning') {
      const reasoning = toReasoningContent(item, param);
      if (!reasoning.ok) return reasoning;
      // An empty reasoning item says nothing to carry.
      if (reasoning.value !== '') out.push({ role: 'assistant', content: null, reasoning_content: reasoning.value });
    } else if (type === 'function_call') {
      const call = toChatToolCall(item, param);
      if (!call.ok) return call;
      // Parallel calls are one assistant turn in the chat API: the calls after a turn (its text, or other calls) join it.
      const last = out.at(-1);
      if (last?.role === 'assistant') {
        const calls = Array.isArray(last['tool_calls']) ? (last['tool_calls'] as ChatToolCall[]) : [];
        last['tool_calls'] = [...calls, call.value];
      } else out.push({ role: 'assistant', content: null, tool_calls: [call.value] });
    } else if (type === 'function_call_output') {
      const output = toToolMessage(item, param);
      if (!output.ok) return output;
      out.push(output.value);
    } else {
      return untranslatable(`${param}.type`, `is a "${String(type)}" item`);
    }
  }
  return { ok: true, value: out };
}

/** An assistant turn so far only reasoned: the text or calls of the items after it are its own. */
function isReasoningOnly(message: OpenAIChatMessage): boolean {
  return message.role === 'assistant' && message.content === null && typeof message['reasoning_content'] === 'string' && message['tool_calls'] === undefined;
}

/**
 * A reasoning item (as llmtray's answers give it back: its text in `reasoning_text` parts) as
 * the chat API's `reasoning_content` of the assistant turn it belongs to, which llama-server
 * renders where the model's chat template shows past reasoning. A summary or OpenAI's encrypted
 * reasoning cannot be said as a model's own reasoning text, and is refused.
 */
function toReasoningContent(item: Record<string, unknown>, param: string): Translated<string> {
  if (item['encrypted_content'] !== undefined && item['encrypted_content'] !== null) return untranslatable(`${param}.encrypted_content`, 'is reasoning encrypted by OpenAI’s servers');
  if (Array.isArray(item['summary']) && item['summary'].length > 0) return untranslatable(`${param}.summary`, 'is a summary of reasoning, not the model’s reasoning text');
  const content = item['content'] ?? [];
  if (!Array.isArray(content)) return malformed(`${param}.content`, `${param}.content must be an array of reasoning_text parts; got ${describe(content)}.`);
  const texts: string[] = [];
  for (const [index, part] of content.entries()) {
    const at = `${param}.content[${index}]`;
    if (!isObject(part) || part['type'] !== 'reasoning_text' || typeof part['text'] !== 'string') {
      return malformed(at, `${at} must be a reasoning_text part, {"type":"reasoning_text","text":"…"}; got ${describe(part)}.`);
    }
    texts.push(part['text']);
  }
  return { ok: true, value: texts.join('') };
}

/**
 * Reasoning sent back (a reasoning item of `input`) for the embedded engine, which renders a
 * conversation's text only and would leave it out: a 400 naming it. Null on llama-server, whose
 * chat template decides what of a past turn's reasoning the model sees.
 */
export function refusedReasoning(chat: ChatRequestBody, engine: EngineKind, servedBy: string): RouterError | null {
  if (engine !== 'embedded' || !chat.messages.some((m) => typeof m['reasoning_content'] === 'string')) return null;
  return invalidRequest(
    'input',
    `'input' has a reasoning item, which cannot be honoured on the model server for '${servedBy}': the embedded engine renders a conversation's text, not a model's past reasoning. Leave the reasoning items out of 'input' (or serve the model with engine: llama-server); llmtray refuses them rather than answer as if they were not sent.`,
  );
}

const ROLES = new Set(['user', 'system', 'developer', 'assistant']);

function toChatMessage(item: Record<string, unknown>, param: string): Translated<OpenAIChatMessage> {
  const role = item['role'];
  if (typeof role !== 'string' || !ROLES.has(role)) {
    return malformed(`${param}.role`, `${param}.role must be "user", "system", "developer" or "assistant"; got ${describe(role)}.`);
  }
  // A developer message is the system prompt of newer OpenAI models; chat templates know only "system".
  const chatRole = role === 'developer' ? 'system' : (role as OpenAIChatMessage['role']);
  const content = item['content'];
  if (typeof content === 'string') return { ok: true, value: { role: chatRole, content } };
  if (!Array.isArray(content)) return malformed(`${param}.content`, `${param}.content must be a string or an array of content parts; got ${describe(content)}.`);
  const texts: string[] = [];
  for (const [index, part] of content.entries()) {
    const at = `${param}.content[${index}]`;
    if (!isObject(part) || typeof part['type'] !== 'string') return malformed(at, `${at} must be a content part, an object with a 'type' such as "input_text"; got ${describe(part)}.`);
    // input_text is the user's side and output_text the assistant's; both are text, so either is taken in any turn.
    if (part['type'] !== 'input_text' && part['type'] !== 'output_text') return untranslatable(at, `is an "${part['type']}" part`);
    if (typeof part['text'] !== 'string') return malformed(`${at}.text`, `${at} is a text part, so its 'text' must be a string; got ${describe(part['text'])}.`);
    texts.push(part['text']);
  }
  // The parts of one turn follow each other as one text, as OpenAI reads them.
  return { ok: true, value: { role: chatRole, content: texts.join('') } };
}

function toChatToolCall(item: Record<string, unknown>, param: string): Translated<ChatToolCall> {
  for (const field of ['call_id', 'name', 'arguments']) {
    if (typeof item[field] !== 'string') return malformed(`${param}.${field}`, `${param} is a function_call item, so its '${field}' must be a string; got ${describe(item[field])}.`);
  }
  return { ok: true, value: { id: item['call_id'] as string, type: 'function', function: { name: item['name'] as string, arguments: item['arguments'] as string } } };
}

function toToolMessage(item: Record<string, unknown>, param: string): Translated<OpenAIChatMessage> {
  if (typeof item['call_id'] !== 'string') return malformed(`${param}.call_id`, `${param} is a function_call_output item, so it needs the string 'call_id' of the call it answers.`);
  const output = item['output'];
  let text: string;
  if (typeof output === 'string') text = output;
  else if (Array.isArray(output)) {
    const parts: string[] = [];
    for (const [index, part] of output.entries()) {
      const at = `${param}.output[${index}]`;
      if (!isObject(part) || part['type'] !== 'input_text' || typeof part['text'] !== 'string') {
        return untranslatable(at, `is ${isObject(part) && typeof part['type'] === 'string' ? `an "${part['type']}" part` : describe(part)} in a function call's output`);
      }
      parts.push(part['text']);
    }
    text = parts.join('');
  } else return malformed(`${param}.output`, `${param}.output must be a string or an array of input_text parts; got ${describe(output)}.`);
  return { ok: true, value: { role: 'tool', tool_call_id: item['call_id'], content: text } };
}

/** Responses' flat function tools ({type, name, description, parameters, strict}) in the chat API's nested shape. */
function toChatTools(tools: unknown[]): Translated<ChatTool[]> {
  const out: ChatTool[] = [];
  for (const [index, tool] of tools.entries()) {
    const param = `tools[${index}]`;
    if (!isObject(tool)) return malformed(param, `${param} must be a tool, an object such as {"type":"function","name":…,"parameters":…}; got ${describe(tool)}.`);
    if (tool['type'] !== 'function') return untranslatable(`${param}.type`, `is the tool type ${describe(tool['type'])} (a local model calls only function tools)`);
    if (typeof tool['name'] !== 'string' || tool['name'] === '') return malformed(`${param}.name`, `${param}.name must be a non-empty string; got ${describe(tool['name'])}.`);
    // A function without parameters takes none: the chat API says so with an empty object schema.
    const parameters = isObject(tool['parameters']) ? tool['parameters'] : { type: 'object', properties: {} };
    const fn: ChatTool['function'] & { strict?: boolean } = { name: tool['name'], parameters };
    if (typeof tool['description'] === 'string') fn.description = tool['description'];
    if (typeof tool['strict'] === 'boolean') fn.strict = tool['strict'];
    out.push({ type: 'function', function: fn });
  }
  return { ok: true, value: out };
}

function toChatToolChoice(choice: unknown): Translated<ChatToolChoice> {
  if (choice === 'auto' || choice === 'none' || choice === 'required') return { ok: true, value: choice };
  if (!isObject(choice)) return malformed('tool_choice', `'tool_choice' must be "auto", "none", "required" or {"type":"function","name":…}; got ${describe(choice)}.`);
  if (choice['type'] !== 'function') return untranslatable('tool_choice.type', `is the tool choice ${describe(choice['type'])} (a local model calls only function tools)`);
  if (typeof choice['name'] !== 'string' || choice['name'] === '') return malformed('tool_choice.name', `'tool_choice' of type "function" needs the function's 'name'; got ${describe(choice['name'])}.`);
  return { ok: true, value: { type: 'function', function: { name: choice['name'] } } };
}

/** `text.format` as the chat API's `response_format`; null for plain text (the default). */
function toResponseFormat(text: NonNullable<ResponsesRequest['text']>): Translated<Record<string, unknown> | null> {
  if (text.verbosity !== undefined && text.verbosity !== null) return untranslatable('text.verbosity', 'asks for a verbosity (no local model takes a verbosity setting)');
  const format = text.format;
  if (format === undefined || format === null) return { ok: true, value: null };
  if (!isObject(format)) return malformed('text.format', `'text.format' must be an object such as {"type":"json_schema",…}; got ${describe(format)}.`);
  switch (format['type']) {
    case 'text':
      return { ok: true, value: null };
    case 'json_object':
      return { ok: true, value: { type: 'json_object' } };
    case 'json_schema': {
      if (typeof format['name'] !== 'string' || format['name'] === '') return malformed('text.format.name', `'text.format' of type "json_schema" needs a 'name'; got ${describe(format['name'])}.`);
      if (!isObject(format['schema'])) return malformed('text.format.schema', `'text.format.schema' must be a JSON schema object; got ${describe(format['schema'])}.`);
      const schema: Record<string, unknown> = { name: format['name'], schema: format['schema'] };
      if (typeof format['description'] === 'string') schema['description'] = format['description'];
      if (typeof format['strict'] === 'boolean') schema['strict'] = format['strict'];
      return { ok: true, value: { type: 'json_schema', json_schema: schema } };
    }
    default:
      return malformed('text.format.type', `'text.format.type' must be "text", "json_object" or "json_schema"; got ${describe(format['type'])}.`);
  }
}

/** The one `include` value the engines' answers can fill: the output text's token log probabilities. */
const OUTPUT_TEXT_LOGPROBS = 'message.output_text.logprobs';

/**
 * `include: ['message.output_text.logprobs']` and `top_logprobs` (alternatives per token) as the
 * chat API's `logprobs: true` and `top_logprobs`; either asks for them. Any other `include` value
 * asks for output the engines do not make (encrypted reasoning, hosted tools' results, images) and
 * is refused by name.
 */
function toChatLogprobs(request: ResponsesRequest): Translated<{ logprobs?: true; top_logprobs?: number }> {
  let included = false;
  for (const [index, value] of (request.include ?? []).entries()) {
    if (value === OUTPUT_TEXT_LOGPROBS) included = true;
    else {
      const param = `include[${index}]`;
      return malformed(
        param,
        `'${param}' asks for ${describe(value)}, which llmtray cannot include: its engines' chat completions give only the output text's token log probabilities ("${OUTPUT_TEXT_LOGPROBS}"). llmtray refuses it rather than answer as if it were not sent.`,
      );
    }
  }
  const top = typeof request.top_logprobs === 'number' ? request.top_logprobs : 0;
  return { ok: true, value: included || top > 0 ? { logprobs: true, top_logprobs: top } : {} };
}

/** What a Response says of its request and its identity, whatever the engine answers. */
export interface ResponseFrame {
  /** `resp_…`; the output items' ids are made from it. */
  id: string;
  createdAt: number;
  /** The model the answer names: a fallback's id, or null to keep the engine's own name. */
  model: string | null;
  request: ResponsesRequest;
}

/** The Response before any output: the request's settings as OpenAI's answer repeats them. */
export function responseShell(frame: ResponseFrame, model: string): ResponseObject {
  const { request } = frame;
  return {
    id: frame.id,
    object: 'response',
    created_at: frame.createdAt,
    completed_at: null,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: typeof request.instructions === 'string' ? request.instructions : null,
    max_output_tokens: typeof request.max_output_tokens === 'number' ? request.max_output_tokens : null,
    model: frame.model ?? model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls !== false,
    previous_response_id: null,
    temperature: typeof request.temperature === 'number' ? request.temperature : null,
    top_p: typeof request.top_p === 'number' ? request.top_p : null,
    top_logprobs: typeof request.top_logprobs === 'number' ? request.top_logprobs : null,
    text: { format: isObject(request.text) && isObject(request.text.format) ? request.text.format : { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).filter(isObject).map(responseTool),
    truncation: 'disabled',
    metadata: isObject(request.metadata) ? request.metadata : {},
  };
}

function responseTool(tool: Record<string, unknown>): ResponseFunctionTool {
  return {
    type: 'function',
    name: String(tool['name']),
    ...(typeof tool['description'] === 'string' ? { description: tool['description'] } : {}),
    parameters: isObject(tool['parameters']) ? tool['parameters'] : null,
    strict: typeof tool['strict'] === 'boolean' ? tool['strict'] : null,
  };
}

/** The finished Response: its output, its usage, and whether the engine stopped at the length limit. */
export function finishedResponse(shell: ResponseObject, output: ResponseOutputItem[], finishReason: unknown, usage: ResponseUsage, completedAt: number): ResponseObject {
  const cut = finishReason === 'length';
  return { ...shell, status: cut ? 'incomplete' : 'completed', incomplete_details: cut ? { reason: 'max_output_tokens' } : null, completed_at: completedAt, output, usage };
}

export const reasoningItemId = (responseId: string): string => `rs_${responseId.slice('resp_'.length)}`;
export const messageItemId = (responseId: string): string => `msg_${responseId.slice('resp_'.length)}`;
export const callItemId = (responseId: string, index: number): string => `fc_${responseId.slice('resp_'.length)}_${index}`;

/**
 * A chat completion answer (JSON text) as a Response; null when the text is not a chat
 * completion, or a tool call in it is not a function call.
 */
export function toResponse(text: string, frame: ResponseFrame, completedAt: number): ResponseObject | null {
  const read = readChatCompletion(text);
  if (read === null) return null;
  const { completion, choice, message } = read;
  const finishReason = choice['finish_reason'];
  const status = finishReason === 'length' ? 'incomplete' : 'completed';
  const output: ResponseOutputItem[] = [];
  const { content, reasoning_content: reasoning } = message;
  const answer = typeof content === 'string' ? content : '';
  let logprobs = responseLogprobsOf(choice['logprobs']);
  // A thinking model's reasoning comes before its answer, as OpenAI's reasoning models give it.
  if (typeof reasoning === 'string' && reasoning !== '') {
    output.push({ type: 'reasoning', id: reasoningItemId(frame.id), summary: [], content: [{ type: 'reasoning_text', text: reasoning }], status });
    logprobs = tokensSpelling(answer, logprobs);
  }
  const calls = Array.isArray(message['tool_calls']) ? message['tool_calls'] : [];
  if (answer !== '' || calls.length === 0) {
    output.push({ type: 'message', id: messageItemId(frame.id), status, role: 'assistant', content: [{ type: 'output_text', text: answer, annotations: [], logprobs }] });
  }
  for (const [index, call] of calls.entries()) {
    // The token limit cuts the last call only: its arguments stop midway.
    const item = functionCallItem(call, callItemId(frame.id, index), index === calls.length - 1 ? status : 'completed');
    if (item === null) return null;
    output.push(item);
  }
  const model = typeof completion['model'] === 'string' ? completion['model'] : '';
  const shell = responseShell({ ...frame, createdAt: typeof completion['created'] === 'number' ? completion['created'] : frame.createdAt }, model);
  return finishedResponse(shell, output, finishReason, responseUsageOf(completion['usage']), completedAt);
}

function functionCallItem(call: unknown, id: string, status: 'completed' | 'incomplete'): ResponseFunctionCall | null {
  if (!isObject(call) || !isObject(call['function']) || typeof call['function']['name'] !== 'string') return null;
  const args = call['function']['arguments'];
  return { type: 'function_call', id, call_id: typeof call['id'] === 'string' ? call['id'] : id, name: call['function']['name'], arguments: typeof args === 'string' ? args : '', status };
}

/**
 * A chat choice's `logprobs` ({content: [ChatCompletionTokenLogprob…]}, whole or a chunk's) as the
 * output text's; empty when there are none. A token without its bytes gets its UTF-8, which is
 * what they are.
 */
export function responseLogprobsOf(logprobs: unknown): ResponseTokenLogprob[] {
  const tokens = isObject(logprobs) && Array.isArray(logprobs['content']) ? logprobs['content'] : [];
  return tokens.filter(isTokenLogprob).map((t) => ({
    ...alternativeOf(t),
    top_logprobs: Array.isArray(t['top_logprobs']) ? t['top_logprobs'].filter(isTokenLogprob).map(alternativeOf) : [],
  }));
}

/**
 * The last of `tokens` that spell `text` (leading whitespace aside, which llama.cpp's reasoning
 * parser trims): llama-server lists every generated token's log probability, the reasoning's
 * and its closing tag's first, and the Responses API has a place for the output text's only.
 * All of them when no tail spells it: what the engine listed is not second-guessed.
 */
function tokensSpelling(text: string, tokens: ResponseTokenLogprob[]): ResponseTokenLogprob[] {
  // Reasoning cut off before any answer: every token listed was the reasoning's.
  if (text === '') return [];
  let spelled = '';
  for (let i = tokens.length - 1; i >= 0; i--) {
    spelled = (tokens[i] as ResponseTokenLogprob).token + spelled;
    if (spelled.length >= text.length) return spelled.trimStart() === text.trimStart() ? tokens.slice(i) : tokens;
  }
  return tokens;
}

function isTokenLogprob(value: unknown): value is Record<string, unknown> & { token: string; logprob: number } {
  return isObject(value) && typeof value['token'] === 'string' && typeof value['logprob'] === 'number';
}

function alternativeOf(t: { token: string; logprob: number; [key: string]: unknown }): ResponseTokenLogprob['top_logprobs'][number] {
  const bytes = Array.isArray(t['bytes']) && t['bytes'].every(Number.isInteger) ? (t['bytes'] as number[]) : [...Buffer.from(t.token, 'utf8')];
  return { token: t.token, logprob: t.logprob, bytes };
}

/** The chat API's usage in Responses' words (cached prompt tokens are part of input_tokens there, as in the chat API). */
export function responseUsageOf(usage: unknown): ResponseUsage {
  const record = isObject(usage) ? usage : {};
  const input = count(record['prompt_tokens']);
  const output = count(record['completion_tokens']);
  const promptDetails = isObject(record['prompt_tokens_details']) ? record['prompt_tokens_details'] : {};
  const completionDetails = isObject(record['completion_tokens_details']) ? record['completion_tokens_details'] : {};
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: count(promptDetails['cached_tokens']), cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: count(completionDetails['reasoning_tokens']) },
    total_tokens: typeof record['total_tokens'] === 'number' ? count(record['total_tokens']) : input + output,
  };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : 0;
}
