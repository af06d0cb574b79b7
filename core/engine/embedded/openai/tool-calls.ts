// `tools`, `tool_choice` and `parallel_tool_calls` of a chat completion, read into what
// node-llama-cpp's function calling takes, and the tool calls of an answer shaped as OpenAI's.
//
// A tool's parameter schema goes through the same keyword check as a response format's
// (response-format.ts): node-llama-cpp builds the grammar that generates a call's arguments
// from it and ignores what it does not know, so an unenforceable keyword (`pattern`,
// `minimum`, …) is refused by name rather than silently produce arguments the client's own
// validator rejects. Pure: no model, no I/O.
import { randomUUID } from 'node:crypto';
import type { ChatModelFunctions, GbnfJsonSchema } from 'node-llama-cpp';
import { badRequest, HttpError } from '../http-error.js';
import { grammarSchema } from './response-format.js';

/**
 * What the model may do with the tools: `auto` calls or answers as it likes, `required` must
 * call one or more, `named` must call that one. `tool_choice: "none"` and an empty `tools`
 * read as no tools at all (undefined).
 */
export type ToolChoice = { kind: 'auto' } | { kind: 'required' } | { kind: 'named'; name: string };

export interface ToolRequest {
  /** Every tool the request declares, by name, as node-llama-cpp's functions. */
  functions: ChatModelFunctions;
  choice: ToolChoice;
  /** Whether the model may make more than one call in its answer (`parallel_tool_calls`, default true). */
  parallel: boolean;
}

/** A call as the answer carries it: OpenAI's `tool_calls[i]`. */
export interface ToolCall {
  id: string;
  name: string;
  /** The arguments as JSON text, as the model wrote them. */
  arguments: string;
}

type Body = Record<string, unknown>;
const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** OpenAI's rule for function names; also keeps a name out of the call grammar's quoting. */
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** A tool's parameter schema as the grammar takes it; a keyword it cannot enforce is a 400 naming the tool's field. */
function parameterSchema(schema: unknown, where: string): Record<string, unknown> {
  try {
    return grammarSchema(schema, '#', where);
  } catch (error) {
    throw error instanceof HttpError ? badRequest(error.message, where) : error;
  }
}

function readFunctions(tools: unknown[]): ChatModelFunctions {
  const functions: Record<string, ChatModelFunctions[string]> = {};
  tools.forEach((tool, i) => {
    const at = `tools[${i}]`;
    if (!isObject(tool) || tool['type'] !== 'function' || !isObject(tool['function'])) {
      throw badRequest(`${at} must be {"type": "function", "function": {...}}: only function tools are supported`, at);
    }
    const fn = tool['function'];
    const name = fn['name'];
    if (typeof name !== 'string' || !FUNCTION_NAME.test(name)) {
      throw badRequest(`${at}.function.name must be 1 to 64 letters, digits, '_' or '-', got ${JSON.stringify(name)}`, `${at}.function.name`);
    }
    if (functions[name] !== undefined) throw badRequest(`${at}: a second tool named '${name}'`, `${at}.function.name`);
    const description = fn['description'];
    if (description !== undefined && typeof description !== 'string') throw badRequest(`${at}.function.description must be a string`, `${at}.function.description`);
    const parameters = fn['parameters'];
    // No parameters, or an object schema without properties: a call without arguments.
    const params = parameters === undefined || parameters === null ? undefined : parameterSchema(parameters, `${at}.function.parameters`);
    functions[name] = { ...(description ? { description } : {}), ...(params ? { params: params as GbnfJsonSchema } : {}) };
  });
  return functions;
}

function readChoice(value: unknown, functions: ChatModelFunctions): ToolChoice | 'none' {
  if (value === undefined || value === null || value === 'auto') return { kind: 'auto' };
  if (value === 'none' || value === 'required') return value === 'none' ? 'none' : { kind: 'required' };
  if (isObject(value) && value['type'] === 'function' && isObject(value['function']) && typeof value['function']['name'] === 'string') {
    const name = value['function']['name'];
    if (functions[name] === undefined) throw badRequest(`'tool_choice' names the function '${name}', which is not among the tools: ${Object.keys(functions).join(', ')}`, 'tool_choice');
    return { kind: 'named', name };
  }
  throw badRequest(`'tool_choice' must be "auto", "none", "required" or {"type": "function", "function": {"name": ...}}, got ${JSON.stringify(value)}`, 'tool_choice');
}

/** The request's tools, or undefined when it declares none or forbids calling them. Throws a 400 naming the field at fault. */
export function readToolRequest(body: Body): ToolRequest | undefined {
  const tools = body['tools'];
  const parallel = body['parallel_tool_calls'];
  if (parallel !== undefined && parallel !== null && typeof parallel !== 'boolean') throw badRequest("'parallel_tool_calls' must be a boolean", 'parallel_tool_calls');
  if (tools === undefined || tools === null || (Array.isArray(tools) && tools.length === 0)) {
    const choice = body['tool_choice'];
    if (choice !== undefined && choice !== null && choice !== 'none' && choice !== 'auto') throw badRequest(`'tool_choice' ${JSON.stringify(choice)} needs 'tools'`, 'tool_choice');
    return undefined;
  }
  if (!Array.isArray(tools)) throw badRequest("'tools' must be an array of function tools", 'tools');
  const functions = readFunctions(tools);
  const choice = readChoice(body['tool_choice'], functions);
  if (choice === 'none') return undefined;
  return { functions, choice, parallel: parallel !== false };
}

/**
 * The functions the model is offered: all of them, or for a named choice that one alone, so the
 * call grammar can produce no other name (and the prompt declares only what may be called).
 */
export function offeredFunctions(tools: ToolRequest): ChatModelFunctions {
  if (tools.choice.kind !== 'named') return tools.functions;
  const name = tools.choice.name;
  return { [name]: tools.functions[name] ?? {} };
}

/** A new call id in OpenAI's form. */
export function toolCallId(): string {
  return `call_${randomUUID().replaceAll('-', '').slice(0, 24)}`;
}

/** The answer's `message.tool_calls`. */
export function toolCallsBody(calls: readonly ToolCall[]): Record<string, unknown>[] {
  return calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }));
}
