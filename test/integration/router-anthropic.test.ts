// Anthropic's Messages API through the router: the official `@anthropic-ai/sdk` client → the
// router on 127.0.0.1 → a real HTTP fake engine (test/support/router-fake-engine.ts), with the
// scripted gateway (test/support/scripted-gateway.ts). A model's `anthropicMessages` says
// whether its engine serves the API itself (a recent llama-server: passed through) or speaks
// only chat completions (the embedded engine, older builds: translated); what the engine
// received shows which way the request went. The activation, claims, resend and hang handling
// are the chat endpoints' (router-activation.test.ts, router-engine-faults.test.ts); these tests
// prove the Messages API rides on them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  GatewayTimeoutError,
  NotFoundError,
  NotImplementedError,
  ServiceUnavailableError,
} from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LOOPBACK_ONLY_ACCESS, type RouterOptions } from '../../core/router/router.js';
import { ENGINE_MODEL_NAME, fakeTokens, renderTemplate, startDyingEngine } from '../support/router-fake-engine.js';
import type { ScriptedGateway, ScriptedModel } from '../support/scripted-gateway.js';
import { scriptedRouterHarness } from '../support/scripted-router.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const routers = scriptedRouterHarness();
const { engine, engineKey } = routers;
let dying: Awaited<ReturnType<typeof startDyingEngine>>;
/** An engine from before count_tokens and /apply-template: llama-server's 404 for every path. */
let ancient: http.Server;
let ancientUrl: string;

beforeAll(async () => {
  dying = await startDyingEngine();
  ancient = http.createServer((_req, res) => {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 404, message: 'File Not Found', type: 'not_found_error' } }));
  });
  await new Promise<void>((resolve) => ancient.listen(0, '127.0.0.1', resolve));
  ancientUrl = `http://127.0.0.1:${(ancient.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await dying.stop();
  ancient.closeAllConnections();
  await new Promise((resolve) => ancient.close(resolve));
});

async function startRouter(
  options: Partial<RouterOptions> & { clientKey?: string } = {},
  overrides: Partial<Record<string, Partial<ScriptedModel>>> = {},
): Promise<{ origin: string; port: number; gateway: ScriptedGateway; client: Anthropic }> {
  // Anthropic's SDKs add /v1/messages to the base URL themselves.
  const { router, gateway, origin } = await routers.start(overrides, options);
  const client = new Anthropic({ apiKey: options.clientKey ?? 'client-own-key', baseURL: origin, maxRetries: 0 });
  return { origin, port: router.port, gateway, client };
}

/** Every model's engine serves the Messages API itself. */
const native: Partial<Record<string, Partial<ScriptedModel>>> = { small: { anthropicMessages: true }, big: { anthropicMessages: true } };

async function caught(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error('expected the request to fail');
}

const hello: Anthropic.MessageParam[] = [{ role: 'user', content: 'hello' }];
const weather: Anthropic.Tool = { name: 'weather', description: 'The weather in a city', input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } };

describe('an engine that speaks only chat completions: translated', () => {
  it('answers a message through the engine’s chat completions, with the settings under their chat names and the engine key', async () => {
    const { client, gateway } = await startRouter();
    const from = engine.requests.length;
    // The SDK's types no longer list the sampling settings (Anthropic's newest models ignore
    // them), but it sends what it is given, and local tools still set them.
    const sampling = { temperature: 0.3, top_p: 0.8, top_k: 7 };
    const request = { model: 'tiny', max_tokens: 32, system: 'Be brief.', messages: hello, stop_sequences: ['END'], ...sampling };
    const { data, response } = await client.messages.create(request as Anthropic.MessageCreateParamsNonStreaming).withResponse();
    expect(data).toMatchObject({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'echo: hello' }], model: ENGINE_MODEL_NAME, stop_reason: 'end_turn' });
    expect(data.usage).toMatchObject({ input_tokens: 3, output_tokens: 2 });
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    const seen = engine.since(from);
    expect(seen.map((r) => r.path)).toEqual(['/v1/chat/completions']);
    expect(seen[0]?.authorization).toBe(`Bearer ${engineKey}`);
    expect(seen[0]?.body).toEqual({
      model: 'tiny',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
      ],
      max_tokens: 32,
      stop: ['END'],
      temperature: 0.3,
      top_p: 0.8,
      top_k: 7,
    });
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(gateway.startedTotal), UNTIL_SEEN);
  });

  it('streams Anthropic’s event sequence as the engine’s chunks arrive: the first text before the engine writes the second', async () => {
    const { client } = await startRouter();
    const stream = await client.messages.create({ model: 'small', max_tokens: 32, messages: [{ role: 'user', content: 'mode:gated' }], stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    const seen: Anthropic.RawMessageStreamEvent[] = [];
    while (!seen.some((e) => e.type === 'content_block_delta')) {
      const next = await iterator.next();
      if (next.done === true) throw new Error('the stream ended before its first text');
      seen.push(next.value);
    }
    // The engine is still holding its second chunk: what arrived was streamed, not collected.
    expect(seen.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
    engine.release();
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) seen.push(next.value);
    expect(seen.map((e) => e.type).slice(3)).toEqual(['content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    const text = seen.map((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '')).join('');
    expect(text).toBe('first second');
    expect(seen.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 2, input_tokens: 3 } });
  });

  it('gives the SDK’s message stream helper a final message it can assemble', async () => {
    const { client } = await startRouter();
    const message = await client.messages.stream({ model: 'small', max_tokens: 32, messages: hello }).finalMessage();
    expect(message.content).toEqual([{ type: 'text', text: 'first second' }]);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage).toMatchObject({ input_tokens: 3, output_tokens: 2 });
  });

  it('asks the engine for the fallback and names it in the answer and in message_start', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const { data, response } = await client.messages.create({ model: 'big', max_tokens: 16, messages: hello }).withResponse();
    expect(data.model).toBe('small');
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    expect(engine.since(from)[0]?.body['model']).toBe('small');
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ model: 'big', max_tokens: 16, messages: hello, stream: true })) events.push(event);
    expect(events[0]).toMatchObject({ type: 'message_start', message: { model: 'small' } });
  });

  it('refuses a block the chat API cannot carry with a 400 naming it and the engine, after claiming nothing for longer than the refusal', async () => {
    const { client, gateway } = await startRouter();
    const from = engine.requests.length;
    const error = await caught(
      client.messages.create({
        model: 'small',
        max_tokens: 16,
        messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }],
      }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.type).toBe('invalid_request_error');
    expect(error.apiMessage).toContain('messages[0].content[0]');
    expect(error.apiMessage).toContain("'small'");
    expect(engine.since(from)).toEqual([]);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(gateway.startedTotal), UNTIL_SEEN);
  });


  it('translates tools, tool_choice and tool turns to the chat API and the engine’s tool_calls back to tool_use blocks', async () => {
    // The embedded engine takes a named function as it is (llama-server's words: the next describe).
    const { client } = await startRouter({}, { small: { engine: 'embedded' } });
    const from = engine.requests.length;
    const message = await client.messages.create({
      model: 'small',
      max_tokens: 32,
      tools: [weather],
      tool_choice: { type: 'tool', name: 'weather', disable_parallel_tool_use: true },
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: [{ type: 'text', text: 'Checking.' }, { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'rain' }] }, { type: 'text', text: 'And Bergen?' }] },
      ],
    });
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([{ type: 'tool_use', id: 'call_fake_1', name: 'weather', input: { echo: 'And Bergen?' } }]);
    const seen = engine.since(from);
    expect(seen.map((r) => r.path)).toEqual(['/v1/chat/completions']);
    expect(seen[0]?.body).toMatchObject({
      tools: [{ type: 'function', function: { name: 'weather', description: 'The weather in a city', parameters: weather.input_schema } }],
      tool_choice: { type: 'function', function: { name: 'weather' } },
      parallel_tool_calls: false,
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: 'Checking.', tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'rain' },
        { role: 'user', content: [{ type: 'text', text: 'And Bergen?' }] },
      ],
    });
  });

  it('streams a tool call as a tool_use block whose input_json_delta pieces the SDK joins into the input', async () => {
    const { client } = await startRouter();
    const stream = client.messages.stream({ model: 'small', max_tokens: 32, tools: [weather], tool_choice: { type: 'any' }, messages: [{ role: 'user', content: 'Oslo' }] });
    const events: Anthropic.RawMessageStreamEvent[] = [];
    stream.on('streamEvent', (event) => events.push(event));
    const message = await stream.finalMessage();
    expect(message.stop_reason).toBe('tool_use');
    expect(message.content).toEqual([
      { type: 'text', text: 'Calling. ' },
      { type: 'tool_use', id: 'call_fake_1', name: 'weather', input: { echo: 'Oslo' } },
    ]);
    expect(events.map((e) => (e.type === 'content_block_delta' ? `${e.type}:${e.index}:${e.delta.type}` : 'index' in e ? `${e.type}:${e.index}` : e.type))).toEqual([
      'message_start',
      'content_block_start:0',
      'content_block_delta:0:text_delta',
      'content_block_stop:0',
      'content_block_start:1',
      'content_block_delta:1:input_json_delta',
      'content_block_delta:1:input_json_delta',
      'content_block_stop:1',
      'message_delta',
      'message_stop',
    ]);
    expect(engine.requests.at(-1)?.body).toMatchObject({ tool_choice: 'required', stream: true });
  });

  it('refuses a server tool and an image inside a tool result by name, sending nothing', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const server = await caught(
      client.messages.create({ model: 'small', max_tokens: 16, messages: hello, tools: [{ type: 'web_search_20250305', name: 'web_search' }] as Anthropic.ToolUnion[] }),
    );
    expect(server).toBeInstanceOf(BadRequestError);
    expect(server.apiMessage).toContain("'tools[0].type'");
    expect(server.apiMessage).toContain('web_search_20250305');
    const image = await caught(
      client.messages.create({
        model: 'small',
        max_tokens: 16,
        tools: [weather],
        messages: [
          { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'weather', input: {} }] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } }] }] },
        ],
      }),
    );
    expect(image).toBeInstanceOf(BadRequestError);
    expect(image.apiMessage).toContain('messages[1].content[0].content[0]');
    expect(image.apiMessage).toContain('"image" block');
    expect(engine.since(from)).toEqual([]);
  });

  it('re-spells the engine’s own error in Anthropic’s shape, keeping its status, message and type', async () => {
    const { client } = await startRouter();
    const error = await caught(client.messages.create({ model: 'small', max_tokens: 16, messages: [{ role: 'user', content: 'mode:engine-400' }] }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.apiMessage).toBe('the request exceeds the available context size');
    expect(error.errorCode).toBe('context_length_exceeded');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('engine');
    expect(error.headers?.get('access-control-allow-origin')).toBeNull();
  });

  it('ends a stream with an error event the SDK raises when the engine dies mid-answer', async () => {
    const { client, gateway } = await startRouter();
    const stream = await client.messages.create({ model: 'small', max_tokens: 16, messages: [{ role: 'user', content: 'mode:die-mid-stream' }], stream: true });
    let text = '';
    const failure = await (async () => {
      try {
        for await (const event of stream) if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
        return null;
      } catch (error) {
        return error;
      }
    })();
    expect(text).toBe('first second');
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).errorCode).toBe('engine_stream_interrupted');
    expect((failure as APIError).apiMessage).toContain("'small'");
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(gateway.startedTotal), UNTIL_SEEN);
  });

  it('counts tokens with the engine’s own template and tokenizer: /apply-template, then /tokenize with the sequence start', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const messages: Anthropic.MessageParam[] = [
      { role: 'user', content: 'How many?' },
      { role: 'assistant', content: [{ type: 'text', text: 'Count ' }, { type: 'text', text: 'them.' }] },
    ];
    const { data, response } = await client.messages.countTokens({ model: 'small', system: 'S', messages }).withResponse();
    const seen = engine.since(from);
    expect(seen.map((r) => r.path)).toEqual(['/apply-template', '/tokenize']);
    const turns = [{ role: 'system', content: 'S' }, { role: 'user', content: 'How many?' }, { role: 'assistant', content: [{ type: 'text', text: 'Count ' }, { type: 'text', text: 'them.' }] }];
    expect(seen[0]?.body).toEqual({ messages: turns });
    expect(seen[1]?.body).toEqual({ content: renderTemplate(turns), add_special: true, parse_special: true });
    expect(data.input_tokens).toBe(fakeTokens(renderTemplate(turns), true).length);
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
  });

  it('counts the tools too: they go to /apply-template in chat words, as the template writes them into the prompt', async () => {
    const { client } = await startRouter();
    const from = engine.requests.length;
    const tool = { name: 'read', description: 'reads', input_schema: { type: 'object' as const, properties: {} } };
    await client.messages.countTokens({ model: 'small', messages: hello, tools: [tool], tool_choice: { type: 'auto' } });
    expect(engine.since(from)[0]?.body).toEqual({
      messages: [{ role: 'user', content: 'hello' }],
      tools: [{ type: 'function', function: { name: 'read', description: 'reads', parameters: tool.input_schema } }],
      tool_choice: 'auto',
    });
  });

  it('says with a 501 that an engine without count_tokens, /apply-template or /tokenize cannot count', async () => {
    const { client } = await startRouter({}, { small: { engineUrl: ancientUrl } });
    const error = await caught(client.messages.countTokens({ model: 'small', messages: hello }));
    expect(error).toBeInstanceOf(NotImplementedError);
    expect(error.errorCode).toBe('count_tokens_unsupported');
    expect(error.apiMessage).toContain('/apply-template');
  });

  it('resends a request whose engine reset the connection to the relaunched engine, translated again', async () => {
    const { client, gateway } = await startRouter({}, { small: { engineUrl: dying.url, onUnreachable: 'died', loadMs: 5 } });
    const before = dying.connections();
    const message = await client.messages.create({ model: 'small', max_tokens: 16, messages: hello });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: hello' }]);
    expect(dying.connections()).toBeGreaterThan(before);
    expect(gateway.calls).toContain(`engineUnreachable:small@${dying.url}`);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(gateway.startedTotal), UNTIL_SEEN);
  });
});

describe('an engine that serves the Messages API itself: passed through', () => {
  it('sends the request as it is, blocks it could not translate included, and relays the answer', async () => {
    const { client } = await startRouter({}, native);
    const from = engine.requests.length;
    const request = {
      model: 'small',
      max_tokens: 16,
      messages: [{ role: 'user' as const, content: [{ type: 'text' as const, text: 'see' }, { type: 'image' as const, source: { type: 'url' as const, url: 'https://example.com/a.png' } }] }],
      tools: [{ name: 'read', description: 'reads', input_schema: { type: 'object' as const, properties: {} } }],
    };
    const { data, response } = await client.messages.create(request).withResponse();
    expect(data).toMatchObject({ id: 'msg_1', content: [{ type: 'text', text: 'native: see' }], model: ENGINE_MODEL_NAME, stop_reason: 'end_turn' });
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    const seen = engine.since(from);
    expect(seen.map((r) => r.path)).toEqual(['/v1/messages']);
    expect(seen[0]?.body).toEqual(request);
    expect(seen[0]?.authorization).toBe(`Bearer ${engineKey}`);
  });

  it('translates what the engine’s own conversion misreads — a named tool, none, no parallel calls — into chat words llama-server reads as meant', async () => {
    const { client } = await startRouter({}, native);
    const time = { name: 'time', description: 'The time now', input_schema: { type: 'object' as const, properties: {} } };
    const from = engine.requests.length;
    const named = await client.messages.create({ model: 'small', max_tokens: 32, tools: [weather, time], tool_choice: { type: 'tool', name: 'time' }, messages: hello });
    expect(named.content).toMatchObject([{ type: 'tool_use', name: 'time' }]);
    await client.messages.create({ model: 'small', max_tokens: 32, tools: [weather, time], tool_choice: { type: 'none' }, messages: hello });
    await client.messages.create({ model: 'small', max_tokens: 32, tools: [weather, time], tool_choice: { type: 'any', disable_parallel_tool_use: true }, messages: hello });
    const seen = engine.since(from);
    expect(seen.map((r) => r.path)).toEqual(['/v1/chat/completions', '/v1/chat/completions', '/v1/chat/completions']);
    expect(seen[0]?.body).toMatchObject({ tools: [{ function: { name: 'time' } }], tool_choice: 'required' });
    expect(seen[0]?.body['tools']).toHaveLength(1);
    expect(seen[1]?.body).toMatchObject({ tool_choice: 'none' });
    expect(seen[2]?.body).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false });
    expect(seen[2]?.body['tools']).toHaveLength(2);
    // What the conversion reads right still goes to the engine's own Messages API.
    await client.messages.create({ model: 'small', max_tokens: 32, tools: [weather], tool_choice: { type: 'any' }, messages: hello });
    expect(engine.since(from).at(-1)?.path).toBe('/v1/messages');
  });

  it('says, when the translation it took for the tool choice cannot carry a block, that the engine would have taken it with another choice', async () => {
    const { client } = await startRouter({}, native);
    const from = engine.requests.length;
    const image = { type: 'image' as const, source: { type: 'url' as const, url: 'https://example.com/a.png' } };
    const error = await caught(
      client.messages.create({ model: 'small', max_tokens: 32, tools: [weather], tool_choice: { type: 'tool', name: 'weather' }, messages: [{ role: 'user', content: [{ type: 'text', text: 'see' }, image] }] }),
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toContain('would misread its tool_choice');
    expect(error.message).not.toContain('A llama-server build that serves /v1/messages itself takes the request as it is');
    // That server does serve the Messages API: the refusal does not say it speaks only the chat API.
    expect(error.message).not.toContain("speaks only OpenAI's chat API");
    expect(error.message).toContain('cannot carry');
    expect(engine.since(from)).toEqual([]);
  });

  it('refuses a named tool that is not among the tools, in Anthropic’s shape, sending nothing', async () => {
    const { client } = await startRouter({}, native);
    const from = engine.requests.length;
    const error = await caught(client.messages.create({ model: 'small', max_tokens: 32, tools: [weather], tool_choice: { type: 'tool', name: 'tide' }, messages: hello }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toContain("'tide'");
    expect(engine.since(from)).toEqual([]);
  });

  it('streams the engine’s own events through', async () => {
    const { client } = await startRouter({}, native);
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ model: 'small', max_tokens: 16, messages: hello, stream: true })) events.push(event);
    expect(events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'content_block_delta', 'content_block_stop', 'message_delta', 'message_stop']);
    expect(events[0]).toMatchObject({ message: { model: ENGINE_MODEL_NAME } });
  });

  it('names the fallback in the answer and in message_start, and asks the engine for it', async () => {
    const { client } = await startRouter({}, native);
    const from = engine.requests.length;
    expect((await client.messages.create({ model: 'big', max_tokens: 16, messages: hello })).model).toBe('small');
    expect(engine.since(from)[0]?.body['model']).toBe('small');
    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ model: 'big', max_tokens: 16, messages: hello, stream: true })) events.push(event);
    expect(events[0]).toMatchObject({ type: 'message_start', message: { model: 'small' } });
    expect(events.map((e) => e.type).at(-1)).toBe('message_stop');
  });

  it('re-spells the engine’s OpenAI-shaped error, as llama-server answers on its /v1/messages', async () => {
    const { client } = await startRouter({}, native);
    const error = await caught(client.messages.create({ model: 'small', max_tokens: 16, messages: [{ role: 'user', content: 'mode:engine-400' }] }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.type).toBe('invalid_request_error');
    expect(error.apiMessage).toBe('the request exceeds the available context size');
  });

  it('ends the engine’s stream with an Anthropic error event when the engine dies mid-answer', async () => {
    const { client } = await startRouter({}, native);
    const stream = await client.messages.create({ model: 'small', max_tokens: 16, messages: [{ role: 'user', content: 'mode:die-mid-stream' }], stream: true });
    const failure = await (async () => {
      try {
        for await (const _event of stream);
        return null;
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).errorCode).toBe('engine_stream_interrupted');
  });

  it('passes count_tokens to the engine', async () => {
    const { client } = await startRouter({}, native);
    const from = engine.requests.length;
    const counted = await client.messages.countTokens({ model: 'small', messages: hello });
    expect(engine.since(from).map((r) => r.path)).toEqual(['/v1/messages/count_tokens']);
    expect(counted.input_tokens).toBe(fakeTokens(renderTemplate([{ role: 'user', content: 'hello' }]), true).length);
  });
});

describe('the router’s own answers, in Anthropic’s shape', () => {
  it('refuses a request without max_tokens with a 400 naming it, before anything is loaded', async () => {
    const { client, gateway } = await startRouter();
    const error = await caught(client.messages.create({ model: 'cold', messages: hello } as unknown as Anthropic.MessageCreateParamsNonStreaming));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.type).toBe('invalid_request_error');
    expect(error.apiMessage).toContain("'max_tokens'");
    expect(error.headers?.get('x-llmtray-error-source')).toBe('router');
    expect(gateway.calls).toEqual([]);
    expect(gateway.loadsStarted.size).toBe(0);
  });

  it('refuses an unknown model with 404 naming the models that exist', async () => {
    const { client } = await startRouter();
    const error = await caught(client.messages.create({ model: 'claude-opus', max_tokens: 16, messages: hello }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.type).toBe('not_found_error');
    expect(error.errorCode).toBe('model_not_found');
    expect(error.apiMessage).toContain("'claude-opus'");
    expect(error.apiMessage).toContain('small');
  });

  it('refuses a quarantined model with 503 and its reason, telling the SDK not to retry', async () => {
    const { client } = await startRouter();
    const error = await caught(client.messages.create({ model: 'broken', max_tokens: 16, messages: hello }));
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error.type).toBe('overloaded_error');
    expect(error.errorCode).toBe('model_quarantined');
    expect(error.apiMessage).toContain('unknown model architecture');
    expect(error.headers?.get('x-should-retry')).toBe('false');
  });

  it('answers 503 model_loading with Retry-After and what it waits for when the model is not ready in time', async () => {
    const { client } = await startRouter({ activationWaitMs: 50, retryAfterSeconds: 7 });
    const error = await caught(client.messages.create({ model: 'blocked', max_tokens: 16, messages: hello }));
    expect(error).toBeInstanceOf(ServiceUnavailableError);
    expect(error.errorCode).toBe('model_loading');
    expect(error.apiMessage).toContain('held by active small');
    expect(error.headers?.get('retry-after')).toBe('7');
  });

  it('waits for a cold model and answers once it is loaded, as for chat', async () => {
    const { client, gateway } = await startRouter();
    const message = await client.messages.create({ model: 'cold', max_tokens: 16, messages: hello });
    expect(message.content).toEqual([{ type: 'text', text: 'echo: hello' }]);
    expect(gateway.loadsStarted.get('cold')).toBe(1);
  });

  it('answers 504 engine_hung when the engine is found hung before it answers, and an error event when mid-stream', async () => {
    const { client } = await startRouter({}, { small: { lostAtClaim: 'it made no progress for 60 s with 1 request in flight' } });
    const error = await caught(client.messages.create({ model: 'small', max_tokens: 16, messages: hello }));
    expect(error).toBeInstanceOf(GatewayTimeoutError);
    expect(error.type).toBe('timeout_error');
    expect(error.errorCode).toBe('engine_hung');
    expect(error.apiMessage).toContain('made no progress for 60 s');

    const { client: streaming, gateway } = await startRouter();
    const stream = await streaming.messages.create({ model: 'small', max_tokens: 16, messages: [{ role: 'user', content: 'mode:hang' }], stream: true });
    const failure = await (async () => {
      try {
        for await (const event of stream) if (event.type === 'content_block_delta') gateway.loseEngine('small', 'it made no progress for 60 s');
        return null;
      } catch (caughtError) {
        return caughtError;
      }
    })();
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).type).toBe('timeout_error');
    expect((failure as APIError).errorCode).toBe('engine_hung');
  });

  it('takes the configured key as x-api-key (Anthropic’s header) or as Bearer, and refuses others in Anthropic’s shape', async () => {
    const { origin, client } = await startRouter({
      access: () => ({ ...LOOPBACK_ONLY_ACCESS, clientKeys: [{ name: 'app', key: 'shared-secret' }] }),
      clientKey: 'shared-secret',
    });
    expect((await client.messages.create({ model: 'small', max_tokens: 16, messages: hello })).content).toHaveLength(1);
    const viaHeader = new Anthropic({ apiKey: null, defaultHeaders: { 'x-api-key': 'shared-secret' }, baseURL: origin, maxRetries: 0 });
    expect((await viaHeader.messages.countTokens({ model: 'small', messages: hello })).input_tokens).toBeGreaterThan(0);

    const wrong = new Anthropic({ apiKey: null, defaultHeaders: { 'x-api-key': 'guess' }, baseURL: origin, maxRetries: 0 });
    const error = await caught(wrong.messages.create({ model: 'small', max_tokens: 16, messages: hello }));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.type).toBe('authentication_error');
    expect(error.apiMessage).toContain('`x-api-key`');
  });

  it('answers a wrong method and an unknown Messages path in Anthropic’s shape', async () => {
    const { origin } = await startRouter();
    const get = await fetch(`${origin}/v1/messages`);
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(await get.json()).toMatchObject({ type: 'error', error: { type: 'invalid_request_error', details: { error_code: 'method_not_allowed' } } });
    const batches = await fetch(`${origin}/v1/messages/batches`, { method: 'POST', body: '{}' });
    expect(batches.status).toBe(404);
    expect(await batches.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });
});
