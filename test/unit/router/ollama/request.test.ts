import { describe, expect, it } from 'vitest';
import { readOllamaBody, toOllamaGeneration, type OllamaModelFacts } from '../../../../core/router/ollama/request.js';

const FACTS: OllamaModelFacts = { vision: false, contextTokens: 4096 };

function translate(kind: 'chat' | 'generate', body: Record<string, unknown>, facts: OllamaModelFacts = FACTS) {
  const read = readOllamaBody(Buffer.from(JSON.stringify({ model: 'demo-chat', ...body })));
  if (!read.ok) throw new Error(read.error.message);
  return toOllamaGeneration(kind, read.value, facts);
}

function chatOf(kind: 'chat' | 'generate', body: Record<string, unknown>, facts?: OllamaModelFacts): Record<string, unknown> {
  const out = translate(kind, body, facts);
  if (!out.ok) throw new Error(out.error.message);
  return out.value.chat;
}

function refusal(kind: 'chat' | 'generate', body: Record<string, unknown>, facts?: OllamaModelFacts): { param: string | null; message: string; status: number } {
  const out = translate(kind, body, facts);
  if (out.ok) throw new Error('expected a refusal');
  return out.error;
}

describe("Ollama's /api/chat said as a chat completion", () => {
  it('asks the engine to stream with usage, the messages as they are, the options in the chat API’s words', () => {
    const chat = chatOf('chat', {
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      options: { num_predict: 12, temperature: 0.2, top_k: 5, top_p: 0.9, min_p: 0.1, seed: 7, stop: ['\n'], repeat_penalty: 1.1, presence_penalty: 0.5, frequency_penalty: 0.25, num_ctx: 2048 },
    });
    expect(chat).toEqual({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hi' },
      ],
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 12,
      temperature: 0.2,
      top_k: 5,
      top_p: 0.9,
      min_p: 0.1,
      seed: 7,
      stop: ['\n'],
      repeat_penalty: 1.1,
      presence_penalty: 0.5,
      frequency_penalty: 0.25,
    });
  });

  it('streams by default and not with stream false', () => {
    const streamed = translate('chat', { messages: [{ role: 'user', content: 'x' }] });
    const whole = translate('chat', { messages: [{ role: 'user', content: 'x' }], stream: false });
    expect(streamed.ok && streamed.value.stream).toBe(true);
    expect(whole.ok && whole.value.stream).toBe(false);
  });

  it('takes num_predict -1 and -2 as no limit', () => {
    expect(chatOf('chat', { messages: [], options: { num_predict: -1 } })).not.toHaveProperty('max_tokens');
    expect(chatOf('chat', { messages: [], options: { num_predict: -2 } })).not.toHaveProperty('max_tokens');
  });

  it('says format "json" as a JSON object and a schema as json_schema', () => {
    expect(chatOf('chat', { messages: [], format: 'json' })['response_format']).toEqual({ type: 'json_object' });
    const schema = { type: 'object', properties: { a: { type: 'number' } }, required: ['a'] };
    expect(chatOf('chat', { messages: [], format: schema })['response_format']).toEqual({ type: 'json_schema', json_schema: { name: 'format', schema, strict: true } });
  });

  it("carries tools, an assistant's tool calls (arguments as JSON) and the tool's result as the answer to that call", () => {
    const chat = chatOf('chat', {
      tools: [{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }],
      messages: [
        { role: 'user', content: 'weather in Paris?' },
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'get_weather', arguments: { city: 'Paris' } } }] },
        { role: 'tool', tool_name: 'get_weather', content: '12 C' },
      ],
    });
    expect(chat['tools']).toEqual([{ type: 'function', function: { name: 'get_weather', description: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }]);
    expect(chat['messages']).toEqual([
      { role: 'user', content: 'weather in Paris?' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_1_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_1_0', content: '12 C' },
    ]);
  });

  it("honours the fields ollama-ai-provider-v2 sends beside Ollama's, options winning", () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }];
    const chat = chatOf('chat', { messages: [], temperature: 0.3, top_p: 0.8, max_output_tokens: 40, tools, tool_choice: { type: 'function', name: 'f' }, options: { temperature: 0 } });
    expect(chat).toMatchObject({ temperature: 0, top_p: 0.8, max_tokens: 40, tool_choice: { type: 'function', function: { name: 'f' } } });
    expect(chatOf('chat', { messages: [], tools, tool_choice: 'required' })['tool_choice']).toBe('required');
    expect(refusal('chat', { messages: [], tool_choice: 'required' }).param).toBe('tool_choice');
  });

  it("asks for the tokens' log-probabilities as the chat API does, alternatives only with them", () => {
    expect(chatOf('chat', { messages: [], logprobs: true, top_logprobs: 3 })).toMatchObject({ logprobs: true, top_logprobs: 3 });
    expect(chatOf('chat', { messages: [], logprobs: false })).not.toHaveProperty('logprobs');
    expect(refusal('chat', { messages: [], top_logprobs: 3 }).param).toBe('top_logprobs');
    expect(refusal('chat', { messages: [], logprobs: true, top_logprobs: 21 }).param).toBe('top_logprobs');
  });

  it('refuses a tool result that answers no call, by name', () => {
    expect(refusal('chat', { messages: [{ role: 'tool', tool_name: 'x', content: '1' }] }).param).toBe('messages[0]');
  });

  it('refuses images for a model that cannot see them, naming the field; carries them as image parts for one that can', () => {
    const images = ['iVBORw0KGgo='];
    const refused = refusal('chat', { messages: [{ role: 'user', content: 'what is this', images }] });
    expect(refused.param).toBe('messages[0].images');
    expect(refused.message).toContain('vision');
    const chat = chatOf('chat', { messages: [{ role: 'user', content: 'what is this', images }] }, { vision: true, contextTokens: 4096 });
    expect(chat['messages']).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] },
    ]);
  });

  it('refuses every option it does not map, by name', () => {
    for (const option of ['mirostat_tau', 'num_gpu', 'typical_p', 'num_thread', 'a_new_option']) {
      const refused = refusal('chat', { messages: [], options: { [option]: 1 } });
      expect(refused.param).toBe(`options.${option}`);
      expect(refused.status).toBe(400);
    }
  });

  it('takes an option set to what asks for nothing (mirostat 0, nulls)', () => {
    expect(translate('chat', { messages: [], options: { mirostat: 0, num_gpu: null } }).ok).toBe(true);
  });

  it("refuses num_ctx above the model's context, naming the config's ctx", () => {
    const refused = refusal('chat', { messages: [], options: { num_ctx: 8192 } });
    expect(refused.param).toBe('options.num_ctx');
    expect(refused.message).toContain('4096');
    expect(refused.message).toContain('ctx');
  });

  it('refuses a top-level field it does not know, by name', () => {
    expect(refusal('chat', { messages: [], novel: true }).param).toBe('novel');
  });

  it('reads keep_alive as durations and seconds', () => {
    const ttl = (keepAlive: unknown): number | null => {
      const out = translate('chat', { messages: [], keep_alive: keepAlive });
      if (!out.ok) throw new Error(out.error.message);
      return out.value.keepAliveMs;
    };
    expect(ttl('5m')).toBe(300_000);
    expect(ttl('1h30m')).toBe(5_400_000);
    expect(ttl(10)).toBe(10_000);
    expect(ttl('300')).toBe(300_000);
    expect(ttl(-1)).toBe(Infinity);
    expect(ttl('-1m')).toBe(Infinity);
    expect(ttl(0)).toBe(0);
    expect(ttl('0s')).toBe(0);
    expect(refusal('chat', { messages: [], keep_alive: 'soon' }).param).toBe('keep_alive');
  });

  it('says a request with no messages is empty (a load, or with keep_alive 0 an unload)', () => {
    const out = translate('chat', { keep_alive: 0 });
    expect(out.ok && out.value.empty).toBe(true);
    expect(out.ok && out.value.keepAliveMs).toBe(0);
  });
});

describe("Ollama's /api/generate said as a chat completion", () => {
  it('makes the prompt a user message after the system text', () => {
    expect(chatOf('generate', { prompt: 'hello', system: 'be brief' })['messages']).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'hello' },
    ]);
  });

  it('says an empty prompt is empty (a load)', () => {
    const out = translate('generate', { prompt: '' });
    expect(out.ok && out.value.empty).toBe(true);
  });

  it('refuses template, raw, suffix and context by name, and takes their empty values', () => {
    expect(refusal('generate', { prompt: 'x', template: '{{ .Prompt }}' }).param).toBe('template');
    expect(refusal('generate', { prompt: 'x', raw: true }).param).toBe('raw');
    expect(refusal('generate', { prompt: 'x', suffix: 'end' }).param).toBe('suffix');
    const context = refusal('generate', { prompt: 'x', context: [1, 2, 3] });
    expect(context.param).toBe('context');
    expect(context.message).toContain('keeps no token context');
    expect(translate('generate', { prompt: 'x', template: '', raw: false, suffix: '', context: [] }).ok).toBe(true);
  });

  it('refuses think with an unknown value', () => {
    expect(refusal('generate', { prompt: 'x', think: 'very' }).param).toBe('think');
  });
});

describe('reading the body', () => {
  it("refuses what is not JSON, not an object, or has no model, each saying so", () => {
    const read = (text: string) => readOllamaBody(Buffer.from(text));
    const notJson = read('{');
    expect(!notJson.ok && notJson.error.status).toBe(400);
    const notObject = read('[]');
    expect(!notObject.ok && notObject.error.message).toContain('JSON object');
    const noModel = read('{}');
    expect(!noModel.ok && noModel.error.param).toBe('model');
  });

  it("takes Ollama's older `name` for the model", () => {
    const read = readOllamaBody(Buffer.from('{"name":"demo-chat:latest"}'));
    expect(read.ok && read.value.model).toBe('demo-chat:latest');
  });
});
