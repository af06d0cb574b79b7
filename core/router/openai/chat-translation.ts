// What every translation into OpenAI's chat API and back shares (anthropic/translate.ts,
// responses/translate.ts): its result, the chat API's tool shapes a request is said in, and the
// engine's (non-streamed) chat completion read once to be re-told in the other API's shape.
//
// Why here and not in one translator: each other API is said in the chat API's words, so the
// words are the chat API's (this folder's); a translator that took them from another translator
// would tie two protocols that have nothing to say to each other.
import { isObject } from '../../common/is-object.js';
import type { RouterError } from '../http/errors.js';

/** A translation's result: the request or answer in the other API's words, or the refusal that says why it cannot be. */
export type Translated<T> = { ok: true; value: T } | { ok: false; error: RouterError };

export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters: unknown };
}

export type ChatToolChoice = 'auto' | 'required' | 'none' | { type: 'function'; function: { name: string } };

export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatCompletionAnswer {
  completion: Record<string, unknown>;
  choice: Record<string, unknown>;
  message: Record<string, unknown>;
}

/** The completion and its first choice's message, or null when the text is not a chat completion. */
export function readChatCompletion(text: string): ChatCompletionAnswer | null {
  let completion: unknown;
  try {
    completion = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(completion) || !Array.isArray(completion['choices'])) return null;
  const choice: unknown = completion['choices'][0];
  if (!isObject(choice) || !isObject(choice['message'])) return null;
  return { completion, choice, message: choice['message'] };
}
