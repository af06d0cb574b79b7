import { describe, expect, it } from 'vitest';
import { parseCountTokensRequest, parseMessagesRequest } from '../../../../core/router/anthropic/request.js';

const raw = (value: unknown): Buffer => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
const hello = [{ role: 'user', content: 'hi' }];
const valid = { model: 'm', max_tokens: 16, messages: hello };

describe('parseMessagesRequest', () => {
  it('accepts Anthropic’s request shapes and carries unknown fields through for an engine that serves the API', () => {
    const parsed = parseMessagesRequest(
      raw({
        ...valid,
        system: [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'look' }, { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] },
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: 'and?' },
        ],
        stop_sequences: ['END'],
        temperature: 0.5,
        top_p: 0.9,
        top_k: 0,
        stream: true,
        metadata: { user_id: 'u' },
        tools: [{ name: 'read', input_schema: { type: 'object' } }],
      }),
    );
    expect(parsed).toMatchObject({ ok: true, model: 'm' });
    expect(parsed.ok && parsed.body['tools']).toEqual([{ name: 'read', input_schema: { type: 'object' } }]);
  });

  it.each<[string, unknown, string | null, string]>([
    ['broken JSON', '{"model":', null, 'not valid JSON'],
    ['no model', { max_tokens: 16, messages: hello }, 'model', "no 'model'"],
    ['no max_tokens, which the API requires', { model: 'm', messages: hello }, 'max_tokens', "no 'max_tokens', which the Messages API (POST /v1/messages) requires"],
    ['a max_tokens of 0', { ...valid, max_tokens: 0 }, 'max_tokens', 'a positive integer'],
    ['no messages', { model: 'm', max_tokens: 16 }, 'messages', "no 'messages'"],
    ['empty messages', { ...valid, messages: [] }, 'messages', 'non-empty array'],
    ['a system role among the messages', { ...valid, messages: [{ role: 'system', content: 'S' }] }, 'messages[0].role', "top-level 'system'"],
    ['a message without content', { ...valid, messages: [{ role: 'user' }] }, 'messages[0].content', "no 'content'"],
    ['content that is a number', { ...valid, messages: [{ role: 'user', content: 5 }] }, 'messages[0].content', 'a string or an array of content blocks'],
    ['a block without a type', { ...valid, messages: [{ role: 'user', content: [{ text: 'x' }] }] }, 'messages[0].content[0]', "a 'type'"],
    ['a text block without text', { ...valid, messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages[0].content[0].text', 'must be a string'],
    ['a system prompt of images', { ...valid, system: [{ type: 'image' }] }, 'system', 'text blocks'],
    ['stop_sequences as a string', { ...valid, stop_sequences: 'END' }, 'stop_sequences', 'an array of strings'],
    ['a temperature in words', { ...valid, temperature: 'hot' }, 'temperature', 'a number'],
    ['a fractional top_k', { ...valid, top_k: 1.5 }, 'top_k', 'a non-negative integer'],
    ['stream as a string', { ...valid, stream: 'yes' }, 'stream', 'a boolean'],
  ])('refuses %s with a 400 naming the field', (_what, body, param, said) => {
    const parsed = parseMessagesRequest(raw(body));
    if (parsed.ok) throw new Error('expected a refusal');
    expect(parsed.error).toMatchObject({ status: 400, source: 'router', type: 'invalid_request_error', param });
    expect(parsed.error.message).toContain(said);
  });
});

describe('parseCountTokensRequest', () => {
  it('needs the prompt only: no max_tokens', () => {
    expect(parseCountTokensRequest(raw({ model: 'm', messages: hello, system: 'S' }))).toMatchObject({ ok: true, model: 'm' });
  });

  it('checks the prompt as the Messages API does', () => {
    const parsed = parseCountTokensRequest(raw({ model: 'm', messages: [{ role: 'tool', content: 'x' }] }));
    expect(parsed.ok ? null : parsed.error.param).toBe('messages[0].role');
  });
});
