// A chat completion as OpenAI's published schema requires it (CreateChatCompletionResponse):
// every choice carries `logprobs`, null when none were asked for; its message carries `refusal`,
// null since a local model's refusal is its text; a `logprobs` object carries `refusal` beside
// `content`. Neither engine writes those nulls (llama-server b1-80fb11a leaves out all three, the
// embedded engine `refusal`), and clients generated from that schema read an answer without a
// required field as malformed, whichever engine served it. Streamed chunks need none of them.
// Pure.
import type { AnswerShape } from '../engine/upstream.js';
import { isObject } from '../../common/is-object.js';

/**
 * `json`, an engine's chat completion, with the nulls the schema requires and the engine left
 * out; `json` as it came when it is not a chat completion (an answer the router does not
 * understand is the engine's to give).
 */
export function withRequiredNulls(json: string): string {
  let answer: unknown;
  try {
    answer = JSON.parse(json);
  } catch {
    return json;
  }
  if (!isObject(answer) || !Array.isArray(answer['choices'])) return json;
  let added = false;
  const choices = answer['choices'].map((choice: unknown) => {
    if (!isObject(choice)) return choice;
    const message = choice['message'];
    const logprobs = choice['logprobs'];
    const completed: Record<string, unknown> = {
      ...choice,
      ...(logprobs === undefined ? { logprobs: null } : {}),
      ...(isObject(logprobs) && logprobs['refusal'] === undefined ? { logprobs: { ...logprobs, refusal: null } } : {}),
      ...(isObject(message) && message['refusal'] === undefined ? { message: { ...message, refusal: null } } : {}),
    };
    added ||= Object.keys(completed).some((key) => completed[key] !== choice[key]);
    return completed;
  });
  return added ? JSON.stringify({ ...answer, choices }) : json;
}

/** `shape` with every successful JSON answer completed by withRequiredNulls, before its own transform (a fallback's rename). */
export function completingChatAnswers(shape: AnswerShape): AnswerShape {
  const then = shape.json;
  return { ...shape, json: (text) => (then === null ? withRequiredNulls(text) : then(withRequiredNulls(text))) };
}
