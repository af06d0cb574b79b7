// Anthropic's tool use said in OpenAI's chat API, and back, for engines that speak only the
// latter (translate.ts does the rest of the message).
//
// Both APIs say the same things in other words: a tool is a function whose `input_schema` is
// the function's `parameters`; `tool_choice` `any` is `required`, `{type:"tool",name}` is a
// named function; an assistant's `tool_use` block is one of its `tool_calls` (the input as a
// JSON string of arguments); a user's `tool_result` block is a `tool` message answering the call
// by id. What has no chat counterpart is refused by name, never dropped: server tools
// (`web_search_…`, `bash_…`: a `type` other than "custom") and images inside a tool result. A
// tool's or block's `cache_control` is not carried: it steers Anthropic's prompt cache, and an
// engine caches its prompt prefix by itself whatever is marked. A tool result marked `is_error` keeps that as words
// before its text, since the chat API has no flag for it and the model must still be told. Pure.
import type { AnthropicContentBlock } from '../../contracts/protocols/anthropic.js';
import type { OpenAIChatMessage } from '../../contracts/protocols/openai.js';
import type { ChatTool, ChatToolCall, ChatToolChoice } from '../openai/chat-translation.js';
import { parsePartialJson } from './partial-json.js';
import { describe } from '../http/errors.js';
import { isObject } from '../../common/is-object.js';
import { type Problem } from '../openai/validate-request.js';

/**
 * A failure is either a malformed request (`problem.message` is the whole sentence) or, with
 * `untranslatable`, a well-formed block the chat API cannot say (`problem.message` says what it
 * is; the translator adds which engine cannot take it).
 */
export type Result<T> = { ok: true; value: T } | { ok: false; problem: Problem; untranslatable?: true };

/** Anthropic's `tools` as chat tools; refuses a tool the chat API cannot call (a server tool). */
export function toChatTools(tools: unknown[]): Result<ChatTool[]> {
  const out: ChatTool[] = [];
  for (const [index, tool] of tools.entries()) {
    const param = `tools[${index}]`;
    if (!isObject(tool)) return problem(param, `${param} must be a tool, an object with a 'name' and an 'input_schema'; got ${describe(tool)}.`);
    if (tool['type'] !== undefined && tool['type'] !== null && tool['type'] !== 'custom') {
      return { ok: false, problem: { param: `${param}.type`, message: `is Anthropic's server tool "${String(tool['type'])}" (a local model calls only tools defined by a 'name' and an 'input_schema')` }, untranslatable: true };
    }
    if (typeof tool['name'] !== 'string' || tool['name'] === '') return problem(`${param}.name`, `${param}.name must be a non-empty string; got ${describe(tool['name'])}.`);
    if (!isObject(tool['input_schema'])) return problem(`${param}.input_schema`, `${param}.input_schema must be a JSON schema object; got ${describe(tool['input_schema'])}.`);
    const fn: ChatTool['function'] = { name: tool['name'], parameters: tool['input_schema'] };
    if (typeof tool['description'] === 'string') fn.description = tool['description'];
    out.push({ type: 'function', function: fn });
  }
  return { ok: true, value: out };
}

/** Anthropic's `tool_choice` in chat words, with `disable_parallel_tool_use` as `parallel_tool_calls`. */
export function toChatToolChoice(choice: unknown): Result<{ tool_choice: ChatToolChoice; parallel_tool_calls?: boolean }> {
  if (!isObject(choice)) return problem('tool_choice', `'tool_choice' must be an object such as {"type":"auto"}; got ${describe(choice)}.`);
  const parallel = choice['disable_parallel_tool_use'] === true ? { parallel_tool_calls: false } : {};
  switch (choice['type']) {
    case 'auto':
      return { ok: true, value: { tool_choice: 'auto', ...parallel } };
    case 'any':
      return { ok: true, value: { tool_choice: 'required', ...parallel } };
    case 'none':
      return { ok: true, value: { tool_choice: 'none' } };
    case 'tool':
      if (typeof choice['name'] !== 'string' || choice['name'] === '') {
        return problem('tool_choice.name', `'tool_choice' of type "tool" needs the tool's 'name'; got ${describe(choice['name'])}.`);
      }
      return { ok: true, value: { tool_choice: { type: 'function', function: { name: choice['name'] } }, ...parallel } };
    default:
      return problem('tool_choice.type', `'tool_choice.type' must be "auto", "any", "tool" or "none"; got ${describe(choice['type'])}.`);
  }
}

/**
 * One Anthropic turn's blocks as chat messages: an assistant's text and `tool_use` blocks become
 * one message with `tool_calls`; a user's `tool_result` blocks become `tool` messages, in their
 * order, before the user's own text (the chat API wants the answers to the calls first).
 * `at` names the turn in refusals; a block that is neither text nor a tool block is refused.
 */
export function toChatTurn(role: 'user' | 'assistant', blocks: AnthropicContentBlock[], at: string): Result<OpenAIChatMessage[]> {
  const text: { type: 'text'; text: string }[] = [];
  const calls: ChatToolCall[] = [];
  const results: OpenAIChatMessage[] = [];
  for (const [index, block] of blocks.entries()) {
    const param = `${at}[${index}]`;
    if (block.type === 'text' && typeof block['text'] === 'string') {
      text.push({ type: 'text', text: block['text'] });
    } else if (block.type === 'tool_use' && role === 'assistant') {
      if (typeof block['id'] !== 'string' || typeof block['name'] !== 'string') return problem(param, `${param} is a tool_use block, so it needs a string 'id' and 'name'.`);
      calls.push({ id: block['id'], type: 'function', function: { name: block['name'], arguments: JSON.stringify(block['input'] ?? {}) } });
    } else if (block.type === 'tool_result' && role === 'user') {
      const result = toolResultMessage(block, param);
      if (!result.ok) return result;
      results.push(result.value);
    } else {
      const where = block.type === 'tool_use' || block.type === 'tool_result' ? ` in a ${role} turn` : '';
      return { ok: false, problem: { param, message: `is a "${block.type}" block${where}` }, untranslatable: true };
    }
  }
  if (role === 'assistant') {
    if (calls.length === 0) return { ok: true, value: [{ role, content: text }] };
    const joined = text.map((part) => part.text).join('');
    return { ok: true, value: [{ role, content: joined === '' ? null : joined, tool_calls: calls }] };
  }
  return { ok: true, value: text.length === 0 && results.length > 0 ? results : [...results, { role, content: text }] };
}

function toolResultMessage(block: AnthropicContentBlock, param: string): Result<OpenAIChatMessage> {
  if (typeof block['tool_use_id'] !== 'string') return problem(`${param}.tool_use_id`, `${param} is a tool_result block, so it needs the string 'tool_use_id' of the call it answers.`);
  const content = block['content'];
  let text: string;
  if (content === undefined || content === null) text = '';
  else if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    const parts: string[] = [];
    for (const [index, part] of content.entries()) {
      if (!isObject(part) || part['type'] !== 'text' || typeof part['text'] !== 'string') {
        const kind = isObject(part) && typeof part['type'] === 'string' ? `a "${part['type']}" block` : describe(part);
        return { ok: false, problem: { param: `${param}.content[${index}]`, message: `is ${kind} in a tool result` }, untranslatable: true };
      }
      parts.push(part['text']);
    }
    text = parts.join('\n\n');
  } else return problem(`${param}.content`, `${param}.content must be a string or an array of text blocks; got ${describe(content)}.`);
  if (block['is_error'] === true) text = `Error: ${text}`;
  return { ok: true, value: { role: 'tool', tool_call_id: block['tool_use_id'], content: text } };
}

/**
 * The chat answer's `tool_calls` as `tool_use` blocks; null when one is not a function call
 * with JSON-object arguments (an answer that is not what the chat API promises). `cut`: the
 * token limit ended the answer, so its last call's arguments may stop midway; they are read as
 * far as they go (partial-json.ts), as the Messages API returns an incomplete tool_use with
 * stop_reason `max_tokens`.
 */
export function toToolUseBlocks(calls: unknown[], cut = false): AnthropicContentBlock[] | null {
  const blocks: AnthropicContentBlock[] = [];
  for (const [index, call] of calls.entries()) {
    if (!isObject(call) || !isObject(call['function'])) return null;
    const { name, arguments: args } = call['function'];
    if (typeof name !== 'string') return null;
    const text = typeof args === 'string' ? args.trim() : '';
    let input: unknown;
    if (text === '') input = {};
    else if (cut && index === calls.length - 1) input = parsePartialJson(text) ?? {};
    else {
      try {
        input = JSON.parse(text);
      } catch {
        return null;
      }
    }
    if (!isObject(input)) return null;
    blocks.push({ type: 'tool_use', id: typeof call['id'] === 'string' ? call['id'] : `toolu_${blocks.length}`, name, input });
  }
  return blocks;
}

function problem<T>(param: string, message: string): Result<T> {
  return { ok: false, problem: { param, message } };
}
