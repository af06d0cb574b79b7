// An engine's (non-streamed) chat completion, read once for the translators that re-tell it in
// another API's shape (anthropic-translate.ts, responses-translate.ts): the completion and its
// first choice's message, or null when the text is not a chat completion.
import { isObject } from '../common/is-object.js';

export interface ChatCompletionAnswer {
  completion: Record<string, unknown>;
  choice: Record<string, unknown>;
  message: Record<string, unknown>;
}

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
