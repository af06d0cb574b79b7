// Tool calls on the embedded engine as a real process on a generated model (the demo
// vocabulary and its Qwen2.5-style tool template), through the openai SDK and raw HTTP.
// Random weights write garbage, so the tests check structure, never content: a forced call
// names a declared function, its arguments parse and match the tool's schema, a stream joins
// to exactly the arguments the same greedy request answers whole, and a history's calls and
// results reach the prompt through the model's own template.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { portOf, startEngine, stopEngine, type Engine } from '../support/embedded-engine-process.js';
import { tinyModel } from '../support/test-models.js';

const KEY = 'test-key-tools';

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, unit: { type: 'string', enum: ['c', 'f'] }, alerts: { type: 'boolean' },
        days: { type: 'integer' }, lat: { type: 'number' },
      },
      required: ['city', 'unit', 'alerts', 'days', 'lat'],
      additionalProperties: false,
    },
  },
};
// z.int() and z.number() reject what node-llama-cpp's own number grammar lets through (3e-2 as
// an integer, 60E493562749 as a number: Infinity once parsed).
const weatherArgs = z.strictObject({ city: z.enum(['Paris', 'Oslo', 'Lima']), unit: z.enum(['c', 'f']), alerts: z.boolean(), days: z.int(), lat: z.number() });
const note = { type: 'function' as const, function: { name: 'add_note', parameters: { type: 'object', properties: { text: { type: 'string', maxLength: 12 } }, required: ['text'] } } };
const noteArgs = z.strictObject({ text: z.string().max(12) });
const argsOf: Record<string, z.ZodType> = { get_weather: weatherArgs, add_note: noteArgs };

const ask: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Paris?' }];

describe('embedded engine: tool calls', () => {
  let engine: Engine;
  let base: string;
  let client: OpenAI;

  beforeAll(async () => {
    engine = startEngine(['-m', await tinyModel(), '-c', '4096', '-np', '1', '-t', '1', '--port', '0', '--api-key', KEY, '--alias', 'tiny']);
    base = `http://127.0.0.1:${await portOf(engine)}`;
    await engine.waitFor(/srv {2}llama_server: model loaded/);
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
  });

  afterAll(async () => {
    if (engine) await stopEngine(engine);
  });

  const post = async (path: string, body: unknown): Promise<unknown> => {
    const r = await fetch(`${base}${path}`, { method: 'POST', headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(r.status, await r.clone().text()).toBe(200);
    return r.json();
  };

  it('says in /v1/models that the tool calls follow the model’s own template', async () => {
    const models = (await (await fetch(`${base}/v1/models`, { headers: { Authorization: `Bearer ${KEY}` } })).json()) as { data: { meta: Record<string, unknown> }[] };
    expect(models.data[0]?.meta['tool_call_format']).toBe('template');
  });

  it('answers tool_choice required with calls to declared functions, arguments valid under their schemas', async () => {
    const answer = await client.chat.completions.create({ model: 'tiny', messages: ask, tools: [weather, note], tool_choice: 'required', max_tokens: 160, seed: 3 });
    const choice = answer.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const calls = choice?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    for (const call of calls) {
      if (call.type !== 'function') throw new Error(`a ${call.type} call`);
      expect(call.id).toMatch(/^call_[A-Za-z0-9]+$/);
      const schema = argsOf[call.function.name];
      expect(schema, call.function.name).toBeDefined();
      expect(schema?.safeParse(JSON.parse(call.function.arguments)).success, call.function.arguments).toBe(true);
    }
  });

  it('answers a named tool_choice with one call to that function, integers and numbers parsing as the schema says, across seeds', async () => {
    for (const seed of [1, 2, 3, 4, 5, 6]) {
      const answer = await client.chat.completions.create({ model: 'tiny', messages: ask, tools: [note, weather], tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 160, seed });
      expect(answer.choices[0]?.finish_reason).toBe('tool_calls');
      const calls = answer.choices[0]?.message.tool_calls ?? [];
      expect(calls).toHaveLength(1);
      const call = calls[0];
      if (call?.type !== 'function') throw new Error('no function call');
      expect(call.function.name).toBe('get_weather');
      expect(weatherArgs.safeParse(JSON.parse(call.function.arguments)).success, call.function.arguments).toBe(true);
    }
  });

  it('lets tool_choice auto answer in text, the tools declared in the prompt', async () => {
    const [withTools, without] = await Promise.all([
      client.chat.completions.create({ model: 'tiny', messages: ask, tools: [weather], max_tokens: 6 }),
      client.chat.completions.create({ model: 'tiny', messages: ask, max_tokens: 6 }),
    ]);
    // Random weights never start a call of their own: the answer is text, cut at max_tokens.
    expect(withTools.choices[0]?.finish_reason).toBe('length');
    expect(withTools.usage?.completion_tokens).toBe(6);
    expect(withTools.choices[0]?.message.tool_calls).toBeUndefined();
    expect(typeof withTools.choices[0]?.message.content).toBe('string');
    expect((withTools.usage?.prompt_tokens ?? 0) - (without.usage?.prompt_tokens ?? 0)).toBeGreaterThan(200);
  });

  it('streams a call in OpenAI’s order, and its fragments join to the arguments the same greedy request answers whole', async () => {
    const request = { model: 'tiny', messages: ask, tools: [weather], tool_choice: 'required' as const, max_tokens: 160, temperature: 0 };
    const whole = await client.chat.completions.create(request);
    const wholeCall = whole.choices[0]?.message.tool_calls?.[0];
    if (wholeCall?.type !== 'function') throw new Error('no function call in the whole answer');

    const stream = await client.chat.completions.create({ ...request, stream: true });
    const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
    const finishes: (string | null)[] = [];
    for await (const chunk of stream) {
      const c = chunk.choices[0];
      if (c === undefined) continue;
      deltas.push(...(c.delta.tool_calls ?? []));
      if (c.finish_reason !== null) finishes.push(c.finish_reason);
    }
    expect(finishes).toEqual(['tool_calls']);
    const [first, ...rest] = deltas;
    expect(first).toMatchObject({ index: 0, type: 'function', function: { name: 'get_weather', arguments: '' } });
    expect(first?.id).toMatch(/^call_/);
    expect(rest.length).toBeGreaterThan(1);
    for (const d of rest) {
      expect(d.index).toBe(0);
      expect(d.id).toBeUndefined();
      expect(d.function?.name).toBeUndefined();
    }
    const joined = rest.map((d) => d.function?.arguments ?? '').join('');
    expect(joined).toBe(wholeCall.function.arguments);
    expect(weatherArgs.safeParse(JSON.parse(joined)).success).toBe(true);
  });

  it.each(['required', 'auto'] as const)('counts the prompt the slot already holds as cached_tokens with tool_choice %s: a few tokens the first time, most of the prompt the second', async (choice) => {
    // A system message of its own, at the prompt's start: no earlier test left this prompt in the slot.
    const messages: OpenAI.ChatCompletionMessageParam[] = [
      { role: 'system', content: `${choice === 'auto' ? 'Kestrel' : 'Marmot'} session: answer with a tool.` },
      { role: 'user', content: 'Which city?' },
    ];
    const once = () => client.chat.completions.create({ model: 'tiny', messages, tools: [weather, note], tool_choice: choice, max_tokens: 24, temperature: 0 });
    const first = await once();
    const second = await once();
    // Only the template's opening (the system turn's marker, a word or two) is shared with what ran before.
    expect(first.usage?.prompt_tokens_details?.cached_tokens).toBeLessThan(24);
    const cached = second.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    // The tools' declarations and the question: most of the prompt, never the whole of it.
    expect(cached).toBeGreaterThan((second.usage?.prompt_tokens ?? 0) / 2);
    expect(cached).toBeLessThanOrEqual(second.usage?.prompt_tokens ?? 0);
  });

  it('renders a history of calls and their results through the template', async () => {
    const history: OpenAI.ChatCompletionMessageParam[] = [
      ...ask,
      { role: 'assistant', content: null, tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c","alerts":false,"days":1,"lat":48.9}' } },
        { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo","unit":"c","alerts":true,"days":2,"lat":59.9}' } },
      ] },
      // Results out of order: each still follows its own call.
      { role: 'tool', tool_call_id: 'call_b', content: '{"temp":-3}' },
      { role: 'tool', tool_call_id: 'call_a', content: '{"temp":21}' },
    ];
    const { prompt } = (await post('/apply-template', { messages: history, tools: [weather] })) as { prompt: string };
    expect(prompt).toContain('<tools>\n{"type": "function", "function": {"name": "get_weather"');
    expect(prompt).toContain('<|im_start|>assistant\n<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c", "alerts": false, "days": 1, "lat": 48.9}}</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"');
    // The answer goes on from the results: one assistant turn opened, nothing between.
    expect(prompt.endsWith('<|im_start|>user\n<tool_response>\n{"temp": 21}\n</tool_response>\n<tool_response>\n{"temp": -3}\n</tool_response><|im_end|>\n<|im_start|>assistant\n'), prompt.slice(-200)).toBe(true);

    // The chat itself takes that history (the calls and results, not only the question, in its prompt).
    const [answer, question] = await Promise.all([history, ask].map((messages) => client.chat.completions.create({ model: 'tiny', messages, tools: [weather], max_tokens: 4 })));
    expect(answer?.choices[0]?.finish_reason).toBe('length');
    expect((answer?.usage?.prompt_tokens ?? 0) - (question?.usage?.prompt_tokens ?? 0)).toBeGreaterThan(150);
  });

  it('refuses a tool result that answers no call, naming the message', async () => {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST', headers: { Authorization: `Bearer ${KEY}` },
      body: JSON.stringify({ messages: [...ask, { role: 'assistant', content: 'hi' }, { role: 'tool', tool_call_id: 'call_x', content: '1' }], tools: [weather] }),
    });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe('messages[2].role');
  });
});
