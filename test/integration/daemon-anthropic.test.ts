// `llmtray serve --demo` as a Claude-style tool uses it: the official `@anthropic-ai/sdk` client
// against the real daemon process, its real embedded engines and the generated demo models.
// The embedded engine speaks only chat completions, so every request here crosses the router's
// translation both ways, and every count comes from the engine's own template and tokenizer.
//
// One daemon for the file, so the tests run in order: demo-tiny answers (loaded on demand),
// streams, counts and honours the settings; then demo-chat is swapped in for it; then the
// refusals, demo-broken's quarantine last (it would otherwise be what the others wait behind).
import Anthropic, { APIError, BadRequestError, NotFoundError, ServiceUnavailableError } from '@anthropic-ai/sdk';
import { beforeAll, describe, expect, it } from 'vitest';
import { fileDaemon } from '../support/file-daemon.js';

const live = fileDaemon();

let client: Anthropic;

beforeAll(async () => {
  // Anthropic's SDKs add /v1/messages to the base URL themselves.
  client = new Anthropic({ baseURL: live.daemon.origin, apiKey: 'any-key-works', maxRetries: 0 });
});

/**
 * Greedy settings: the same prompt gives the same text, so a stream can be compared with a whole
 * answer. The SDK's types no longer list `temperature`; it sends it all the same.
 */
function greedy(request: Anthropic.MessageCreateParamsNonStreaming): Anthropic.MessageCreateParamsNonStreaming {
  return { ...request, temperature: 0 } as Anthropic.MessageCreateParamsNonStreaming;
}

const textOf = (message: Anthropic.Message): string => message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');

describe('demo-tiny through the Messages API', () => {
  it('loads demo-tiny on the first message, by its alias, and answers in Anthropic’s shape', async () => {
    expect((await live.daemon.model('demo-tiny')).upstream).toBeNull();
    const { data, response } = await client.messages.create({ model: 'tiny', max_tokens: 8, system: 'Be brief.', messages: [{ role: 'user', content: 'Say hello.' }] }).withResponse();
    expect(data).toMatchObject({ type: 'message', role: 'assistant', model: 'demo-tiny', stop_reason: 'max_tokens' });
    expect(textOf(data).length).toBeGreaterThan(0);
    expect(data.usage.output_tokens).toBe(8);
    expect(data.usage.input_tokens).toBeGreaterThan(0);
    expect(response.headers.get('x-llmtray-served-by')).toBe('demo-tiny');
    expect((await live.daemon.model('demo-tiny')).upstream?.pid).toBeGreaterThan(0);
  });

  it('streams the same text as the whole answer, in Anthropic’s event sequence', async () => {
    const request = greedy({ model: 'demo-tiny', max_tokens: 24, messages: [{ role: 'user', content: 'Stream please.' }] });
    const whole = await client.messages.create(request);
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ ...request, stream: true })) events.push(event);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('message_start');
    expect(types.slice(-3)).toEqual(['content_block_stop', 'message_delta', 'message_stop']);
    expect(types.filter((t) => t === 'content_block_delta').length).toBeGreaterThan(1);
    const text = events.map((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '')).join('');
    expect(text).toBe(textOf(whole));
    expect(events[0]).toMatchObject({ message: { model: 'demo-tiny' } });
    const delta = events.find((e) => e.type === 'message_delta');
    expect(delta).toMatchObject({ delta: { stop_reason: 'max_tokens' }, usage: { output_tokens: 24 } });
    // The same prompt again: its tokens now come from the slot's cache, which Anthropic's usage counts apart from input_tokens.
    expect(delta?.type === 'message_delta' && promptTokens(delta.usage)).toBe(promptTokens(whole.usage));
  });

  it('counts a prompt as the model pays for it: count_tokens equals the input_tokens of a message with that prompt', async () => {
    const prompts: Anthropic.MessageCountTokensParams[] = [
      { model: 'tiny', messages: [{ role: 'user', content: 'hi' }] },
      {
        model: 'tiny',
        system: [{ type: 'text', text: 'You are terse.' }, { type: 'text', text: 'Answer in one word.' }],
        messages: [
          { role: 'user', content: 'What is 2+2? é 🎉' },
          { role: 'assistant', content: 'Four.' },
          { role: 'user', content: [{ type: 'text', text: 'And ' }, { type: 'text', text: '3+3?' }] },
        ],
      },
    ];
    const counts: number[] = [];
    for (const prompt of prompts) {
      const counted = await client.messages.countTokens(prompt);
      const answered = await client.messages.create({ ...prompt, max_tokens: 1 } as Anthropic.MessageCreateParamsNonStreaming);
      // A prefix already in the engine's cache is counted as cache_read_input_tokens, not input_tokens, as Anthropic's API does.
      expect(counted.input_tokens).toBe(promptTokens(answered.usage));
      counts.push(counted.input_tokens);
    }
    expect(counts[1]).toBeGreaterThan(counts[0] ?? Infinity);
  });

  it('honours stop_sequences: the answer ends just before the sequence', async () => {
    const request = greedy({ model: 'demo-tiny', max_tokens: 40, messages: [{ role: 'user', content: 'Once upon a time' }] });
    const free = textOf(await client.messages.create(request));
    expect(free.length).toBeGreaterThan(12);
    const stop = free.slice(8, 10);
    const stopped = await client.messages.create({ ...request, stop_sequences: [stop] });
    expect(textOf(stopped)).toBe(free.slice(0, free.indexOf(stop)));
    // The chat API does not say which stop ended an answer (see core/router/anthropic/translate.ts).
    expect(stopped.stop_reason).toBe('end_turn');
  });
});

describe('demo-chat through the Messages API', () => {
  it('swaps demo-chat in for demo-tiny on demand, and answers and streams from it', async () => {
    const tinyPid = (await live.daemon.model('demo-tiny')).upstream?.pid;
    expect(tinyPid).toBeGreaterThan(0);
    const message = await client.messages.create({ model: 'chat', max_tokens: 6, messages: [{ role: 'user', content: 'Hello, chat.' }] });
    expect(message.model).toBe('demo-chat');
    expect(message.usage.output_tokens).toBe(6);
    expect((await live.daemon.model('demo-tiny')).upstream).toBeNull();

    const final = await client.messages.stream({ model: 'demo-chat', max_tokens: 10, messages: [{ role: 'user', content: 'Count.' }] }).finalMessage();
    expect(final.model).toBe('demo-chat');
    expect(final.stop_reason).toBe('max_tokens');
    expect(textOf(final).length).toBeGreaterThan(0);
    expect(final.usage.output_tokens).toBe(10);
  });
});

describe('refusals in Anthropic’s shape', () => {
  it('refuses a message without max_tokens with a 400 naming it, and an unknown model with 404 naming the models', async () => {
    const missing = await client.messages.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }] } as unknown as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(BadRequestError);
    expect((missing as BadRequestError).apiMessage).toContain("'max_tokens'");

    const unknown = await client.messages.create({ model: 'claude-sonnet', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as NotFoundError).type).toBe('not_found_error');
    for (const id of ['demo-chat', 'demo-tiny']) expect((unknown as NotFoundError).apiMessage).toContain(id);
  });

  it('refuses an image for the embedded engine, naming the block, rather than answer without it', async () => {
    const error = await client.messages
      .create({ model: 'chat', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } }] }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).apiMessage).toContain('"image" block');
  });

  it('answers a prompt over the context with the real engine’s refusal in Anthropic’s shape, OpenAI’s code for it as the error code', async () => {
    // demo-chat has 8192 tokens of context; every word is at least one token.
    const long = Array.from({ length: 12_000 }, (_, i) => `w${i}`).join(' ');
    const error = await client.messages.create({ model: 'chat', max_tokens: 4, messages: [{ role: 'user', content: long }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    const api = error as APIError;
    expect(api.type).toBe('invalid_request_error');
    expect(api.errorCode).toBe('context_length_exceeded');
    expect(api.apiMessage).toMatch(/exceeds the available context size/);
  });

  it('refuses demo-broken with 503, its quarantine reason from llama.cpp, and no retry', async () => {
    const error = await client.messages.create({ model: 'demo-broken', max_tokens: 4, messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    const api = error as APIError;
    expect(api.type).toBe('overloaded_error');
    expect(api.errorCode).toBe('model_quarantined');
    expect(api.apiMessage).toContain('not within the file bounds');
    expect(api.headers?.get('x-should-retry')).toBe('false');
  });
});

/** Every token of the prompt, as Anthropic's usage splits them: input_tokens does not count those read from the cache. */
function promptTokens(usage: { input_tokens: number | null; cache_read_input_tokens?: number | null }): number {
  return (usage.input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
}
