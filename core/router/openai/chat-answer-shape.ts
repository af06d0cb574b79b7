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
  // Completed in place: the parse is this call's own, and every non-streamed chat answer passes
  // here, so a copy of each choice and message was allocation on the request path for nothing
  // (issue 41). A field added in place lands last, where a spread copy put it.
  let added = false;
  for (const choice of answer['choices'] as unknown[]) {
    if (!isObject(choice)) continue;
    const message = choice['message'];
    const logprobs = choice['logprobs'];
    if (logprobs === undefined) {
      choice['logprobs'] = null;
      added = true;
    } else if (isObject(logprobs) && logprobs['refusal'] === undefined) {
      logprobs['refusal'] = null;
      added = true;
    }
    if (isObject(message) && message['refusal'] === undefined) {
      message['refusal'] = null;
      added = true;
    }
  }
  return added ? JSON.stringify(answer) : json;
}

/** `shape` with every successful JSON answer completed by withRequiredNulls, before its own transform (a fallback's rename). */
export function completingChatAnswers(shape: AnswerShape): AnswerShape {
  const then = shape.json;
  return { ...shape, json: (text) => (then === null ? withRequiredNulls(text) : then(withRequiredNulls(text))) };
}
