// Token log probabilities end to end: the official `openai` client against the real daemon
// (`llmtray serve --demo`), its router and its real embedded engine on demo-tiny. The router
// passes the fields to the engine (the field table says honoured) and the answers back, whole
// and streamed, in OpenAI's published shape.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { fileDaemon } from '../support/file-daemon.js';
import { expectSchema, expectTokenLogprobs, type ChatTokenLogprob } from '../support/openai-logprobs.js';

const live = fileDaemon();

const MESSAGES = [{ role: 'user' as const, content: 'say something' }];

describe('logprobs through the daemon on the embedded engine', () => {
  it('answers a chat with logprobs and top_logprobs, each token’s text the answer’s own', async () => {
    const r = await live.client.chat.completions.create({ model: 'tiny', messages: MESSAGES, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 4 });
    expect(r.model).toBe('demo-tiny');
    const choice = r.choices[0];
    expectSchema('chat', choice?.logprobs);
    const tokens = (choice?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(tokens).toHaveLength(10);
    expect(tokens.map((t) => t.token).join('')).toBe(choice?.message.content);
    expectTokenLogprobs(tokens, 4, true);
  });

  it('streams a chat with each delta’s tokens on its chunk', async () => {
    const stream = await live.client.chat.completions.create({ model: 'tiny', messages: MESSAGES, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 2, stream: true });
    let text = '';
    const streamed: ChatTokenLogprob[] = [];
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice === undefined || !choice.delta.content) continue;
      expectSchema('chatStream', choice.logprobs);
      const tokens = (choice.logprobs?.content ?? []) as ChatTokenLogprob[];
      expect(tokens.map((t) => t.token).join('')).toBe(choice.delta.content);
      text += choice.delta.content;
      streamed.push(...tokens);
    }
    expect(streamed).toHaveLength(10);
    expect(streamed.map((t) => t.token).join('')).toBe(text);
    expectTokenLogprobs(streamed, 2, true);
  });

  it('answers legacy completions with logprobs: 2', async () => {
    const r = await live.client.completions.create({ model: 'tiny', prompt: 'Once upon a time', max_tokens: 6, temperature: 0, logprobs: 2 });
    const choice = r.choices[0];
    expectSchema('completions', choice?.logprobs);
    const lp = choice?.logprobs;
    expect(lp?.tokens).toHaveLength(6);
    expect(lp?.tokens?.join('')).toBe(choice?.text);
    lp?.tokens?.forEach((token, i) => {
      const logprob = lp.token_logprobs?.[i] ?? Number.NaN;
      expect(logprob).toBeLessThanOrEqual(0);
      expect(lp.top_logprobs?.[i]?.[token]).toBe(logprob);
    });
  });
});
