// Tool calls end to end, as apps make them: `llmtray serve --demo` as a real daemon process, its
// real embedded engine serving demo-tiny, and the real client libraries (the openai SDK,
// LangChain's bindTools with a named tool; the AI SDK's generateText with a zod tool runs on both
// engines in daemon-clients-engines). The demo models have random weights, so
// every test checks the structure of what comes back (a call to the named function, arguments
// that parse and match the schema), never its content.
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fileDaemon } from '../support/file-daemon.js';

const live = fileDaemon();

const cityArgs = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']), celsius: z.boolean() });
const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, celsius: { type: 'boolean' } }, required: ['city', 'celsius'] },
  },
};
const clock = { type: 'function' as const, function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } } };
const ask: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: 'What is the weather in Oslo?' }];

describe('tool calls through the daemon', () => {
  it('answers the openai SDK with a call to the named function, arguments matching its schema', async () => {
    const answer = await live.client.chat.completions.create({ model: 'demo-tiny', messages: ask, tools: [clock, weather], tool_choice: { type: 'function', function: { name: 'get_weather' } }, max_tokens: 120 });
    const choice = answer.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const call = choice?.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.id).toMatch(/^call_/);
    expect(call.function.name).toBe('get_weather');
    expect(cityArgs.safeParse(JSON.parse(call.function.arguments)).success, call.function.arguments).toBe(true);
  });

  it('streams required calls that the openai SDK reassembles into valid calls', async () => {
    const stream = live.client.chat.completions.stream({ model: 'demo-tiny', messages: ask, tools: [weather, clock], tool_choice: 'required', max_tokens: 120 });
    const done = await stream.finalChatCompletion();
    const choice = done.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const calls = choice?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const call = calls[0];
    if (call?.type !== 'function') throw new Error('no function call');
    expect(['get_weather', 'get_time']).toContain(call.function.name);
    const args: unknown = JSON.parse(call.function.arguments);
    expect(call.function.name === 'get_weather' ? cityArgs.safeParse(args).success : typeof args === 'object', call.function.arguments).toBe(true);
  });

  it('continues a conversation holding an assistant call and its tool result', async () => {
    const answer = await live.client.chat.completions.create({
      model: 'demo-tiny',
      messages: [
        ...ask,
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo","celsius":true}' } }] },
        { role: 'tool', tool_call_id: 'call_1', content: '{"temp":-3}' },
      ],
      tools: [weather],
      max_tokens: 8,
    });
    expect(answer.choices[0]?.finish_reason).toBe('length');
    expect(typeof answer.choices[0]?.message.content).toBe('string');
  });

  it('serves LangChain’s ChatOpenAI.bindTools with a forced tool', async () => {
    const model = new ChatOpenAI({ model: 'demo-tiny', apiKey: 'any-key-works', configuration: { baseURL: live.daemon.endpoint }, maxTokens: 120, maxRetries: 0 });
    const message = await model.bindTools([weather], { tool_choice: 'get_weather', parallel_tool_calls: false }).invoke('Weather in Paris?');
    expect(message.tool_calls).toHaveLength(1);
    const call = message.tool_calls?.[0];
    expect(call?.name).toBe('get_weather');
    expect(call?.id).toMatch(/^call_/);
    expect(cityArgs.safeParse(call?.args).success).toBe(true);
  });
});
