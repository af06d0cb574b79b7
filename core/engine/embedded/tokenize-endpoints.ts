// POST /tokenize and POST /apply-template, in llama-server's shapes.
//
// Why an engine needs them: the router answers Anthropic's `count_tokens` for engines that do
// not serve it by rendering the chat messages with the model's template (/apply-template) and
// tokenizing the result as a prompt (/tokenize with add_special), as llama-server's own
// count_tokens does inside. The rendering is the chat prompt a chat completion evaluates
// (chat-prompt.ts) written out with its special tokens as text, so that tokenizing it with
// special tokens parsed gives that prompt's tokens back, and the count is the prompt_tokens a
// chat completion of the same messages reports. `with_pieces` (each token's text) is refused:
// a SentencePiece token's piece alone loses its word-start space, and a wrong piece is worse
// than a clear "not here".
import type { ServerResponse } from 'node:http';
import type { Token } from 'node-llama-cpp';
import { chatPromptText } from './openai/chat-prompt.js';
import { offeredFunctions, readToolRequest } from './openai/tool-calls.js';
import type { CompletionEngine } from './completion-handlers.js';
import { badRequest } from './http-error.js';
import { asObject, readChatMessages } from './openai/openai-requests.js';

/**
 * `{ content, add_special = false, parse_special = true }` → `{ tokens: [id, …] }`. `content` is
 * a string, or an array mixing strings and token ids (llama-server's "mixed" prompt).
 * add_special prepends the beginning-of-sequence token where the model's vocabulary wants one.
 */
export function handleTokenize(engine: CompletionEngine, raw: unknown, res: ServerResponse): void {
  const body = asObject(raw);
  const addSpecial = flag(body, 'add_special', false);
  const parseSpecial = flag(body, 'parse_special', true);
  if (flag(body, 'with_pieces', false)) throw badRequest("'with_pieces' is not supported by this engine: it answers token ids only");
  const { model } = engine;
  const parts = typeof body['content'] === 'string' ? [body['content']] : body['content'];
  if (!Array.isArray(parts) || !parts.every((p) => typeof p === 'string' || (Number.isSafeInteger(p) && (p as number) >= 0))) {
    throw badRequest("'content' must be a string, or an array of strings and token ids");
  }
  const tokens: Token[] = parts.flatMap((part: string | number) => (typeof part === 'string' ? model.tokenize(part, parseSpecial) : [part as Token]));
  if (addSpecial && model.tokens.shouldPrependBosToken && model.tokens.bos !== null && tokens[0] !== model.tokens.bos) tokens.unshift(model.tokens.bos);
  sendJson(res, { tokens });
}

/**
 * `{ messages, tools?, tool_choice? }` → `{ prompt }`: the chat prompt the model would be given,
 * its special tokens written out, the tools declared in it as a chat completion declares them.
 */
export function handleApplyTemplate(engine: CompletionEngine, raw: unknown, res: ServerResponse): void {
  const body = asObject(raw);
  const tools = readToolRequest(body);
  const functions = tools === undefined ? undefined : offeredFunctions(tools);
  sendJson(res, { prompt: chatPromptText(engine.model, engine.chatWrapper, readChatMessages(body), functions) });
}

function flag(body: Record<string, unknown>, name: string, fallback: boolean): boolean {
  const value = body[name];
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'boolean') throw badRequest(`'${name}' must be true or false, got ${JSON.stringify(value)}`);
  return value;
}

function sendJson(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}
