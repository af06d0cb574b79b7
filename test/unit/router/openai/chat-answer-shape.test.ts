import { describe, expect, it } from 'vitest';
import { withRequiredNulls } from '../../../../core/router/openai/chat-answer-shape.js';
import { chatCompletionSchemaErrors } from '../../../support/openai-response-schemas.js';

// llama-server b1-80fb11a's answer to a chat completion, as it writes it (timings left out).
const LLAMA_SERVER_ANSWER = {
  choices: [{ finish_reason: 'length', index: 0, message: { role: 'assistant', content: 'b!{JY' } }],
  created: 1796287317,
  model: 'tiny',
  system_fingerprint: 'b1-80fb11a',
  object: 'chat.completion',
  usage: { completion_tokens: 5, prompt_tokens: 22, total_tokens: 27 },
  id: 'chatcmpl-FHwgmjkDUCYbAQebaenTrVIWa3gADel4',
};
const TOKEN = { token: 'b', logprob: -0.5, bytes: [98], top_logprobs: [{ token: 'b', logprob: -0.5, bytes: [98] }] };

describe('withRequiredNulls', () => {
  it('gives an engine’s chat completion the nulls OpenAI’s schema requires: the choice’s logprobs, the message’s refusal', () => {
    expect(chatCompletionSchemaErrors(LLAMA_SERVER_ANSWER)).not.toEqual([]);
    const completed = JSON.parse(withRequiredNulls(JSON.stringify(LLAMA_SERVER_ANSWER))) as typeof LLAMA_SERVER_ANSWER;
    expect(chatCompletionSchemaErrors(completed)).toEqual([]);
    expect(completed.choices[0]).toEqual({ ...LLAMA_SERVER_ANSWER.choices[0], logprobs: null, message: { role: 'assistant', content: 'b!{JY', refusal: null } });
  });

  it('adds refusal beside the content of logprobs, and keeps what is there', () => {
    const answer = { ...LLAMA_SERVER_ANSWER, choices: [{ ...LLAMA_SERVER_ANSWER.choices[0], logprobs: { content: [TOKEN] } }] };
    const completed = JSON.parse(withRequiredNulls(JSON.stringify(answer))) as { choices: { logprobs: unknown }[] };
    expect(completed.choices[0]?.logprobs).toEqual({ content: [TOKEN], refusal: null });
    expect(chatCompletionSchemaErrors(completed)).toEqual([]);
  });

  it('adds each null last in its own object and leaves every other byte as the engine wrote it', () => {
    const engine = '{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"y"},"finish_reason":"length"},{"index":1,"message":{"role":"assistant","content":"z"},"logprobs":{"content":[]}}],"usage":{"prompt_tokens":3}}';
    expect(withRequiredNulls(engine)).toBe(
      '{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"y","refusal":null},"finish_reason":"length","logprobs":null},{"index":1,"message":{"role":"assistant","content":"z","refusal":null},"logprobs":{"content":[],"refusal":null}}],"usage":{"prompt_tokens":3}}',
    );
  });

  it('leaves an answer that has them, and one that is no chat completion, byte for byte', () => {
    const whole = JSON.stringify({ ...LLAMA_SERVER_ANSWER, choices: [{ ...LLAMA_SERVER_ANSWER.choices[0], logprobs: null, message: { role: 'assistant', content: 'x', refusal: null } }] });
    expect(withRequiredNulls(whole)).toBe(whole);
    for (const other of ['not json', '{"object":"list","data":[]}', '[1,2]']) expect(withRequiredNulls(other)).toBe(other);
  });
});
