// How the embedded engine reads a request's tools and a history's calls (tool-calls.ts,
// openai-requests.ts, chat-prompt.ts): pure functions, no model.
import { describe, expect, it } from 'vitest';
import { toChatHistory } from '../../../core/engine/embedded/openai/chat-prompt.js';
import { HttpError } from '../../../core/engine/embedded/http-error.js';
import { readChatRequest } from '../../../core/engine/embedded/openai/openai-requests.js';
import { offeredFunctions, readToolRequest } from '../../../core/engine/embedded/openai/tool-calls.js';

const weather = { type: 'function', function: { name: 'get_weather', description: 'Weather', parameters: { type: 'object', title: 'W', properties: { city: { type: 'string' } }, required: ['city'] } } };
const clock = { type: 'function', function: { name: 'get_time' } };

function refusal(run: () => unknown): { status: number; param: unknown; message: string } {
  try {
    run();
  } catch (error) {
    if (error instanceof HttpError) return { status: error.status, param: error.extra['param'], message: error.message };
    throw error;
  }
  throw new Error('not refused');
}

describe('readToolRequest', () => {
  it('reads function tools with their schemas checked, and each tool_choice form', () => {
    const auto = readToolRequest({ tools: [weather, clock] });
    expect(auto?.choice).toEqual({ kind: 'auto' });
    expect(auto?.parallel).toBe(true);
    // Annotations go (title), the grammar's keywords stay; a tool without parameters has none.
    expect(auto?.functions).toEqual({ get_weather: { description: 'Weather', params: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }, get_time: {} });
    expect(readToolRequest({ tools: [weather], tool_choice: 'required', parallel_tool_calls: false })).toMatchObject({ choice: { kind: 'required' }, parallel: false });
    const named = readToolRequest({ tools: [weather, clock], tool_choice: { type: 'function', function: { name: 'get_time' } } });
    expect(named?.choice).toEqual({ kind: 'named', name: 'get_time' });
    expect(Object.keys(offeredFunctions(named ?? { functions: {}, choice: { kind: 'auto' }, parallel: true }))).toEqual(['get_time']);
  });

  it('reads no tools, and tool_choice none, as nothing asked', () => {
    expect(readToolRequest({})).toBeUndefined();
    expect(readToolRequest({ tools: [], tool_choice: 'none' })).toBeUndefined();
    expect(readToolRequest({ tools: [weather], tool_choice: 'none' })).toBeUndefined();
  });

  it('refuses what it cannot honour, naming the field', () => {
    expect(refusal(() => readToolRequest({ tools: [{ type: 'web_search' }] })).param).toBe('tools[0]');
    expect(refusal(() => readToolRequest({ tools: [{ type: 'function', function: { name: 'has space' } }] })).param).toBe('tools[0].function.name');
    expect(refusal(() => readToolRequest({ tools: [weather, weather] })).param).toBe('tools[1].function.name');
    const keyword = refusal(() => readToolRequest({ tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { n: { type: 'integer', minimum: 0 } } } } }] }));
    expect(keyword.param).toBe('tools[0].function.parameters');
    expect(keyword.message).toContain("'minimum' at #/properties/n");
    expect(refusal(() => readToolRequest({ tools: [weather], tool_choice: { type: 'function', function: { name: 'other' } } })).param).toBe('tool_choice');
    expect(refusal(() => readToolRequest({ tool_choice: 'required' })).param).toBe('tool_choice');
    expect(refusal(() => readToolRequest({ tools: [weather], parallel_tool_calls: 'yes' })).param).toBe('parallel_tool_calls');
  });
});

describe('a history with tool calls', () => {
  const call = (id: string, city: string) => ({ id, type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city }) } });

  it('becomes model responses whose function calls carry their results, matched by id', () => {
    const request = readChatRequest({
      messages: [
        { role: 'user', content: 'weather?' },
        { role: 'assistant', content: null, tool_calls: [call('a', 'Paris'), call('b', 'Oslo')] },
        { role: 'tool', tool_call_id: 'b', content: 'cold' },
        { role: 'tool', tool_call_id: 'a', content: '{"temp":21}' },
        { role: 'assistant', content: 'Paris is warmer.' },
        { role: 'user', content: 'thanks' },
      ],
    });
    expect(toChatHistory(request.messages)).toEqual([
      { type: 'user', text: 'weather?' },
      { type: 'model', response: [
        { type: 'functionCall', name: 'get_weather', params: { city: 'Paris' }, result: { temp: 21 }, startsNewChunk: true },
        { type: 'functionCall', name: 'get_weather', params: { city: 'Oslo' }, result: 'cold' },
      ] },
      { type: 'model', response: ['Paris is warmer.'] },
      { type: 'user', text: 'thanks' },
      { type: 'model', response: [] },
    ]);
  });

  it('ending in tool results, goes on in the turn that made the calls', () => {
    const request = readChatRequest({ messages: [{ role: 'user', content: 'x' }, { role: 'assistant', tool_calls: [call('a', 'Lima')] }, { role: 'tool', tool_call_id: 'a', content: '1' }] });
    const history = toChatHistory(request.messages);
    expect(history).toHaveLength(2);
    expect(history[1]).toEqual({ type: 'model', response: [{ type: 'functionCall', name: 'get_weather', params: { city: 'Lima' }, result: 1, startsNewChunk: true }] });
  });

  it('refuses a result that answers no call, or a call whose arguments are not JSON', () => {
    expect(refusal(() => readChatRequest({ messages: [{ role: 'user', content: 'x' }, { role: 'tool', content: '1' }] })).param).toBe('messages[1].role');
    expect(refusal(() => readChatRequest({ messages: [{ role: 'assistant', tool_calls: [call('a', 'P')] }, { role: 'tool', tool_call_id: 'zz', content: '1' }] })).param).toBe('messages[1].tool_call_id');
    expect(refusal(() => readChatRequest({ messages: [{ role: 'assistant', tool_calls: [{ id: 'a', type: 'function', function: { name: 'f', arguments: '{' } }] }] })).param).toBe('messages[0].tool_calls[0].function.arguments');
  });
});
