// OpenAI's Responses API through the router: the official `openai` SDK's `client.responses`
// → the router on 127.0.0.1 → a real HTTP fake engine that answers like llama-server
// (test/support/router-fake-engine.ts, which calls a tool when it is given tools), with the
// scripted gateway (test/support/scripted-gateway.ts). Every request crosses the translation:
// what the engine received shows the chat request it became, and every answer and stream event
// is checked against OpenAI's published schemas. The activation, claims, resend and hang
// handling are the chat endpoints' (router-activation.test.ts, router-engine-faults.test.ts);
// these tests prove the route rides on them.
import OpenAI, { APIError, BadRequestError } from 'openai';
import { describe, expect, it } from 'vitest';
import type { RouterOptions } from '../../core/router/router.js';
import { FAKE_REASONING } from '../support/router-fake-engine.js';
import { responseSchemaErrors, streamEventSchemaErrors } from '../support/openai-response-schemas.js';
import type { ScriptedGateway, ScriptedModel } from '../support/scripted-gateway.js';
import { scriptedRouterHarness } from '../support/scripted-router.js';

const routers = scriptedRouterHarness();
const { engine, engineKey } = routers;

async function startRouter(options: Partial<RouterOptions> = {}, overrides: Partial<Record<string, Partial<ScriptedModel>>> = {}): Promise<{ client: OpenAI; gateway: ScriptedGateway }> {
  const { router, gateway } = await routers.start(overrides, options);
  return { client: new OpenAI({ apiKey: 'client-own-key', baseURL: router.url, maxRetries: 0 }), gateway };
}

async function caught(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error('expected an APIError');
}

/** Every event of a stream, each checked against OpenAI's schema; the error the SDK raised, if any. */
async function collect(stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>): Promise<{ events: OpenAI.Responses.ResponseStreamEvent[]; failure: unknown }> {
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  try {
    for await (const event of stream) {
      expect(streamEventSchemaErrors(event), event.type).toEqual([]);
      events.push(event);
    }
    return { events, failure: null };
  } catch (failure) {
    return { events, failure };
  }
}

const weather: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
  strict: true,
};

describe('the Responses API on a llama-server-like engine', () => {
  it('answers a Response: the engine asked for a chat completion, its text as output_text', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const { data, response } = await client.responses
      .create({ model: 'tiny', instructions: 'Be brief.', input: 'hello', max_output_tokens: 16, temperature: 0, metadata: { app: 'test' } })
      .withResponse();
    expect(responseSchemaErrors(data)).toEqual([]);
    expect(data).toMatchObject({ object: 'response', status: 'completed', metadata: { app: 'test' }, usage: { input_tokens: 3, output_tokens: 2, total_tokens: 5 } });
    expect(data.id).toMatch(/^resp_/);
    expect(data.output_text).toBe('echo: hello');
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    expect(engine.since(from)).toMatchObject([
      {
        path: '/v1/chat/completions',
        authorization: `Bearer ${engineKey}`,
        body: { model: 'tiny', max_tokens: 16, temperature: 0, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hello' }] },
      },
    ]);
  });

  it('streams Responses events in OpenAI’s order, the deltas making the final text', async () => {
    const { client } = await startRouter();
    const { events, failure } = await collect(await client.responses.create({ model: 'small', input: 'stream it', stream: true }));
    expect(failure).toBeNull();
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(deltas).toBe('first second');
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.output).toMatchObject([{ type: 'message', content: [{ type: 'output_text', text: 'first second' }] }]);
    expect(completed.response.usage).toMatchObject({ input_tokens: 3, output_tokens: 2 });
    expect(engine.requests.at(-1)?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it('satisfies the SDK’s own stream accumulator (responses.stream), text and tool calls alike', async () => {
    const { client } = await startRouter();
    // ResponseStream checks each event against the items announced before it (indexes, ids, the
    // response's identity) and throws on any mismatch; its final response is built from the events.
    const text = await client.responses.stream({ model: 'small', input: 'stream it' }).finalResponse();
    expect(text.status).toBe('completed');
    expect(text.output_text).toBe('first second');
    const call = await client.responses.stream({ model: 'small', input: 'Oslo', tools: [weather], tool_choice: 'required' }).finalResponse();
    expect(call.output).toMatchObject([
      { type: 'message', content: [{ type: 'output_text', text: 'Calling. ' }] },
      { type: 'function_call', call_id: 'call_fake_1', name: 'weather', arguments: '{"echo":"Oslo"}' },
    ]);
  });

  it('gives a thinking model’s reasoning as a reasoning item before the message, whole, streamed and accumulated by the SDK', async () => {
    const { client } = await startRouter();
    const reasoning = FAKE_REASONING.join('');
    const whole = await client.responses.create({ model: 'small', input: 'mode:think' });
    expect(responseSchemaErrors(whole)).toEqual([]);
    expect(whole.output).toMatchObject([
      { type: 'reasoning', id: expect.stringMatching(/^rs_/) as unknown, summary: [], content: [{ type: 'reasoning_text', text: reasoning }], status: 'completed' },
      { type: 'message', content: [{ type: 'output_text', text: 'echo: mode:think' }] },
    ]);
    expect(whole.output_text).toBe('echo: mode:think');

    const { events, failure } = await collect(await client.responses.create({ model: 'small', input: 'mode:think', stream: true }));
    expect(failure).toBeNull();
    expect(events.map((e) => e.type).slice(2, 9)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
    ]);
    expect(events.flatMap((e) => (e.type === 'response.reasoning_text.delta' ? [e.delta] : []))).toEqual(FAKE_REASONING);
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.output).toMatchObject([
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: reasoning }] },
      { type: 'message', content: [{ type: 'output_text', text: 'first second' }] },
    ]);

    // The SDK's accumulator fills the reasoning item from its part and delta events.
    const accumulated = await client.responses.stream({ model: 'small', input: 'mode:think' }).finalResponse();
    expect(accumulated.output).toMatchObject([
      { type: 'reasoning', content: [{ type: 'reasoning_text', text: reasoning }], status: 'completed' },
      { type: 'message', content: [{ type: 'output_text', text: 'first second' }] },
    ]);
    expect(accumulated.output_text).toBe('first second');

    // The answer given back as the conversation so far: its reasoning is that turn's reasoning_content.
    const from = engine.requests.length;
    await client.responses.create({ model: 'small', input: [{ role: 'user', content: 'mode:think' }, ...(whole.output as OpenAI.Responses.ResponseInputItem[]), { role: 'user', content: 'again' }] });
    expect(engine.since(from)[0]?.body['messages']).toEqual([
      { role: 'user', content: 'mode:think' },
      { role: 'assistant', content: 'echo: mode:think', reasoning_content: reasoning },
      { role: 'user', content: 'again' },
    ]);
  });

  it('names the fallback that answers, and asks the engine for it', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const answer = await client.responses.create({ model: 'big', input: 'hello' });
    expect(answer.model).toBe('small');
    expect(engine.since(from)[0]?.body['model']).toBe('small');
  });

  it('calls a function tool: the flat tool nested for the chat API, the call a function_call item, and its output sent back as a tool message', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const answer = await client.responses.create({ model: 'small', input: 'Oslo', tools: [weather], tool_choice: { type: 'function', name: 'weather' }, parallel_tool_calls: false });
    expect(responseSchemaErrors(answer)).toEqual([]);
    expect(answer.output).toEqual([expect.objectContaining({ type: 'function_call', call_id: 'call_fake_1', name: 'weather', arguments: '{"echo":"Oslo"}', status: 'completed' })]);
    expect(answer.tools).toMatchObject([{ type: 'function', name: 'weather', strict: true }]);
    expect(engine.since(from)[0]?.body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'weather', description: 'The weather in a city', parameters: weather.parameters, strict: true } }],
      // A named function in the words that llama-server build reads (core/router/engine/request.ts): required, that tool alone.
      tool_choice: 'required',
      parallel_tool_calls: false,
    });

    const call = answer.output[0] as OpenAI.Responses.ResponseFunctionToolCall;
    const next = await client.responses.create({
      model: 'small',
      tools: [weather],
      tool_choice: 'none',
      input: [{ role: 'user', content: 'Oslo' }, call, { type: 'function_call_output', call_id: call.call_id, output: 'rain' }],
    });
    expect(next.output_text).toBe('echo: rain');
    expect(engine.requests.at(-1)?.body['messages']).toEqual([
      { role: 'user', content: 'Oslo' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_fake_1', type: 'function', function: { name: 'weather', arguments: '{"echo":"Oslo"}' } }] },
      { role: 'tool', tool_call_id: 'call_fake_1', content: 'rain' },
    ]);
  });

  it('streams a tool call as a function_call item whose argument deltas make its arguments', async () => {
    const { client } = await startRouter();
    const { events, failure } = await collect(await client.responses.create({ model: 'small', input: 'Oslo', tools: [weather], tool_choice: 'required', stream: true }));
    expect(failure).toBeNull();
    const types = events.map((e) => e.type);
    expect(types.slice(-6)).toEqual([
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    const args = events.flatMap((e) => (e.type === 'response.function_call_arguments.delta' ? [e.delta] : [])).join('');
    expect(args).toBe('{"echo":"Oslo"}');
    const completed = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
    expect(completed.response.output.map((item) => item.type)).toEqual(['message', 'function_call']);
    expect(completed.response.output[1]).toMatchObject({ call_id: 'call_fake_1', name: 'weather', arguments: '{"echo":"Oslo"}' });
  });
});

describe('refusals in the Responses API', () => {
  it('answers previous_response_id with a 400 saying responses are not kept, sending nothing', async () => {
    const { client, gateway } = await startRouter();
    const from = engine.requests.length;
    const error = await caught(client.responses.create({ model: 'small', input: 'again', previous_response_id: 'resp_earlier' }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe('previous_response_id');
    expect(error.message).toContain('keeps no responses');
    expect(engine.since(from)).toEqual([]);
    expect(gateway.claims).toEqual([]);
  });

  it('refuses an include value it cannot fill by name, sending nothing', async () => {
    const { client, gateway } = await startRouter();
    const from = engine.requests.length;
    const error = await caught(client.responses.create({ model: 'small', input: 'x', include: ['message.output_text.logprobs', 'reasoning.encrypted_content'] }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe('include[1]');
    expect(error.message).toContain('"reasoning.encrypted_content"');
    expect(engine.since(from)).toEqual([]);
    expect(gateway.claims).toEqual([]);
  });

  it('refuses tools by name on an engine that cannot call them', async () => {
    const { client } = await startRouter({}, { small: { toolCalls: false } });
    const from = engine.requests.length;
    const error = await caught(client.responses.create({ model: 'small', input: 'Oslo', tools: [weather] }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe('tools');
    expect(engine.since(from)).toEqual([]);
  });

  it('re-spells the engine’s error in OpenAI’s shape, the prompt field being input', async () => {
    const { client } = await startRouter();
    const error = await caught(client.responses.create({ model: 'small', input: 'mode:engine-400' }));
    expect(error.status).toBe(400);
    expect(error.code).toBe('context_length_exceeded');
    expect(error.param).toBe('input');
  });

  it('ends a stream the engine breaks off with an error event the SDK raises', async () => {
    const { client } = await startRouter();
    const { events, failure } = await collect(await client.responses.create({ model: 'small', input: 'mode:die-mid-stream', stream: true }));
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).code).toBe('engine_stream_interrupted');
    expect(events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('')).toBe('first second');
  });

  it('ends a stream opened while the model waits with an error event when the wait runs out', async () => {
    const { client } = await startRouter({ activationWaitMs: 50 });
    const { events, failure } = await collect(await client.responses.create({ model: 'blocked', input: 'hello', stream: true }));
    expect(events).toEqual([]);
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).code).toBe('model_loading');
  });
});
