import { describe, expect, it } from 'vitest';
import type { AnthropicMessagesRequest } from '../../../../core/contracts/protocols/anthropic.js';
import { toAnthropicMessage, toChatCompletionRequest, toChatMessages, usageOf, type TranslationTarget } from '../../../../core/router/anthropic/translate.js';

/** A model server that speaks only OpenAI's chat API (the embedded engine, an older llama-server). */
const CHAT_ONLY: TranslationTarget = { servedBy: 'demo-chat', servesMessages: false };

const base: AnthropicMessagesRequest = { model: 'chat', max_tokens: 64, messages: [{ role: 'user', content: 'hello' }] };

function translated(request: AnthropicMessagesRequest, model = 'chat'): Record<string, unknown> {
  const result = toChatCompletionRequest(request, model, CHAT_ONLY);
  if (!result.ok) throw new Error(`refused: ${result.error.message}`);
  return result.value;
}

function refusal(request: AnthropicMessagesRequest): { param: string | null; message: string; status: number } {
  const result = toChatCompletionRequest(request, 'chat', CHAT_ONLY);
  if (result.ok) throw new Error('expected a refusal');
  return result.error;
}

describe('toChatCompletionRequest', () => {
  it('carries the generation settings under their chat names', () => {
    const chat = translated({ ...base, stop_sequences: ['END', '\n\n'], temperature: 0.2, top_p: 0.9, top_k: 20, metadata: { user_id: 'u-1' } });
    expect(chat).toEqual({
      model: 'chat',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 64,
      stop: ['END', '\n\n'],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 20,
      user: 'u-1',
    });
  });

  it('asks the engine for the model it is given (a fallback’s id), whatever the client named', () => {
    expect(translated(base, 'demo-tiny')['model']).toBe('demo-tiny');
  });

  it('asks for the usage along with a stream, since message_delta reports it', () => {
    expect(translated({ ...base, stream: true })).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(translated({ ...base, stream: false })['stream']).toBeUndefined();
  });

  it('puts the system prompt first, a string or text blocks as paragraphs', () => {
    expect(translated({ ...base, system: 'Be brief.' })['messages']).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
    ]);
    const blocks = translated({ ...base, system: [{ type: 'text', text: 'You are a tool.' }, { type: 'text', text: 'Answer in French.', cache_control: { type: 'ephemeral' } }] });
    expect((blocks['messages'] as unknown[])[0]).toEqual({ role: 'system', content: 'You are a tool.\n\nAnswer in French.' });
  });

  it('keeps the turns in order, text blocks as OpenAI text parts', () => {
    const chat = translated({
      ...base,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'one ' }, { type: 'text', text: 'two' }] },
        { role: 'assistant', content: 'three' },
        { role: 'user', content: 'four' },
      ],
    });
    expect(chat['messages']).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'one ' }, { type: 'text', text: 'two' }] },
      { role: 'assistant', content: 'three' },
      { role: 'user', content: 'four' },
    ]);
  });

  it.each([
    ['an image block', { messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } }] }] }, 'messages[0].content[1]', '"image" block'],
    ['a tool result in an assistant turn', { messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok' }] }] }, 'messages[1].content[0]', '"tool_result" block in a assistant turn'],
    ['earlier thinking', { messages: [{ role: 'user', content: 'a' }, { role: 'assistant', content: [{ type: 'thinking', thinking: 'hm', signature: '' }] }] }, 'messages[1].content[0]', '"thinking" block'],
    ['a server tool', { tools: [{ name: 'read', input_schema: { type: 'object' } }, { type: 'bash_20250124', name: 'bash' }] }, 'tools[1].type', 'server tool "bash_20250124"'],
  ] as const)('refuses %s, naming it and the engine, rather than drop it', (_what, change, param, said) => {
    const error = refusal({ ...base, ...(change as Partial<AnthropicMessagesRequest>) });
    expect(error.status).toBe(400);
    expect(error.param).toBe(param);
    expect(error.message).toContain(said);
    expect(error.message).toContain("'demo-chat'");
    expect(error.message).toContain('/v1/messages');
  });

  it('does not say the server speaks only the chat API when it serves /v1/messages and the translation was chosen', () => {
    const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AA==' } };
    const result = toChatCompletionRequest({ ...base, messages: [{ role: 'user', content: [image] }] } as unknown as AnthropicMessagesRequest, 'chat', { servedBy: 'demo-chat', servesMessages: true });
    if (result.ok) throw new Error('expected a refusal');
    expect(result.error.param).toBe('messages[0].content[0]');
    expect(result.error.message).toContain("llmtray's translation for 'demo-chat' cannot carry");
    expect(result.error.message).not.toContain("speaks only OpenAI's chat API");
    expect(result.error.message).not.toContain('A llama-server build that serves /v1/messages itself');
  });

  it.each([
    [{ type: 'auto' }, { tool_choice: 'auto' }],
    [{ type: 'any', disable_parallel_tool_use: true }, { tool_choice: 'required', parallel_tool_calls: false }],
    [{ type: 'none' }, { tool_choice: 'none' }],
    [{ type: 'tool', name: 'read' }, { tool_choice: { type: 'function', function: { name: 'read' } } }],
  ])('says tool_choice %j in chat words', (choice, expected) => {
    const chat = translated({ ...base, tools: [{ name: 'read', input_schema: { type: 'object' } }], tool_choice: choice });
    expect(chat).toMatchObject({ ...expected, tools: [{ type: 'function', function: { name: 'read', parameters: { type: 'object' } } }] });
    if (!('parallel_tool_calls' in expected)) expect(chat).not.toHaveProperty('parallel_tool_calls');
  });

  it.each([
    [{ tool_choice: { type: 'tool' } }, 'tool_choice.name'],
    [{ tool_choice: { type: 'sometimes' } }, 'tool_choice.type'],
    [{ tools: [{ input_schema: { type: 'object' } }] }, 'tools[0].name'],
    [{ tools: [{ name: 'read' }] }, 'tools[0].input_schema'],
    [{ messages: [{ role: 'assistant', content: [{ type: 'tool_use', name: 'read', input: {} }] }] }, 'messages[0].content[0]'],
  ] as const)('refuses a malformed tool field %j as a client mistake, naming it', (change, param) => {
    const error = refusal({ ...base, ...(change as Partial<AnthropicMessagesRequest>) });
    expect(error.param).toBe(param);
    expect(error.message).not.toContain("'demo-chat'");
  });

  it('marks an errored tool result as such, since the chat API has no flag for it', () => {
    const chat = translated({ ...base, messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'no such file', is_error: true }] }] });
    expect(chat['messages']).toEqual([{ role: 'tool', tool_call_id: 't', content: 'Error: no such file' }]);
  });

  it('takes an empty tool list and disabled thinking, which ask for nothing', () => {
    expect(translated({ ...base, tools: [], thinking: { type: 'disabled' } })['messages']).toEqual([{ role: 'user', content: 'hello' }]);
  });
});

describe('toChatMessages', () => {
  it('is the prompt alone, for counting: no generation settings', () => {
    const result = toChatMessages({ model: 'chat', system: 'S', messages: [{ role: 'user', content: 'u' }] }, CHAT_ONLY);
    expect(result).toEqual({ ok: true, value: [{ role: 'system', content: 'S' }, { role: 'user', content: 'u' }] });
  });
});

describe('toAnthropicMessage', () => {
  const completion = (fields: Record<string, unknown> = {}, finish: string | null = 'stop', content: string | null = 'Hi there'): string =>
    JSON.stringify({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'engine.gguf',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: finish }],
      usage: { prompt_tokens: 12, completion_tokens: 3, total_tokens: 15 },
      ...fields,
    });

  it('tells a chat completion as a message with one text block', () => {
    expect(toAnthropicMessage(completion(), null)).toEqual({
      id: 'chatcmpl-1',
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: 'Hi there' }],
      model: 'engine.gguf',
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 3 },
    });
  });

  it.each([
    ['length', 'max_tokens'],
    ['stop', 'end_turn'],
    [null, 'end_turn'],
  ] as const)('reads finish_reason %s as stop_reason %s', (finish, stop) => {
    expect(toAnthropicMessage(completion({}, finish), null)?.stop_reason).toBe(stop);
  });

  it('names the fallback when given one', () => {
    expect(toAnthropicMessage(completion(), 'demo-tiny')?.model).toBe('demo-tiny');
  });

  it('has no content block for an empty answer', () => {
    expect(toAnthropicMessage(completion({}, 'length', ''), null)?.content).toEqual([]);
    expect(toAnthropicMessage(completion({}, 'length', null), null)?.content).toEqual([]);
  });

  it('tells tool_calls as tool_use blocks after the text, stop_reason tool_use even when the engine said stop; null for arguments that are not a JSON object', () => {
    const withCalls = (args: string, finish: string): string =>
      JSON.stringify({
        id: 'c',
        model: 'm',
        choices: [{ index: 0, finish_reason: finish, message: { role: 'assistant', content: 'Reading.', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read', arguments: args } }] } }],
      });
    const message = toAnthropicMessage(withCalls('{"path":"/a"}', 'stop'), null);
    expect(message?.content).toEqual([
      { type: 'text', text: 'Reading.' },
      { type: 'tool_use', id: 'call_1', name: 'read', input: { path: '/a' } },
    ]);
    expect(message?.stop_reason).toBe('tool_use');
    expect(toAnthropicMessage(withCalls('{"path":', 'tool_calls'), null)).toBeNull();
    expect(toAnthropicMessage(withCalls('[1]', 'tool_calls'), null)).toBeNull();
  });

  it('tells a call the token limit cut as its tool_use, last, with the input written so far, and stop_reason max_tokens', () => {
    const calls = [
      { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{"path":"/a"}' } },
      { id: 'call_2', type: 'function', function: { name: 'read', arguments: '{"path":"/b/lo' } },
    ];
    const cut = JSON.stringify({ id: 'c', model: 'm', choices: [{ index: 0, finish_reason: 'length', message: { role: 'assistant', content: null, tool_calls: calls } }] });
    const message = toAnthropicMessage(cut, null);
    expect(message?.stop_reason).toBe('max_tokens');
    expect(message?.content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'read', input: { path: '/a' } },
      { type: 'tool_use', id: 'call_2', name: 'read', input: { path: '/b/lo' } },
    ]);
  });

  it('is null for what is not a chat completion', () => {
    for (const text of ['{"error":{"message":"x"}}', '[]', 'not json', '{"choices":[]}', '{"choices":[{"text":"legacy"}]}']) {
      expect(toAnthropicMessage(text, null), text).toBeNull();
    }
  });
});

describe('usageOf', () => {
  it('counts prompt tokens read from the cache apart, as the Messages API does', () => {
    expect(usageOf({ prompt_tokens: 50, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 45 } }, null)).toEqual({
      input_tokens: 5,
      output_tokens: 4,
      cache_read_input_tokens: 45,
    });
  });

  it('stands in the fallback for a missing completion count, and zero for what is missing or nonsense', () => {
    expect(usageOf(undefined, 7)).toEqual({ input_tokens: 0, output_tokens: 7 });
    expect(usageOf({ prompt_tokens: -3, completion_tokens: 'many' }, null)).toEqual({ input_tokens: 0, output_tokens: 0 });
  });
});
