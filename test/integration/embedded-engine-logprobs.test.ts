// Token log probabilities from the embedded engine as a real process on a generated model,
// through the openai SDK: chat's `logprobs` + `top_logprobs` and legacy completions'
// `logprobs: N`, whole and streamed, in OpenAI's published shape, each token's text the
// answer's own and its numbers what a probability's log must be.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portOf, startEngine, stopEngine, type Engine } from '../support/embedded-engine-process.js';
import { expectSchema, expectTokenLogprobs, type ChatTokenLogprob } from '../support/openai-logprobs.js';
import { tinyModel } from '../support/test-models.js';

const KEY = 'test-key-logprobs';
const MESSAGES = [{ role: 'user' as const, content: 'count with me' }];

describe('embedded engine: logprobs', () => {
  let engine: Engine;
  let base: string;
  let client: OpenAI;

  beforeAll(async () => {
    engine = startEngine(['-m', await tinyModel(), '-c', '2048', '-np', '1', '-t', '1', '--port', '0', '--api-key', KEY, '--alias', 'tiny']);
    base = `http://127.0.0.1:${await portOf(engine)}`;
    await engine.waitFor(/srv {2}llama_server: model loaded/);
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
  });

  afterAll(async () => {
    if (engine) await stopEngine(engine);
  });

  const post = (path: string, body: unknown) =>
    fetch(`${base}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

  it('gives every token of a chat answer with its log probability and the 5 likeliest, in OpenAI’s shape', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: MESSAGES, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 5 });
    const choice = r.choices[0];
    expectSchema('chat', choice?.logprobs);
    const tokens = (choice?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(tokens).toHaveLength(r.usage?.completion_tokens ?? -1);
    expect(tokens.map((t) => t.token).join('')).toBe(choice?.message.content);
    expectTokenLogprobs(tokens, 5, true);
    for (const t of tokens) expect(t.top_logprobs).toHaveLength(5);
    expect(choice?.logprobs?.refusal).toBeNull();
  });

  it('lists the model’s distribution under greedy sampling, not the sampler’s cut (top_k does not shorten it)', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: MESSAGES, max_tokens: 4, temperature: 0, top_k: 2, logprobs: true, top_logprobs: 20 } as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const tokens = (r.choices[0]?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(tokens).toHaveLength(4);
    for (const t of tokens) {
      expect(t.top_logprobs).toHaveLength(20);
      const mass = t.top_logprobs.reduce((sum, a) => sum + Math.exp(a.logprob), 0);
      expect(mass).toBeLessThanOrEqual(1 + 1e-6);
    }
    expectTokenLogprobs(tokens, 20, true);
  });

  it('streams each delta with the log probabilities of its own tokens, the same as the whole answer', async () => {
    const request = { model: 'tiny', messages: MESSAGES, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 3 } as const;
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true });
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
    expect(text).toBe(whole.choices[0]?.message.content);
    const wholeTokens = (whole.choices[0]?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(streamed.map((t) => t.token)).toEqual(wholeTokens.map((t) => t.token));
    streamed.forEach((t, i) => expect(t.logprob).toBeCloseTo(wholeTokens[i]?.logprob ?? Number.NaN, 6));
    expectTokenLogprobs(streamed, 3, true);
  });

  it('samples the same text with logprobs as without, at temperature > 0, and the drawn token’s logprob is a log probability', async () => {
    const request = { model: 'tiny', messages: MESSAGES, max_tokens: 16, temperature: 1, seed: 42 };
    const plain = await client.chat.completions.create(request);
    const withLogprobs = await client.chat.completions.create({ ...request, logprobs: true, top_logprobs: 4 });
    const content = withLogprobs.choices[0]?.message.content;
    expect(content).toBe(plain.choices[0]?.message.content);
    const tokens = (withLogprobs.choices[0]?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(tokens.map((t) => t.token).join('')).toBe(content);
    expectTokenLogprobs(tokens, 4, false);
  });

  it('ends the tokens where a stop string ends the text', async () => {
    const request = { model: 'tiny', messages: MESSAGES, max_tokens: 12, temperature: 0, logprobs: true, top_logprobs: 2 } as const;
    const free = (await client.chat.completions.create(request)).choices[0]?.message.content ?? '';
    // A stop string the greedy answer meets halfway: the answer ends before it, and so do its tokens.
    const stop = free.slice(6, 8);
    const cut = await client.chat.completions.create({ ...request, stop });
    const content = cut.choices[0]?.message.content ?? '';
    expect(content).toBe(free.slice(0, free.indexOf(stop)));
    const tokens = (cut.choices[0]?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(tokens.map((t) => t.token).join('')).toBe(content);
    expectTokenLogprobs(tokens, 2, true);
  });

  it('gives logprobs: true with no alternatives as empty top_logprobs lists', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: MESSAGES, max_tokens: 5, temperature: 0, logprobs: true });
    expectSchema('chat', r.choices[0]?.logprobs);
    const tokens = (r.choices[0]?.logprobs?.content ?? []) as ChatTokenLogprob[];
    expect(tokens.map((t) => t.token).join('')).toBe(r.choices[0]?.message.content);
    for (const t of tokens) expect(t.top_logprobs).toEqual([]);
    expectTokenLogprobs(tokens, 0, true);
  });

  it('answers legacy completions’ logprobs: N with tokens, their logprobs, the N likeliest and text offsets, whole and streamed', async () => {
    const request = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 10, temperature: 0, logprobs: 3 };
    const whole = await client.completions.create(request);
    const choice = whole.choices[0];
    expectSchema('completions', choice?.logprobs);
    const lp = choice?.logprobs;
    const tokens = lp?.tokens ?? [];
    expect(tokens).toHaveLength(10);
    expect(tokens.join('')).toBe(choice?.text);
    // Each offset is where its token starts in the text.
    let at = 0;
    tokens.forEach((token, i) => {
      expect(lp?.text_offset?.[i]).toBe(at);
      at += [...token].length;
    });
    tokens.forEach((token, i) => {
      const logprob = lp?.token_logprobs?.[i] ?? Number.NaN;
      expect(logprob).toBeLessThanOrEqual(0);
      const top = lp?.top_logprobs?.[i] ?? {};
      expect(Object.keys(top).length).toBeGreaterThan(0);
      expect(Object.keys(top).length).toBeLessThanOrEqual(3);
      // Greedy: the chosen token is the likeliest.
      expect(top[token]).toBe(logprob);
      expect(Math.max(...Object.values(top))).toBe(logprob);
    });

    const stream = await client.completions.create({ ...request, stream: true });
    const streamedTokens: string[] = [];
    const streamedOffsets: number[] = [];
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c === undefined || c.text === '') continue;
      expectSchema('completions', c.logprobs);
      expect(c.logprobs?.tokens?.join('')).toBe(c.text);
      streamedTokens.push(...(c.logprobs?.tokens ?? []));
      streamedOffsets.push(...(c.logprobs?.text_offset ?? []));
    }
    expect(streamedTokens).toEqual(tokens);
    expect(streamedOffsets).toEqual(lp?.text_offset);
  });

  it.each([
    ['chat top_logprobs above 20', '/v1/chat/completions', { messages: MESSAGES, logprobs: true, top_logprobs: 21 }, 'top_logprobs'],
    ['chat top_logprobs without logprobs', '/v1/chat/completions', { messages: MESSAGES, top_logprobs: 3 }, 'top_logprobs'],
    ['chat logprobs that is not a boolean', '/v1/chat/completions', { messages: MESSAGES, logprobs: 3 }, 'logprobs'],
    ['completions logprobs above 5', '/v1/completions', { prompt: 'abc', logprobs: 6 }, 'logprobs'],
  ])('refuses %s by name', async (_what, path, body, param) => {
    const r = await post(path, { max_tokens: 2, ...body });
    expect(r.status).toBe(400);
    const error = ((await r.json()) as { error: { param: string; type: string } }).error;
    expect(error.param).toBe(param);
    expect(error.type).toBe('invalid_request_error');
  });
});
