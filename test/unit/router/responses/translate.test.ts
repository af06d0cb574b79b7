// The Responses API said in the chat API and back (core/router/responses/translate.ts), and the
// request check around it (core/router/responses/request.ts): what each request field and input item
// becomes, what is refused by name, and that the answer is a Response by OpenAI's own schema
// (test/fixtures/openai-openapi/response-schemas.json).
import { describe, expect, it } from 'vitest';
import type { ResponsesRequest } from '../../../../core/contracts/protocols/openai-responses.js';
import { parseResponsesRequest } from '../../../../core/router/responses/request.js';
import { refusedReasoning, toChatRequest, toResponse, type ResponseFrame } from '../../../../core/router/responses/translate.js';
import { responseSchemaErrors } from '../../../support/openai-response-schemas.js';

const parse = (body: Record<string, unknown>): ReturnType<typeof parseResponsesRequest> => parseResponsesRequest(Buffer.from(JSON.stringify(body)));

function chatOf(request: Record<string, unknown> & Pick<ResponsesRequest, 'input'>): Record<string, unknown> {
  const translated = toChatRequest({ model: 'm', ...request });
  if (!translated.ok) throw new Error(translated.error.message);
  return translated.value;
}

function refusalOf(body: Record<string, unknown>): { param: string | null; message: string } {
  const parsed = parse({ model: 'm', ...body });
  if (parsed.ok) throw new Error('expected a refusal');
  return parsed.error;
}

const weather = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };

describe('a Responses request as a chat request', () => {
  it('takes a string input as one user turn, instructions as the system message before it', () => {
    expect(chatOf({ input: 'Hi.', instructions: 'Be brief.' })).toEqual({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi.' },
      ],
    });
  });

  it('takes message items of every role, their text parts joined, a developer message as a system one', () => {
    const chat = chatOf({
      input: [
        { role: 'developer', content: 'Answer in French.' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hello ' }, { type: 'input_text', text: 'there.' }] },
        { type: 'message', id: 'msg_1', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Bonjour.', annotations: [] }] },
        { role: 'system', content: 'Stay polite.' },
        { role: 'user', content: 'Again.' },
      ],
    });
    expect(chat['messages']).toEqual([
      { role: 'system', content: 'Answer in French.' },
      { role: 'user', content: 'Hello there.' },
      { role: 'assistant', content: 'Bonjour.' },
      { role: 'system', content: 'Stay polite.' },
      { role: 'user', content: 'Again.' },
    ]);
  });

  it('takes function_call items as the assistant turn’s tool_calls (parallel calls one turn) and their outputs as tool messages', () => {
    const chat = chatOf({
      input: [
        { role: 'user', content: 'Weather in Oslo and Rome?' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.' }] },
        { type: 'function_call', id: 'fc_1', call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}', status: 'completed' },
        { type: 'function_call', call_id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'rain' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'sun' }] },
      ],
    });
    expect(chat['messages']).toEqual([
      { role: 'user', content: 'Weather in Oslo and Rome?' },
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'rain' },
      { role: 'tool', tool_call_id: 'call_b', content: 'sun' },
    ]);
    expect(chatOf({ input: [{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }] })['messages']).toEqual([
      { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: '{}' } }] },
    ]);
  });

  it('takes a reasoning item given back as the reasoning_content of the assistant turn it led to, its text and calls', () => {
    const reasoning = (text: string): Record<string, unknown> => ({ type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text }], status: 'completed' });
    const chat = chatOf({
      input: [
        { role: 'user', content: 'Weather in Oslo?' },
        reasoning('Look it up.'),
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.', annotations: [], logprobs: [] }] },
        { type: 'function_call', call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'rain' },
        reasoning('Say it.'),
        { type: 'function_call', call_id: 'call_b', name: 'say', arguments: '{}' },
        // Nothing to carry: no message.
        { type: 'reasoning', id: 'rs_3', summary: [] },
        { role: 'user', content: 'Thanks.' },
      ],
    });
    expect(chat['messages']).toEqual([
      { role: 'user', content: 'Weather in Oslo?' },
      { role: 'assistant', content: 'Looking.', reasoning_content: 'Look it up.', tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: 'rain' },
      { role: 'assistant', content: null, reasoning_content: 'Say it.', tool_calls: [{ id: 'call_b', type: 'function', function: { name: 'say', arguments: '{}' } }] },
      { role: 'user', content: 'Thanks.' },
    ]);
  });

  it('refuses reasoning given back on the embedded engine, which renders text only, and passes it to llama-server', () => {
    const withReasoning = { messages: [{ role: 'assistant' as const, content: 'Hi.', reasoning_content: 'Greet.' }] };
    expect(refusedReasoning(withReasoning, 'embedded', 'demo-tiny')).toMatchObject({ status: 400, param: 'input', message: expect.stringContaining("'demo-tiny'") as unknown });
    expect(refusedReasoning(withReasoning, 'llama-server', 'qwen')).toBeNull();
    expect(refusedReasoning({ messages: [{ role: 'assistant', content: 'Hi.' }] }, 'embedded', 'demo-tiny')).toBeNull();
  });

  it('takes the settings, flat function tools in the chat API’s nested shape, tool_choice and parallel_tool_calls', () => {
    const chat = chatOf({
      input: 'x',
      max_output_tokens: 32,
      temperature: 0,
      top_p: 0.5,
      parallel_tool_calls: false,
      tools: [
        { type: 'function', name: 'weather', description: 'The weather.', parameters: weather, strict: true },
        { type: 'function', name: 'now', parameters: null, strict: false },
      ],
      tool_choice: { type: 'function', name: 'weather' },
    });
    expect(chat).toMatchObject({
      max_tokens: 32,
      temperature: 0,
      top_p: 0.5,
      parallel_tool_calls: false,
      tools: [
        { type: 'function', function: { name: 'weather', description: 'The weather.', parameters: weather, strict: true } },
        { type: 'function', function: { name: 'now', parameters: { type: 'object', properties: {} }, strict: false } },
      ],
      tool_choice: { type: 'function', function: { name: 'weather' } },
    });
    for (const choice of ['auto', 'none', 'required']) expect(chatOf({ input: 'x', tool_choice: choice })['tool_choice']).toBe(choice);
  });

  it('takes text.format as response_format, and streams with the usage asked for', () => {
    expect(chatOf({ input: 'x', text: { format: { type: 'json_schema', name: 'city', schema: weather, strict: true } } })['response_format']).toEqual({
      type: 'json_schema',
      json_schema: { name: 'city', schema: weather, strict: true },
    });
    expect(chatOf({ input: 'x', text: { format: { type: 'json_object' } } })['response_format']).toEqual({ type: 'json_object' });
    expect(chatOf({ input: 'x', text: { format: { type: 'text' } } })).not.toHaveProperty('response_format');
    expect(chatOf({ input: 'x', stream: true })).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('asks for token log probabilities when include names the output text’s, or top_logprobs asks for alternatives', () => {
    expect(chatOf({ input: 'x', include: ['message.output_text.logprobs'] })).toMatchObject({ logprobs: true, top_logprobs: 0 });
    expect(chatOf({ input: 'x', include: ['message.output_text.logprobs'], top_logprobs: 5 })).toMatchObject({ logprobs: true, top_logprobs: 5 });
    expect(chatOf({ input: 'x', top_logprobs: 3 })).toMatchObject({ logprobs: true, top_logprobs: 3 });
    for (const none of [{}, { include: [] }, { top_logprobs: 0 }]) {
      const chat = chatOf({ input: 'x', ...none });
      expect(chat).not.toHaveProperty('logprobs');
      expect(chat).not.toHaveProperty('top_logprobs');
    }
  });
});

describe('the request check', () => {
  it('translates a valid request once, before any engine is known', () => {
    const parsed = parse({ model: 'tiny', input: 'Hi.', store: false, metadata: { app: 'test' }, truncation: 'disabled', include: [] });
    expect(parsed).toMatchObject({ ok: true, model: 'tiny', chat: { messages: [{ role: 'user', content: 'Hi.' }] } });
  });

  it('answers previous_response_id and store: true with a 400 saying responses are not kept', () => {
    const previous = refusalOf({ input: 'x', previous_response_id: 'resp_1' });
    expect(previous.param).toBe('previous_response_id');
    expect(previous.message).toContain('keeps no responses');
    expect(previous.message).toContain('`input`');
    expect(refusalOf({ input: 'x', store: true }).param).toBe('store');
    expect(refusalOf({ input: 'x', conversation: 'conv_1' }).param).toBe('conversation');
  });

  it('refuses by name what it cannot translate: other fields, items, parts and tools', () => {
    expect(refusalOf({ input: 'x', reasoning: { effort: 'high' } }).param).toBe('reasoning');
    expect(refusalOf({ input: 'x', top_k: 4 })).toMatchObject({ param: 'top_k', message: expect.stringContaining('not a field of the Responses API') as unknown });
    expect(refusalOf({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'data:,' }] }] }).param).toBe('input[0].content[0]');
    expect(refusalOf({ input: [{ type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Thought.' }] }] }).param).toBe('input[0].summary');
    expect(refusalOf({ input: [{ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAA' }] }).param).toBe('input[0].encrypted_content');
    expect(refusalOf({ input: [{ type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'summary_text', text: 'x' }] }] }).param).toBe('input[0].content[0]');
    expect(refusalOf({ input: [{ type: 'item_reference', id: 'msg_1' }] }).param).toBe('input[0].type');
    expect(refusalOf({ input: 'x', tools: [{ type: 'web_search' }] }).param).toBe('tools[0].type');
    expect(refusalOf({ input: 'x', tool_choice: { type: 'web_search' } }).param).toBe('tool_choice.type');
    expect(refusalOf({ input: 'x', text: { verbosity: 'low' } }).param).toBe('text.verbosity');
    const include = refusalOf({ input: 'x', include: ['message.output_text.logprobs', 'reasoning.encrypted_content'] });
    expect(include.param).toBe('include[1]');
    expect(include.message).toContain('"reasoning.encrypted_content"');
  });

  it('refuses malformed input naming the field', () => {
    expect(refusalOf({}).param).toBe('input');
    expect(refusalOf({ input: [] }).param).toBe('input');
    expect(refusalOf({ input: [{ role: 'tool', content: 'x' }] }).param).toBe('input[0].role');
    expect(refusalOf({ input: [{ type: 'function_call', call_id: 'c', name: 'f' }] }).param).toBe('input[0].arguments');
    expect(refusalOf({ input: 'x', max_output_tokens: 0 }).param).toBe('max_output_tokens');
    expect(refusalOf({ input: 'x', text: { format: { type: 'json_schema', schema: weather } } }).param).toBe('text.format.name');
    expect(refusalOf({ input: 'x', top_logprobs: 21 }).param).toBe('top_logprobs');
    expect(refusalOf({ input: 'x', top_logprobs: 1.5 }).param).toBe('top_logprobs');
    expect(refusalOf({ input: 'x', include: 'message.output_text.logprobs' }).param).toBe('include');
  });
});

const FRAME: ResponseFrame = { id: 'resp_abc', createdAt: 100, model: null, request: { model: 'tiny', input: 'x' } };

function completion(
  message: Record<string, unknown>,
  finish: string,
  usage: Record<string, unknown> = { prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 },
  choice: Record<string, unknown> = {},
): string {
  return JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', created: 90, model: 'engine.gguf', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: finish, ...choice }], usage });
}

describe('a chat answer as a Response', () => {
  it('is one message with the text, completed, with the usage, by OpenAI’s schema', () => {
    const response = toResponse(completion({ content: 'Hello.' }, 'stop'), FRAME, 101);
    expect(responseSchemaErrors(response)).toEqual([]);
    // The check has teeth: a message without its text parts' annotations is not one.
    expect(responseSchemaErrors({ ...response, output: [{ type: 'message', id: 'm', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'x' }] }] })).not.toEqual([]);
    expect(response).toMatchObject({
      id: 'resp_abc',
      object: 'response',
      created_at: 90,
      completed_at: 101,
      status: 'completed',
      incomplete_details: null,
      model: 'engine.gguf',
      output: [{ type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello.', annotations: [] }] }],
      usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } },
    });
  });

  it('is incomplete, for max_output_tokens, when the engine stopped at the length limit; named as the fallback when one answered', () => {
    const response = toResponse(completion({ content: 'Hel' }, 'length'), { ...FRAME, model: 'fallback' }, 101);
    expect(responseSchemaErrors(response)).toEqual([]);
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, model: 'fallback', output: [{ status: 'incomplete' }] });
  });

  it('has the call the token limit cut as its function_call item, incomplete, its arguments as written; the calls before it complete', () => {
    const calls = [
      { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
      { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Ro' } },
    ];
    const response = toResponse(completion({ content: null, tool_calls: calls }, 'length'), FRAME, 101);
    expect(responseSchemaErrors(response)).toEqual([]);
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(response?.output).toEqual([
      { type: 'function_call', id: 'fc_abc_0', call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}', status: 'completed' },
      { type: 'function_call', id: 'fc_abc_1', call_id: 'call_b', name: 'weather', arguments: '{"city":"Ro', status: 'incomplete' },
    ]);
  });

  it('has a function_call item per tool call, and repeats the request’s tools and settings as OpenAI’s answer does', () => {
    const request: ResponsesRequest = {
      model: 'tiny',
      input: 'x',
      instructions: 'Be brief.',
      tools: [{ type: 'function', name: 'weather', parameters: weather }],
      tool_choice: 'required',
      temperature: 0,
      metadata: { app: 'test' },
      text: { format: { type: 'json_object' } },
    };
    const calls = [
      { id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
      { id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
    ];
    const response = toResponse(completion({ content: null, tool_calls: calls }, 'tool_calls', { prompt_tokens: 9, completion_tokens: 4, prompt_tokens_details: { cached_tokens: 5 } }), { ...FRAME, request }, 101);
    expect(responseSchemaErrors(response)).toEqual([]);
    expect(response?.output).toEqual([
      { type: 'function_call', id: 'fc_abc_0', call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}', status: 'completed' },
      { type: 'function_call', id: 'fc_abc_1', call_id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}', status: 'completed' },
    ]);
    expect(response).toMatchObject({
      instructions: 'Be brief.',
      tools: [{ type: 'function', name: 'weather', parameters: weather, strict: null }],
      tool_choice: 'required',
      temperature: 0,
      top_p: null,
      metadata: { app: 'test' },
      text: { format: { type: 'json_object' } },
      usage: { input_tokens: 9, output_tokens: 4, total_tokens: 13, input_tokens_details: { cached_tokens: 5 } },
    });
  });

  it('puts a thinking model’s reasoning_content before the message, as a reasoning item with its text', () => {
    const response = toResponse(
      completion({ content: 'Paris.', reasoning_content: 'The capital of France is Paris.' }, 'stop', { prompt_tokens: 7, completion_tokens: 12, completion_tokens_details: { reasoning_tokens: 9 } }),
      FRAME,
      101,
    );
    expect(responseSchemaErrors(response)).toEqual([]);
    expect(response?.output).toEqual([
      { type: 'reasoning', id: 'rs_abc', summary: [], content: [{ type: 'reasoning_text', text: 'The capital of France is Paris.' }], status: 'completed' },
      { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Paris.', annotations: [], logprobs: [] }] },
    ]);
    expect(response?.usage?.output_tokens_details.reasoning_tokens).toBe(9);
    // Reasoning cut off at the length limit: an incomplete reasoning item, and the (empty) message still there.
    const cut = toResponse(completion({ content: '', reasoning_content: 'The capital' }, 'length'), FRAME, 101);
    expect(responseSchemaErrors(cut)).toEqual([]);
    expect(cut?.output.map((item) => [item.type, item.status])).toEqual([
      ['reasoning', 'incomplete'],
      ['message', 'incomplete'],
    ]);
  });

  it('gives the output text the tokens’ log probabilities the engine answered, in OpenAI’s shape', () => {
    const tokens = [
      { token: 'Hi', logprob: -0.1, bytes: [72, 105], top_logprobs: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105] }, { token: 'Yo', logprob: -2.5, bytes: [89, 111] }] },
      // llama-server leaves a token's bytes out where it has none to give; they are its UTF-8.
      { token: 'é', logprob: -0.5, top_logprobs: [{ token: 'é', logprob: -0.5 }] },
    ];
    const request: ResponsesRequest = { model: 'tiny', input: 'x', include: ['message.output_text.logprobs'], top_logprobs: 2 };
    const response = toResponse(completion({ content: 'Hié' }, 'stop', undefined, { logprobs: { content: tokens, refusal: null } }), { ...FRAME, request }, 101);
    expect(responseSchemaErrors(response)).toEqual([]);
    // The request's setting repeated, as OpenAI's answer does.
    expect(response?.top_logprobs).toBe(2);
    const message = response?.output[0];
    expect(message?.type === 'message' ? message.content[0]?.logprobs : null).toEqual([
      tokens[0],
      { token: 'é', logprob: -0.5, bytes: [0xc3, 0xa9], top_logprobs: [{ token: 'é', logprob: -0.5, bytes: [0xc3, 0xa9] }] },
    ]);
    // The check has teeth: a token without its alternatives is no LogProb.
    expect(responseSchemaErrors({ ...response, output: [{ ...message, content: [{ type: 'output_text', text: 'Hi', annotations: [], logprobs: [{ token: 'Hi', logprob: -0.1, bytes: [72, 105] }] }] }] })).not.toEqual([]);
  });

  it('gives the output text only its own tokens where the engine listed the reasoning’s too, as llama-server does', () => {
    const token = (text: string, logprob = -0.5): Record<string, unknown> => ({ token: text, logprob, bytes: [...Buffer.from(text)], top_logprobs: [] });
    const listed = [token('Easy'), token('.'), token('</think>'), token('\n\n'), token(' Paris', -0.1), token('.', -0.2)];
    const response = toResponse(completion({ content: 'Paris.', reasoning_content: 'Easy.' }, 'stop', undefined, { logprobs: { content: listed, refusal: null } }), FRAME, 101);
    expect(responseSchemaErrors(response)).toEqual([]);
    const message = response?.output[1];
    expect(message?.type === 'message' ? message.content[0]?.logprobs : null).toEqual([token(' Paris', -0.1), token('.', -0.2)]);
    // Cut off while reasoning: none of the tokens is the (empty) output text's.
    const cut = toResponse(completion({ content: '', reasoning_content: 'Easy' }, 'length', undefined, { logprobs: { content: [token('Easy')], refusal: null } }), FRAME, 101);
    const empty = cut?.output[1];
    expect(empty?.type === 'message' ? empty.content[0]?.logprobs : null).toEqual([]);
  });

  it('is null for what is not a chat completion', () => {
    expect(toResponse('{"object":"list"}', FRAME, 1)).toBeNull();
    expect(toResponse(completion({ content: null, tool_calls: [{ id: 'c', type: 'function' }] }, 'tool_calls'), FRAME, 1)).toBeNull();
  });
});
