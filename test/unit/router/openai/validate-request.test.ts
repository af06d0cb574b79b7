import { describe, expect, it } from 'vitest';
import { parseRequest, type OpenAIEndpoint } from '../../../../core/router/openai/validate-request.js';

const raw = (value: unknown): Buffer => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
const hello = [{ role: 'user', content: 'hi' }];

describe('parseRequest', () => {
  it('accepts a minimal request for each endpoint and returns its model', () => {
    const cases: [OpenAIEndpoint, unknown][] = [
      ['chat.completions', { model: 'm', messages: hello }],
      ['completions', { model: 'm', prompt: 'once' }],
      ['embeddings', { model: 'm', input: ['a', 'b'] }],
    ];
    for (const [endpoint, body] of cases) {
      const parsed = parseRequest(endpoint, raw(body));
      expect(parsed).toMatchObject({ ok: true, model: 'm' });
    }
  });

  it('accepts null for optional fields and carries unknown fields through', () => {
    const parsed = parseRequest('chat.completions', raw({ model: 'm', messages: hello, max_tokens: null, stream: null, mirostat: 2 }));
    expect(parsed.ok && parsed.body['mirostat']).toBe(2);
  });

  it.each<[OpenAIEndpoint, unknown, string | null]>([
    ['chat.completions', '{"model":', null],
    ['chat.completions', '[1,2]', null],
    ['chat.completions', '"text"', null],
    ['chat.completions', { messages: hello }, 'model'],
    ['chat.completions', { model: '', messages: hello }, 'model'],
    ['chat.completions', { model: 7, messages: hello }, 'model'],
    ['chat.completions', { model: 'm' }, 'messages'],
    ['chat.completions', { model: 'm', messages: [] }, 'messages'],
    ['chat.completions', { model: 'm', messages: { role: 'user' } }, 'messages'],
    ['chat.completions', { model: 'm', messages: [hello[0], 'hi'] }, 'messages[1]'],
    ['chat.completions', { model: 'm', messages: [{ role: 3 }] }, 'messages[0].role'],
    ['chat.completions', { model: 'm', messages: hello, stream: 'true' }, 'stream'],
    ['chat.completions', { model: 'm', messages: hello, stream_options: true }, 'stream_options'],
    ['chat.completions', { model: 'm', messages: hello, max_tokens: -1 }, 'max_tokens'],
    ['chat.completions', { model: 'm', messages: hello, max_completion_tokens: 2.5 }, 'max_completion_tokens'],
    ['chat.completions', { model: 'm', messages: hello, n: '2' }, 'n'],
    ['chat.completions', { model: 'm', messages: hello, top_p: 'high' }, 'top_p'],
    ['completions', { model: 'm' }, 'prompt'],
    ['completions', { model: 'm', prompt: 5 }, 'prompt'],
    ['completions', { model: 'm', prompt: 'p', max_tokens: 0 }, 'max_tokens'],
    ['embeddings', { model: 'm', input: [] }, 'input'],
    ['embeddings', { model: 'm', input: 'x', dimensions: 0 }, 'dimensions'],
  ])('%s %j is refused naming %s', (endpoint, body, param) => {
    const parsed = parseRequest(endpoint, raw(body));
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.error).toMatchObject({ status: 400, source: 'router', type: 'invalid_request_error', param });
    if (param !== null) expect(parsed.error.message).toContain(param);
  });

  it('says what the wrong value was', () => {
    const parsed = parseRequest('chat.completions', raw({ model: 'm', messages: hello, max_tokens: 0 }));
    expect(!parsed.ok && parsed.error.message).toBe("'max_tokens' must be a positive integer; got number 0.");
  });
});
