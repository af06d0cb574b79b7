// What apps send beyond a plain chat, against the embedded engine as a real process on a
// generated model, through the real clients: embeddings in both encodings (the openai SDK
// asks for base64 by default and decodes it), structured output enforced by grammar, and
// every field the engine cannot honour refused by name instead of silently ignored.
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { OpenAIEmbeddings } from '@langchain/openai';
import { embed, generateObject } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { portOf, startEngine, stopEngine, type Engine } from '../support/embedded-engine-process.js';
import { tinyModel, TINY_SHAPE } from '../support/test-models.js';

const KEY = 'test-key-formats';

describe('embedded engine: embeddings, structured output, refusals', () => {
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

  it("answers the openai SDK's default (base64) request with the same vector as the float request", async () => {
    const asFloat = await client.embeddings.create({ model: 'tiny', input: ['hello', 'world'], encoding_format: 'float' });
    const byDefault = await client.embeddings.create({ model: 'tiny', input: ['hello', 'world'] });
    expect(asFloat.data[0]?.embedding).toHaveLength(TINY_SHAPE.nEmbd);
    expect(byDefault.data).toHaveLength(2);
    for (const i of [0, 1]) {
      const want = asFloat.data[i]?.embedding ?? [];
      const got = byDefault.data[i]?.embedding ?? [];
      expect(got).toHaveLength(want.length);
      // float32 on the wire: equal to float32 precision, not to the last double digit.
      got.forEach((v, k) => expect(v).toBeCloseTo(want[k] ?? Number.NaN, 5));
    }
    expect(asFloat.usage.prompt_tokens).toBeGreaterThan(0);
    // On the wire, base64 is a string of little-endian float32s (what the SDK decodes).
    const raw = (await (await post('/v1/embeddings', { input: 'hello', encoding_format: 'base64' })).json()) as { data: { embedding: unknown }[] };
    const wire = raw.data[0]?.embedding;
    expect(typeof wire).toBe('string');
    const bytes = Buffer.from(wire as string, 'base64');
    const decoded = Array.from({ length: bytes.length / 4 }, (_, k) => bytes.readFloatLE(k * 4));
    expect(decoded).toHaveLength(TINY_SHAPE.nEmbd);
    decoded.forEach((v, k) => expect(v).toBeCloseTo(asFloat.data[0]?.embedding[k] ?? Number.NaN, 5));
  });

  it('embeds token arrays as it embeds their text', async () => {
    const tokens = (await (await post('/tokenize', { content: 'hello' })).json()) as { tokens: number[] };
    const [fromText, fromTokens] = await Promise.all([
      client.embeddings.create({ model: 'tiny', input: 'hello', encoding_format: 'float' }),
      client.embeddings.create({ model: 'tiny', input: [tokens.tokens], encoding_format: 'float' }),
    ]);
    expect(fromTokens.data[0]?.embedding).toEqual(fromText.data[0]?.embedding);
  });

  it('refuses dimensions and an unknown encoding by name', async () => {
    const dims = await post('/v1/embeddings', { input: 'hi', dimensions: 8 });
    expect(dims.status).toBe(400);
    expect(((await dims.json()) as { error: { param: string } }).error.param).toBe('dimensions');
    const enc = await post('/v1/embeddings', { input: 'hi', encoding_format: 'int8' });
    expect(enc.status).toBe(400);
    expect(((await enc.json()) as { error: { message: string } }).error.message).toMatch(/encoding_format/);
  });

  it("gives the Vercel AI SDK's embed and LangChain's OpenAIEmbeddings the engine's vectors", async () => {
    const reference = (await client.embeddings.create({ model: 'tiny', input: 'retrieval', encoding_format: 'float' })).data[0]?.embedding ?? [];
    const provider = createOpenAICompatible({ name: 'llmtray', baseURL: `${base}/v1`, apiKey: KEY });
    const viaAiSdk = await embed({ model: provider.textEmbeddingModel('tiny'), value: 'retrieval', maxRetries: 0 });
    expect(viaAiSdk.embedding).toHaveLength(reference.length);
    viaAiSdk.embedding.forEach((v, k) => expect(v).toBeCloseTo(reference[k] ?? Number.NaN, 5));
    const langchain = new OpenAIEmbeddings({ model: 'tiny', apiKey: KEY, configuration: { baseURL: `${base}/v1` }, maxRetries: 0 });
    const viaLangChain = await langchain.embedQuery('retrieval');
    expect(viaLangChain).toHaveLength(reference.length);
    viaLangChain.forEach((v, k) => expect(v).toBeCloseTo(reference[k] ?? Number.NaN, 5));
  });

  it('answers json_schema with JSON that matches the schema, even from random weights', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 12 }, count: { type: 'integer' }, ratio: { type: 'number' }, ok: { type: 'boolean' } },
      required: ['name', 'count', 'ratio', 'ok'],
      additionalProperties: false,
    };
    // Several seeds: a random-weight model wanders the grammar's every corner (an integer's
    // exponent was one: node-llama-cpp's rule let `3e-2` through).
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const r = await client.chat.completions.create({
        model: 'tiny',
        messages: [{ role: 'user', content: 'describe it' }],
        max_tokens: 200,
        temperature: 1,
        seed,
        response_format: { type: 'json_schema', json_schema: { name: 'thing', schema, strict: true } },
      });
      expect(r.choices[0]?.finish_reason).toBe('stop');
      const content = r.choices[0]?.message.content ?? '';
      const value = JSON.parse(content) as Record<string, unknown>;
      expect(Object.keys(value).sort(), content).toEqual(['count', 'name', 'ok', 'ratio']);
      expect(Number.isFinite(value['ratio']), content).toBe(true);
      expect(typeof value['name'], content).toBe('string');
      expect((value['name'] as string).length, content).toBeLessThanOrEqual(12);
      expect(Number.isInteger(value['count']), content).toBe(true);
      expect(typeof value['ok'], content).toBe('boolean');
    }
  });

  it('answers json_object with a JSON value', async () => {
    const r = await client.chat.completions.create({
      model: 'tiny', messages: [{ role: 'user', content: 'json please' }], max_tokens: 300, temperature: 0.5, response_format: { type: 'json_object' },
    });
    const content = r.choices[0]?.message.content ?? '';
    if (r.choices[0]?.finish_reason === 'stop') expect(() => JSON.parse(content)).not.toThrow();
    // Cut at max_tokens, it is still a prefix of a JSON object, never free text.
    expect(content.trimStart().startsWith('{')).toBe(true);
  });

  it("serves the Vercel AI SDK's generateObject with a zod schema", async () => {
    const provider = createOpenAICompatible({ name: 'llmtray', baseURL: `${base}/v1`, apiKey: KEY, supportsStructuredOutputs: true });
    const { object } = await generateObject({
      model: provider.chatModel('tiny'),
      schema: z.object({ title: z.string().max(10), done: z.boolean() }),
      prompt: 'a task',
      maxOutputTokens: 200,
      maxRetries: 0,
    });
    expect(typeof object.title).toBe('string');
    expect(typeof object.done).toBe('boolean');
  });

  it('refuses a schema keyword the grammar cannot enforce, naming it and where it is', async () => {
    const r = await post('/v1/chat/completions', {
      messages: [{ role: 'user', content: 'x' }],
      response_format: { type: 'json_schema', json_schema: { name: 'n', schema: { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } } } } },
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/'pattern' at #\/properties\/code/);
  });

  it.each([
    ['tools[0].function.parameters', { tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { n: { type: 'integer', minimum: 1 } } } } }] }],
    ['tool_choice', { tool_choice: 'required' }],
    ['tool_choice', { tools: [{ type: 'function', function: { name: 'f' } }], tool_choice: { type: 'function', function: { name: 'g' } } }],
    ['logit_bias', { logit_bias: { '5': 10 } }],
    ['messages[1].role', { messages: [{ role: 'user', content: 'x' }, { role: 'tool', tool_call_id: 'c1', content: '42' }] }],
    ['messages[1].tool_calls[0].function.arguments', { messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{not json' } }] }] }],
  ])('refuses %s instead of answering as if it were not there', async (param, extra) => {
    const r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2, ...extra });
    expect(r.status).toBe(400);
    const error = ((await r.json()) as { error: { param: string; type: string } }).error;
    expect(error.param).toBe(param);
    expect(error.type).toBe('invalid_request_error');
  });

  it('accepts the off values of those fields (what clients send when nothing is asked)', async () => {
    const r = await post('/v1/chat/completions', { messages: [{ role: 'user', content: 'x' }], max_tokens: 2, tools: [], logprobs: false, tool_choice: 'none' });
    expect(r.status).toBe(200);
  });

  it.each([['suffix', { suffix: 'end' }], ['echo', { echo: true }]])('refuses completions %s by name', async (param, extra) => {
    const r = await post('/v1/completions', { prompt: 'abc', max_tokens: 2, ...extra });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe(param);
  });
});
