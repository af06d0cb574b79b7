// The router end to end: the official `openai` client → the router on 127.0.0.1 → a real
// HTTP engine that speaks the OpenAI subset llama-server does (test/support/router-fake-engine.ts).
// The model gateway is a scripted in-memory object standing in for controller + supervisor +
// catalog (test/support/scripted-gateway.ts), so each test can make a model cold, quarantined,
// left out of the plan, kept out by a busy one, falling back, or its engine found hung while it
// answers. Anthropic's Messages API on the same router: router-anthropic.test.ts.
import http from 'node:http';
import OpenAI, { APIError, AuthenticationError, BadRequestError, NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LOOPBACK_ONLY_ACCESS, type RouterAccess, type RouterOptions } from '../../core/router/router.js';
import type { RouterModelEntry } from '../../core/router/model-gateway.js';
import { ENGINE_MODEL_NAME, startDyingEngine } from '../support/router-fake-engine.js';
import { scriptedModels, type ScriptedClaim, type ScriptedGateway } from '../support/scripted-gateway.js';
import { scriptedRouterHarness } from '../support/scripted-router.js';
import { rawExchange, type RawAnswer } from '../support/raw-http.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const routers = scriptedRouterHarness();
const { engine, engineKey } = routers;
let dying: Awaited<ReturnType<typeof startDyingEngine>>;

beforeAll(async () => {
  dying = await startDyingEngine();
});
afterAll(async () => {
  await dying.stop();
});

async function startRouter(
  options: Partial<RouterOptions> = {},
  overrides: Parameters<typeof scriptedModels>[0] = {},
  listen: { host?: string; clientKey?: string } = {},
): Promise<{ url: string; port: number; gateway: ScriptedGateway; client: OpenAI }> {
  const { router, gateway } = await routers.start(overrides, options, { host: listen.host });
  const client = new OpenAI({ apiKey: listen.clientKey ?? 'client-own-key', baseURL: router.url, maxRetries: 0 });
  return { url: router.url, port: router.port, gateway, client };
}

/** Access with these settings, the rest as on a loopback listener. */
function access(settings: Partial<RouterAccess>): () => RouterAccess {
  return () => ({ ...LOOPBACK_ONLY_ACCESS, ...settings });
}

/** A raw request, for what the SDK will not send (a hostile Host, broken JSON, chunked bodies). */
function rawRequest(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer[]; host?: string },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; json: { error?: { message: string; param: string | null; code: string | null } } }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: options.host ?? '127.0.0.1', port, method: options.method ?? 'POST', path: options.path, headers: options.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text === '' ? {} : JSON.parse(text) });
      });
    });
    req.on('error', reject);
    if (Array.isArray(options.body)) for (const part of options.body) req.write(part);
    else if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

async function caught(promise: Promise<unknown>): Promise<APIError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof APIError) return error;
    throw error;
  }
  throw new Error('expected the request to fail');
}

const hello = [{ role: 'user' as const, content: 'hello' }];

describe('routing and answering', () => {
  it('answers a non-stream chat through the engine with the engine key, never the client key', async () => {
    const { client, gateway } = await startRouter();
    const before = engine.requests.length;
    const { data, response } = await client.chat.completions.create({ model: 'small', messages: hello }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hello');
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
    const seen = engine.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]?.authorization).toBe(`Bearer ${engineKey}`);
    expect(gateway.calls).toEqual([]);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(gateway.startedTotal), UNTIL_SEEN);
    expect(gateway.startedTotal).toBe(1);
  });

  it('leaves no listener on a claim once its answer is over, streamed or not (a claim may outlive its exchange)', async () => {
    const { client, gateway } = await startRouter();
    const listening = new Set<() => void>();
    const claimOf = gateway.claim.bind(gateway);
    gateway.claim = (modelId) => {
      const claim = claimOf(modelId);
      if (claim === null) return null;
      const { lost } = claim;
      return {
        ...claim,
        lost: {
          get aborted() {
            return lost.aborted;
          },
          get reason() {
            return lost.reason;
          },
          addEventListener: (type, listener) => {
            listening.add(listener);
            lost.addEventListener(type, listener);
          },
          removeEventListener: (type, listener) => {
            listening.delete(listener);
            lost.removeEventListener(type, listener);
          },
        },
      };
    };
    await client.chat.completions.create({ model: 'small', messages: hello });
    const stream = await client.chat.completions.create({ model: 'small', messages: hello, stream: true });
    for await (const chunk of stream) expect(chunk.model).toBeDefined();
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(2), UNTIL_SEEN);
    await vi.waitFor(() => expect(listening.size).toBe(0), UNTIL_SEEN);
  });

  it('routes an alias to its model', async () => {
    const { client } = await startRouter();
    const { response } = await client.chat.completions.create({ model: 'tiny', messages: hello }).withResponse();
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
  });

  it('streams a chat chunk by chunk: the first chunk arrives before the engine writes the second', async () => {
    const { client } = await startRouter();
    const stream = await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:gated' }], stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.done).toBe(false);
    expect(first.value?.choices[0]?.delta.content).toBe('first ');
    engine.release();
    const rest: string[] = [];
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) rest.push(next.value.choices[0]?.delta.content ?? '');
    expect(rest.join('')).toBe('second');
  });

  it('answers completions and embeddings', async () => {
    const { client } = await startRouter();
    const completion = await client.completions.create({ model: 'small', prompt: 'once upon' });
    expect(completion.choices[0]?.text).toBe('echo: once upon');
    const embedding = await client.embeddings.create({ model: 'small', input: 'a sentence', encoding_format: 'float' });
    expect(embedding.data[0]?.embedding).toEqual([0.25, 0.5]);
  });

  it('lists every catalog model with its state as extra fields', async () => {
    const { client } = await startRouter();
    const page = await client.models.list();
    const entries = page.data as unknown as RouterModelEntry[];
    expect(entries.map((m) => m.id).sort()).toEqual(['big', 'blocked', 'broken', 'cold', 'huge', 'never', 'small']);
    expect(entries.find((m) => m.id === 'broken')).toMatchObject({ object: 'model', state: 'quarantined' });
    expect(entries.find((m) => m.id === 'big')).toMatchObject({ state: 'fallback', served_by: 'small' });
    const one = await client.models.retrieve('tiny');
    expect(one.id).toBe('small');
  });

  it('refuses an unknown model with 404 naming the models that exist', async () => {
    const { client } = await startRouter();
    const error = await caught(client.chat.completions.create({ model: 'gpt-5', messages: hello }));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(error.code).toBe('model_not_found');
    expect(error.param).toBe('model');
    expect(error.message).toContain("'gpt-5'");
    for (const id of ['small', 'big', 'cold', 'broken']) expect(error.message).toContain(id);
    expect(error.headers?.get('x-llmtray-error-source')).toBe('router');
  });

  it('answers an engine error in OpenAI’s shape (a string code, OpenAI’s type, the param), marked as the engine’s', async () => {
    const { client } = await startRouter();
    const error = await caught(client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:engine-400' }] }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.message).toContain('exceeds the available context size');
    expect(error.code).toBe('context_length_exceeded');
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe('messages');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('engine');
    const completion = await caught(client.completions.create({ model: 'small', prompt: 'mode:engine-400' }));
    expect(completion.param).toBe('prompt');
  });
});

describe('request fields an engine cannot honour (request-fields.ts)', () => {
  it('refuses a field no engine honours with a 400 naming it, before anything is claimed', async () => {
    const { client, gateway } = await startRouter();
    const from = engine.requests.length;
    const request = { model: 'small', messages: hello, functions: [{ name: 'lookup', parameters: { type: 'object' } }] };
    const error = await caught(client.chat.completions.create(request as OpenAI.ChatCompletionCreateParamsNonStreaming));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe('functions');
    expect(error.message).toContain('send `tools`');
    expect(engine.since(from)).toEqual([]);
    expect(gateway.startedTotal).toBe(0);
  });

  it('refuses a field the claimed engine cannot honour, naming the model, and passes it to one that can', async () => {
    const biased = { model: 'small', messages: hello, logit_bias: { '42': -100 } };
    const embedded = await startRouter({}, { small: { engine: 'embedded' } });
    const from = engine.requests.length;
    const error = await caught(embedded.client.chat.completions.create(biased));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe('logit_bias');
    expect(error.message).toContain("'small'");
    expect(engine.since(from)).toEqual([]);
    await vi.waitFor(() => expect(embedded.gateway.finishedTotal).toBe(embedded.gateway.startedTotal), UNTIL_SEEN);

    const llamaServer = await startRouter();
    await llamaServer.client.chat.completions.create(biased);
    expect(engine.since(from).map((r) => r.body['logit_bias'])).toEqual([{ '42': -100 }]);
  });
});

describe('tools for an engine build that cannot call them', () => {
  it('refuses them with a 400 naming the field and the model (a llama-server without --jinja would answer as if none were sent)', async () => {
    const { client } = await startRouter({}, { small: { toolCalls: false } });
    const from = engine.requests.length;
    const tools = [{ type: 'function' as const, function: { name: 'read', parameters: { type: 'object' } } }];
    const error = await caught(client.chat.completions.create({ model: 'small', messages: hello, tools }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe('tools');
    expect(error.message).toContain("'small'");
    expect(error.message).toContain('--jinja');
    expect(engine.since(from)).toEqual([]);
    // Without tools it still answers.
    await client.chat.completions.create({ model: 'small', messages: hello });
  });
});

describe('on-demand activation', () => {
  it('refuses a quarantined model at once with its reason, without asking for it', async () => {
    const { client, gateway } = await startRouter();
    const error = await caught(client.chat.completions.create({ model: 'broken', messages: hello }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_quarantined');
    expect(error.message).toContain('unknown model architecture');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('router');
    expect(gateway.calls).toEqual([]);
    expect(gateway.nextChanges).toBe(0);
  });

  it('refuses a strictly unschedulable model after exactly one fresh controller pass, without waiting for a change', async () => {
    const { client, gateway } = await startRouter();
    const error = await caught(client.chat.completions.create({ model: 'huge', messages: hello }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_unschedulable');
    expect(error.message).toContain('needs 30.0 GB; 24.0 GB budget');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(gateway.calls).toEqual(['demand:huge', 'wait:huge', 'reconcileNow']);
    expect(gateway.nextChanges).toBe(0);
    expect(gateway.waiting.get('huge')).toBe(0);
    expect(gateway.startedTotal).toBe(0);
  });

  it('serves a model left out of a stale plan once the fresh pass finds room', async () => {
    const { client, gateway } = await startRouter({}, { huge: { onReconcile: 'room-made' } });
    const answer = await client.chat.completions.create({ model: 'huge', messages: hello });
    expect(answer.choices[0]?.message.content).toBe('echo: hello');
    expect(gateway.calls.slice(0, 3)).toEqual(['demand:huge', 'wait:huge', 'reconcileNow']);
  });

  it('waits for a model kept out only by a busy one, looking again at each change, and serves it once it can be claimed', async () => {
    const { client, gateway } = await startRouter();
    const answer = client.chat.completions.create({ model: 'blocked', messages: hello });
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    expect(gateway.waiting.get('blocked')).toBe(1);
    // A change that makes no room (another model's state, say): the request asks again and waits on.
    gateway.changed();
    await vi.waitFor(() => expect(gateway.nextChanges).toBe(2), UNTIL_SEEN);
    expect(gateway.parked).toBe(1);
    expect(gateway.startedTotal).toBe(0);
    gateway.setState('blocked', 'ready');
    expect((await answer).choices[0]?.message.content).toBe('echo: hello');
    expect(gateway.calls).toEqual(['demand:blocked', 'wait:blocked']); // never a reconcileNow: nothing said it will not come
    expect(gateway.claims.map((c) => c.servedBy)).toEqual(['blocked']);
    expect(gateway.waiting.get('blocked')).toBe(0);
  });

  it('holds a request for a ready model whose turn is over until its turn comes again', async () => {
    const { client, gateway } = await startRouter({}, { small: { turnOver: true } });
    const before = engine.requests.length;
    const answer = client.chat.completions.create({ model: 'small', messages: hello });
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    expect(engine.requests.length).toBe(before);
    expect(gateway.startedTotal).toBe(0);
    gateway.setTurnOver('small', false);
    expect((await answer).choices[0]?.message.content).toBe('echo: hello');
    expect(gateway.startedTotal).toBe(1);
  });

  it('waits for a cold model, then answers; concurrent requests start one load', async () => {
    const { client, gateway } = await startRouter();
    // 'never' loads only when the test says so: all four requests are waiting by then, however
    // slowly a busy machine delivers them (a timed load let late ones find it ready).
    const answers = Promise.all(
      [1, 2, 3, 4].map((n) => client.chat.completions.create({ model: 'never', messages: [{ role: 'user', content: `request ${n}` }] })),
    );
    await vi.waitFor(() => expect(gateway.parked).toBe(4), UNTIL_SEEN);
    gateway.setState('never', 'ready');
    expect((await answers).map((a) => a.choices[0]?.message.content)).toEqual(['echo: request 1', 'echo: request 2', 'echo: request 3', 'echo: request 4']);
    expect(gateway.calls.filter((call) => call === 'demand:never')).toHaveLength(4);
    expect(gateway.loadsStarted.get('never')).toBe(1);
    expect(gateway.waiting.get('never')).toBe(0);
    await vi.waitFor(() => expect(gateway.inFlight('never')).toBe(0), UNTIL_SEEN);
  });

  it('answers 503 model_loading with Retry-After and the gateway’s reason when the model is not ready within the wait', async () => {
    const { client, gateway } = await startRouter({ activationWaitMs: 30, retryAfterSeconds: 7 });
    const error = await caught(client.chat.completions.create({ model: 'blocked', messages: hello }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_loading');
    expect(error.headers?.get('retry-after')).toBe('7');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('router');
    expect(error.message).toContain("'blocked'");
    expect(error.message).toContain('it is waiting for memory: needs 6.0 GB; 2.0 GB free, 4.0 GB held by active small');
    expect(gateway.startedTotal).toBe(0);
    expect(gateway.waiting.get('blocked')).toBe(0);
    expect(gateway.parked).toBe(0);
  });

  it('refuses a waiting request as soon as its model is quarantined, with the reason', async () => {
    const { client, gateway } = await startRouter();
    const pending = caught(client.chat.completions.create({ model: 'never', messages: hello }));
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    gateway.setState('never', 'quarantined', 'Out of memory at every level, and no fallback is configured.');
    const error = await pending;
    expect(error.code).toBe('model_quarantined');
    expect(error.message).toContain('Out of memory at every level');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(gateway.waiting.get('never')).toBe(0);
  });

  it('refuses a waiting request with 503 when the controller stops, since nothing will be loaded', async () => {
    const { client, gateway } = await startRouter();
    const pending = caught(client.chat.completions.create({ model: 'never', messages: hello }));
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    gateway.stop();
    const error = await pending;
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_unavailable');
    expect(error.message).toContain('no model will be loaded');
    expect(gateway.waiting.get('never')).toBe(0);
  });
});

describe('fallback', () => {
  it('asks the engine for the fallback and names it in the answer (non-stream)', async () => {
    const { client } = await startRouter();
    const before = engine.requests.length;
    const { data, response } = await client.chat.completions.create({ model: 'big', messages: hello }).withResponse();
    expect(engine.requests[before]?.body['model']).toBe('small');
    expect(data.model).toBe('small');
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
  });

  it('names the fallback in every streamed chunk', async () => {
    const { client } = await startRouter();
    const { data: stream, response } = await client.chat.completions
      .create({ model: 'big', messages: hello, stream: true })
      .withResponse();
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    const models: string[] = [];
    let text = '';
    for await (const chunk of stream) {
      models.push(chunk.model);
      text += chunk.choices[0]?.delta.content ?? '';
    }
    expect(text).toBe('first second');
    expect(models.length).toBe(3);
    expect(new Set(models)).toEqual(new Set(['small']));
  });

  it('leaves the engine’s model name alone when not falling back', async () => {
    const { client } = await startRouter();
    const answer = await client.chat.completions.create({ model: 'small', messages: hello });
    expect(answer.model).toBe(ENGINE_MODEL_NAME);
  });
});

describe('broken connections', () => {
  it('aborts the engine request when the client disconnects mid-stream, and counts it finished', async () => {
    const { client, gateway } = await startRouter();
    const closedBefore = engine.closedEarly;
    const abort = new AbortController();
    const stream = await client.chat.completions.create(
      { model: 'small', messages: [{ role: 'user', content: 'mode:hang' }], stream: true },
      { signal: abort.signal },
    );
    const first = await stream[Symbol.asyncIterator]().next();
    expect(first.value?.choices[0]?.delta.content).toBe('first ');
    abort.abort();
    await vi.waitFor(() => expect(engine.closedEarly).toBe(closedBefore + 1), UNTIL_SEEN);
    await vi.waitFor(() => expect(gateway.inFlight('small')).toBe(0), UNTIL_SEEN);
  });

  it('ends the wait when the client disconnects while its model loads, and claims nothing for it', async () => {
    const { client, gateway } = await startRouter();
    const abort = new AbortController();
    const pending = client.chat.completions.create({ model: 'never', messages: hello }, { signal: abort.signal }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    expect(gateway.waiting.get('never')).toBe(1);
    abort.abort();
    await pending;
    // The router hears the disconnect: it stops waiting for a change and ends its wait.
    await vi.waitFor(() => expect(gateway.waiting.get('never')).toBe(0), UNTIL_SEEN);
    expect(gateway.parked).toBe(0);
    gateway.setState('never', 'ready');
    await new Promise((resolve) => setImmediate(resolve));
    expect(gateway.startedTotal).toBe(0);
  });

  it('ends the stream with an error event when the engine dies mid-stream, and never resends it', async () => {
    const { client, gateway } = await startRouter();
    const before = engine.requests.length;
    const stream = await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:die-mid-stream' }], stream: true });
    const received: string[] = [];
    const error = await caught(
      (async () => {
        for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
      })(),
    );
    expect(received.join('')).toBe('first second');
    expect(error.code).toBe('engine_stream_interrupted');
    expect(error.type).toBe('engine_error');
    await vi.waitFor(() => expect(gateway.inFlight('small')).toBe(0), UNTIL_SEEN);
    expect(engine.requests.length - before).toBe(1);
    expect(gateway.calls).toEqual([]);
  });

  it('answers 502 from the engine when it dies before answering, on the one resend too', async () => {
    const { client, gateway } = await startRouter();
    const before = engine.requests.length;
    const error = await caught(client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:die-before-answer' }] }));
    expect(error.status).toBe(502);
    expect(error.code).toBe('engine_unreachable');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('engine');
    expect(engine.requests.length - before).toBe(2);
    expect(gateway.calls).toEqual([`engineUnreachable:small@${routers.engineUrl}`]);
    await vi.waitFor(() => expect(gateway.inFlight('small')).toBe(0), UNTIL_SEEN);
    expect(gateway.finishedTotal).toBe(2);
  });

  it('resends a request whose engine reset the connection to the relaunched engine, once its death is known', async () => {
    const { client, gateway } = await startRouter({}, { small: { engineUrl: dying.url, onUnreachable: 'died' } });
    const resets = dying.connections();
    const { data, response } = await client.chat.completions.create({ model: 'small', messages: hello }).withResponse();
    expect(data.choices[0]?.message.content).toBe('echo: hello');
    expect(response.headers.get('x-llmtray-served-by')).toBe('small');
    expect(dying.connections() - resets).toBe(1);
    // The retry asked for the model like any cold request, after the gateway learned of the death.
    expect(gateway.calls).toEqual([`engineUnreachable:small@${dying.url}`, 'demand:small', 'wait:small']);
    expect(gateway.loadsStarted.get('small')).toBe(1);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(2), UNTIL_SEEN);
    expect(gateway.startedTotal).toBe(2);
    expect(gateway.inFlight('small')).toBe(0);
  });

  it('resends a streamed request too, and answers 502 when the engine is still unreachable the second time', async () => {
    const { client, gateway } = await startRouter({}, { small: { engineUrl: dying.url, onUnreachable: 'lives-on' } });
    const resets = dying.connections();
    const error = await caught(client.chat.completions.create({ model: 'small', messages: hello, stream: true }));
    expect(error.status).toBe(502);
    expect(error.code).toBe('engine_unreachable');
    expect(error.message).toContain("'small'");
    expect(dying.connections() - resets).toBe(2);
    expect(gateway.calls).toEqual([`engineUnreachable:small@${dying.url}`]);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(2), UNTIL_SEEN);
    expect(gateway.startedTotal).toBe(2);
    expect(gateway.inFlight('small')).toBe(0);
  });

  it('gives up the resend when the client leaves while the engine’s death is awaited', async () => {
    const { client, gateway } = await startRouter({}, { small: { engineUrl: dying.url, onUnreachable: 'unknown' } });
    const resets = dying.connections();
    const abort = new AbortController();
    const pending = client.chat.completions.create({ model: 'small', messages: hello }, { signal: abort.signal }).catch((e: unknown) => e);
    await vi.waitFor(() => expect(gateway.calls).toEqual([`engineUnreachable:small@${dying.url}`]), UNTIL_SEEN);
    abort.abort();
    await pending;
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(1), UNTIL_SEEN);
    expect(gateway.startedTotal).toBe(1);
    expect(dying.connections() - resets).toBe(1);
    expect(gateway.calls).toHaveLength(1);
  });
});

describe('an engine found hung', () => {
  const HANG = 'it made no progress for 60 s with 1 request in flight: no bytes, and /slots shows no decoding';

  it('answers 504 engine_hung in OpenAI’s shape when the engine is lost before it answered, without resending', async () => {
    const { client, gateway } = await startRouter();
    const before = engine.requests.length;
    const closedBefore = engine.closedEarly;
    const pending = caught(client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:silent' }] }));
    await vi.waitFor(() => expect(engine.requests.length).toBe(before + 1), UNTIL_SEEN);
    expect(gateway.inFlight('small')).toBe(1);
    gateway.loseEngine('small', HANG);
    const error = await pending;
    expect(error.status).toBe(504);
    expect(error.code).toBe('engine_hung');
    expect(error.type).toBe('engine_error');
    expect(error.message).toContain("'small'");
    expect(error.message).toContain(HANG);
    expect(error.headers?.get('x-llmtray-error-source')).toBe('engine');
    // The engine's request is cut (it is about to be killed), and nothing is sent again.
    await vi.waitFor(() => expect(engine.closedEarly).toBe(closedBefore + 1), UNTIL_SEEN);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(1), UNTIL_SEEN);
    expect(gateway.claims.map((c) => c.releases)).toEqual([1]);
    expect(engine.requests.length).toBe(before + 1);
    expect(gateway.calls).toEqual([]);
  });

  it('ends a stream with an engine_hung error event after the partial answer when the engine is lost mid-stream', async () => {
    const { client, gateway } = await startRouter();
    const before = engine.requests.length;
    const stream = await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:hang' }], stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    const first = await iterator.next();
    expect(first.value?.choices[0]?.delta.content).toBe('first ');
    gateway.loseEngine('small', HANG);
    const error = await caught(iterator.next());
    expect(error.code).toBe('engine_hung');
    expect(error.type).toBe('engine_error');
    expect(error.message).toContain(HANG);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(1), UNTIL_SEEN);
    expect(gateway.claims.map((c) => c.releases)).toEqual([1]);
    expect(engine.requests.length - before).toBe(1);
  });

  it('writes that error event as the stream’s last bytes, on its own line, and ends the response (no [DONE])', async () => {
    const { port, gateway } = await startRouter();
    const body = JSON.stringify({ model: 'small', messages: [{ role: 'user', content: 'mode:hang' }], stream: true });
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    expect(answer.statusCode).toBe(200);
    let text = '';
    answer.setEncoding('utf8');
    const ended = new Promise<void>((resolve) => answer.on('end', resolve));
    answer.on('data', (chunk: string) => (text += chunk));
    await vi.waitFor(() => expect(text).toContain('first '), UNTIL_SEEN);
    gateway.loseEngine('small', HANG);
    await ended;
    const events = text.split('\n\n').filter((e) => e !== '');
    expect(events).toHaveLength(2);
    expect(events[0]).toContain('"content":"first "');
    expect(events[1]?.startsWith('data: ')).toBe(true);
    const last = JSON.parse(events[1]!.slice('data: '.length)) as { error: { code: string; type: string; message: string } };
    expect(last.error).toMatchObject({ code: 'engine_hung', type: 'engine_error' });
    expect(last.error.message).toContain(HANG);
    expect(text.endsWith('\n\n')).toBe(true);
    expect(text).not.toContain('[DONE]');
  });
  it('answers 504 engine_hung when the engine was already lost as its claim reached the forward, and survives it', async () => {
    const { client, gateway } = await startRouter({}, { small: { lostAtClaim: HANG } });
    const before = engine.requests.length;
    const error = await caught(client.chat.completions.create({ model: 'small', messages: hello }));
    expect(error.status).toBe(504);
    expect(error.code).toBe('engine_hung');
    expect(engine.requests.length).toBe(before);
    await vi.waitFor(() => expect(gateway.claims.map((c) => c.releases)).toEqual([1]), UNTIL_SEEN);
    // The router still answers (an unhandled 'error' from the destroyed upstream request would have ended the process).
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await client.models.list()).data.length).toBeGreaterThan(0);
  });

  it('cuts a plain JSON answer whose headers went out when the engine is lost, never completing it with an SSE line', async () => {
    const { port, gateway } = await startRouter();
    // A completion: a chat completion is collected whole, to be given the nulls OpenAI's schema requires (chat-answer-shape.ts).
    const body = JSON.stringify({ model: 'small', prompt: 'mode:json-stall' });
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/completions', headers: { 'content-type': 'application/json' } }, resolve);
      req.on('error', reject);
      req.end(body);
    });
    expect(answer.statusCode).toBe(200);
    let text = '';
    answer.setEncoding('utf8');
    const outcome = new Promise<'complete' | 'cut'>((resolve) => {
      answer.on('end', () => resolve(answer.complete ? 'complete' : 'cut'));
      answer.on('aborted', () => resolve('cut'));
      answer.on('error', () => resolve('cut'));
    });
    answer.on('data', (chunk: string) => (text += chunk));
    await vi.waitFor(() => expect(text).toContain('"id":"cmpl-1"'), UNTIL_SEEN);
    gateway.loseEngine('small', HANG);
    // The README's rule for a JSON answer already under way: cutting the connection is the only honest signal.
    expect(await outcome).toBe('cut');
    expect(text).not.toContain('data:');
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(1), UNTIL_SEEN);
  });
});

describe('progress for hang detection', () => {
  it('reports progress for the answer’s headers and for every streamed chunk as it is relayed', async () => {
    const { client, gateway } = await startRouter();
    const stream = await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:steps' }], stream: true });
    const iterator = stream[Symbol.asyncIterator]();
    const claim = (): ScriptedClaim => gateway.claims[0]!;
    // The engine writes each step only once the client has the one before, so each is its own
    // chunk to the router: the headers, then one per step.
    expect((await iterator.next()).value?.choices[0]?.delta.content).toBe('first ');
    const afterFirst = claim().progress;
    expect(afterFirst).toBeGreaterThanOrEqual(2);
    engine.release();
    expect((await iterator.next()).value?.choices[0]?.delta.content).toBe('second');
    const afterSecond = claim().progress;
    expect(afterSecond).toBeGreaterThan(afterFirst);
    engine.release();
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next());
    expect(claim().progress).toBeGreaterThan(afterSecond);
    await vi.waitFor(() => expect(claim().releases).toBe(1), UNTIL_SEEN);
  });

  it('reports progress for a plain JSON answer and for a fallback’s rewritten one', async () => {
    const { client, gateway } = await startRouter();
    await client.chat.completions.create({ model: 'small', messages: hello });
    await client.chat.completions.create({ model: 'big', messages: hello });
    expect(gateway.claims.map((c) => c.servedBy)).toEqual(['small', 'small']);
    // Headers and at least one chunk of body each.
    for (const claim of gateway.claims) expect(claim.progress).toBeGreaterThanOrEqual(2);
  });
});

describe('security and request checks', () => {
  it('refuses a Host that is not loopback with 403 (DNS rebinding), on every path', async () => {
    const { port } = await startRouter({ fallthrough: (_req, res) => res.end('admin') });
    for (const path of ['/v1/models', '/api/state']) {
      const answer = await rawRequest(port, { method: 'GET', path, headers: { host: `attacker.example:${port}` } });
      expect(answer.status).toBe(403);
      expect(answer.json.error?.message).toContain('attacker.example');
    }
    const ok = await rawRequest(port, { method: 'GET', path: '/v1/models', headers: { host: `localhost:${port}` } });
    expect(ok.status).toBe(200);
  });

  it('hands paths outside /v1 to the fallthrough handler after the guards', async () => {
    const { port } = await startRouter({ fallthrough: (_req, res) => res.end('{"admin":true}') });
    const answer = await rawRequest(port, { method: 'GET', path: '/api/state', headers: { host: `127.0.0.1:${port}` } });
    expect(answer.json).toEqual({ admin: true });
  });

  it('refuses a cross-origin request unless its origin is configured, and then allows CORS', async () => {
    const { port } = await startRouter({ access: access({ corsOrigins: ['http://localhost:3000'] }) });
    const body = JSON.stringify({ model: 'small', messages: hello });
    const foreign = await rawRequest(port, { path: '/v1/chat/completions', headers: { origin: 'https://evil.example', 'content-type': 'text/plain' }, body });
    expect(foreign.status).toBe(403);
    const allowed = await rawRequest(port, { path: '/v1/chat/completions', headers: { origin: 'http://localhost:3000' }, body });
    expect(allowed.status).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('http://localhost:3000');
  });

  it('sends no CORS headers when none are configured', async () => {
    const { port } = await startRouter();
    const answer = await rawRequest(port, { method: 'GET', path: '/v1/models' });
    expect(answer.status).toBe(200);
    expect(answer.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('enforces the client keys when some are configured, and never passes them to the engine', async () => {
    const { client, url } = await startRouter({ access: access({ clientKeys: [{ name: 'editor', key: 'router-secret-0123' }] }) }, {}, { clientKey: 'router-secret-0123' });
    const answer = await client.chat.completions.create({ model: 'small', messages: hello });
    expect(answer.choices[0]?.message.content).toBe('echo: hello');
    const wrong = new OpenAI({ apiKey: 'guess', baseURL: url, maxRetries: 0 });
    const error = await caught(wrong.chat.completions.create({ model: 'small', messages: hello }));
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.code).toBe('invalid_api_key');
    expect(error.message).toContain('listen.clientKeys');
    expect(engine.requests.every((r) => r.authorization === `Bearer ${engineKey}`)).toBe(true);
  });
  it('refuses a body over the limit with 413, declared or streamed', async () => {
    const { client, port, gateway } = await startRouter({ bodyLimitBytes: 1024 });
    const long = [{ role: 'user' as const, content: 'x'.repeat(2048) }];
    const declared = await caught(client.chat.completions.create({ model: 'small', messages: long }));
    expect(declared.status).toBe(413);
    expect(declared.message).toContain('1024 bytes');
    const chunked = await rawRequest(port, { path: '/v1/chat/completions', headers: { 'transfer-encoding': 'chunked' }, body: [Buffer.alloc(700, 32), Buffer.alloc(700, 32)] });
    expect(chunked.status).toBe(413);
    expect(gateway.calls).toEqual([]);
  });

  it('refuses malformed JSON with 400', async () => {
    const { port } = await startRouter();
    const answer = await rawRequest(port, { path: '/v1/chat/completions', body: '{"model": "small", "messages": [' });
    expect(answer.status).toBe(400);
    expect(answer.json.error?.message).toContain('not valid JSON');
    expect(answer.headers['x-llmtray-error-source']).toBe('router');
  });

  it.each([
    ['model', { messages: hello }],
    ['messages', { model: 'small', messages: 'hello' }],
    ['messages[0].role', { model: 'small', messages: [{ content: 'hi' }] }],
    ['stream', { model: 'small', messages: hello, stream: 'yes' }],
    ['max_tokens', { model: 'small', messages: hello, max_tokens: 0 }],
    ['max_tokens', { model: 'small', messages: hello, max_tokens: 1.5 }],
    ['temperature', { model: 'small', messages: hello, temperature: 'hot' }],
  ])('refuses a bad %s with 400 naming the field, before loading anything', async (param, body) => {
    const { client, gateway } = await startRouter();
    const error = await caught(client.post('/chat/completions', { body }));
    expect(error).toBeInstanceOf(BadRequestError);
    expect(error.param).toBe(param);
    expect(gateway.calls).toEqual([]);
  });

  it('answers unknown /v1 paths and wrong methods in OpenAI’s shape', async () => {
    const { port } = await startRouter();
    const unknown = await rawRequest(port, { method: 'GET', path: '/v1/assistants' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error?.message).toContain('/v1/assistants');
    const wrongMethod = await rawRequest(port, { method: 'GET', path: '/v1/chat/completions' });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers['allow']).toBe('POST');
  });

  it('releases every claim exactly once across every outcome', async () => {
    const { client, gateway } = await startRouter();
    const outcomes = await Promise.allSettled([
      client.chat.completions.create({ model: 'small', messages: hello }),
      client.chat.completions.create({ model: 'big', messages: hello }),
      client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:engine-400' }] }),
      client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:die-before-answer' }] }),
      client.chat.completions.create({ model: 'broken', messages: hello }),
      client.completions.create({ model: 'small', prompt: 'p' }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled']);
    await vi.waitFor(() => expect(gateway.finishedTotal).toBe(gateway.startedTotal), UNTIL_SEEN);
    expect(gateway.startedTotal).toBe(6); // the engine that died before answering was tried twice
    expect(gateway.claims.map((c) => c.releases)).toEqual([1, 1, 1, 1, 1, 1]);
  });
});

// 127.0.0.2 stands in for a LAN address: a listener there is reached like one from another
// machine (the connection's local address is not 127.0.0.1), on any Linux without a network.
describe('a network listener (LAN mode), on 127.0.0.2', () => {
  const LAN = '127.0.0.2';
  const keys = [
    { name: 'laptop', key: 'laptop-key-0123456789' },
    { name: 'phone', key: 'phone-key-0123456789' },
  ];
  const lan = (settings: Partial<RouterAccess> = {}) => access({ clientKeys: keys, keysRequired: true, ...settings });
  const body = JSON.stringify({ model: 'small', messages: hello });

  it('serves the official openai client with a key, and refuses a wrong key or none, naming the setting', async () => {
    const { client, url } = await startRouter({ access: lan() }, {}, { host: LAN, clientKey: 'laptop-key-0123456789' });
    expect(url).toMatch(/^http:\/\/127\.0\.0\.2:\d+\/v1$/);
    expect((await client.chat.completions.create({ model: 'small', messages: hello })).choices[0]?.message.content).toBe('echo: hello');
    for (const apiKey of ['laptop-key-012345678', 'not-a-key-at-all-000']) {
      const error = await caught(new OpenAI({ apiKey, baseURL: url, maxRetries: 0 }).models.list());
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error.message).toContain("is not one of this llmtray endpoint's client keys (listen.clientKeys");
    }
    const port = Number(new URL(url).port);
    const none = await rawRequest(port, { host: LAN, method: 'GET', path: '/v1/models' });
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="llmtray"');
    expect(none.json.error?.message).toContain('`Authorization: Bearer <key>`');
  });

  it('takes the key from x-api-key too (Anthropic clients), on every /v1 path', async () => {
    const { port } = await startRouter({ access: lan() }, {}, { host: LAN });
    const models = await rawRequest(port, { host: LAN, method: 'GET', path: '/v1/models', headers: { 'x-api-key': 'phone-key-0123456789' } });
    expect(models.status).toBe(200);
    const chat = await rawRequest(port, { host: LAN, path: '/v1/chat/completions', headers: { 'x-api-key': 'phone-key-0123456789', 'content-type': 'application/json' }, body });
    expect(chat.status).toBe(200);
    // Any /v1 path is behind the key, the ones the router does not know included.
    expect((await rawRequest(port, { host: LAN, path: '/v1/not-an-endpoint', body })).status).toBe(401);
    expect((await rawRequest(port, { host: LAN, path: '/v1/not-an-endpoint', headers: { 'x-api-key': 'phone-key-0123456789' }, body })).status).toBe(404);
  });

  it('stops taking a revoked key at the next request, and keeps taking the others', async () => {
    let current = keys;
    const { url } = await startRouter({ access: () => ({ ...LOOPBACK_ONLY_ACCESS, clientKeys: current, keysRequired: true }) }, {}, { host: LAN });
    const phone = new OpenAI({ apiKey: 'phone-key-0123456789', baseURL: url, maxRetries: 0 });
    const laptop = new OpenAI({ apiKey: 'laptop-key-0123456789', baseURL: url, maxRetries: 0 });
    expect((await phone.models.list()).data.length).toBeGreaterThan(0);
    current = keys.filter((k) => k.name !== 'phone');
    expect(await caught(phone.models.list())).toBeInstanceOf(AuthenticationError);
    expect((await laptop.chat.completions.create({ model: 'small', messages: hello })).choices[0]?.message.content).toBe('echo: hello');
  });

  it('refuses everything while no key is configured on a network listener (fail closed)', async () => {
    const { port } = await startRouter({ access: access({ keysRequired: true }) }, {}, { host: LAN });
    const answer = await rawRequest(port, { host: LAN, method: 'GET', path: '/v1/models', headers: { authorization: 'Bearer anything-at-all-0123' } });
    expect(answer.status).toBe(401);
    expect(answer.json.error?.message).toContain('has no client key configured');
    expect(answer.json.error?.message).toContain('listen.clientKeys');
  });

  it('serves the address a request arrived on and allowedHosts, and refuses a hostile Host naming listen.allowedHosts', async () => {
    const { port } = await startRouter({ access: lan({ allowedHosts: ['workstation.lan'] }) }, {}, { host: LAN });
    const key = { authorization: 'Bearer laptop-key-0123456789' };
    for (const host of [`${LAN}:${port}`, `workstation.lan:${port}`, 'WORKSTATION.LAN']) {
      expect((await rawRequest(port, { host: LAN, method: 'GET', path: '/v1/models', headers: { ...key, host } })).status, host).toBe(200);
    }
    for (const host of [`attacker.example:${port}`, `127.0.0.3:${port}x`, `${LAN}.evil.example`]) {
      const refused = await rawRequest(port, { host: LAN, method: 'GET', path: '/v1/models', headers: { ...key, host } });
      expect(refused.status, host).toBe(403);
      expect(refused.json.error?.message).toContain('add it to listen.allowedHosts');
    }
  });

  it('answers a CORS preflight from an allowed origin, and refuses one from another origin', async () => {
    const { port } = await startRouter({ access: lan({ corsOrigins: ['http://192.168.1.7:3000'] }) }, {}, { host: LAN });
    const preflight = (origin: string) =>
      rawRequest(port, {
        host: LAN,
        method: 'OPTIONS',
        path: '/v1/chat/completions',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      });
    const allowed = await preflight('http://192.168.1.7:3000');
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('http://192.168.1.7:3000');
    expect(allowed.headers['access-control-allow-headers']).toBe('authorization, content-type');
    const other = await preflight('http://192.168.1.8:3000');
    expect(other.status).toBe(403);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    expect(other.json.error?.message).toContain('listen.corsOrigins');
    // The allowed page's real request carries the CORS header on its answer.
    const call = await rawRequest(port, { host: LAN, path: '/v1/chat/completions', headers: { origin: 'http://192.168.1.7:3000', authorization: 'Bearer laptop-key-0123456789' }, body });
    expect(call.status).toBe(200);
    expect(call.headers['access-control-allow-origin']).toBe('http://192.168.1.7:3000');
  });

  it('keeps what is outside /v1 (the admin API, /metrics, the dashboard) off the network unless listen.admin says network', async () => {
    const fallthrough: RouterOptions['fallthrough'] = (_req, res) => res.end('{"admin":true}');
    const { port } = await startRouter({ access: lan(), fallthrough }, {}, { host: LAN });
    for (const path of ['/api/state', '/metrics', '/']) {
      const refused = await rawRequest(port, { host: LAN, method: 'GET', path });
      expect(refused.status, path).toBe(403);
      expect(refused.json.error?.message).toContain('listen.admin: network');
    }
    const open = await startRouter({ access: lan({ fallthroughFromNetwork: true }), fallthrough }, {}, { host: LAN });
    expect((await rawRequest(open.port, { host: LAN, method: 'GET', path: '/api/state' })).json).toEqual({ admin: true });
    // On the loopback listener the same routes answer (the CLI, the dashboard).
    const local = await startRouter({ access: lan(), fallthrough });
    expect((await rawRequest(local.port, { method: 'GET', path: '/api/state' })).json).toEqual({ admin: true });
  });
});

// What the fuzz suite (http-fuzz.test.ts) found, pinned down: requests Node refuses before the
// router sees them, and answers lost to a reset when the client was still sending.
describe('answers at the edge of HTTP', () => {
  const send = (port: number, text: string | Buffer) => rawExchange('127.0.0.1', port, Buffer.isBuffer(text) ? text : Buffer.from(text, 'latin1'), { halfClose: false, timeoutMs: 10_000 });
  const json = (answer: RawAnswer) => JSON.parse(answer.body.toString('utf8')) as { error: { message: string; code: string | null; type: string } };

  it('answers a malformed request, a request without Host and CONNECT in OpenAI\'s error shape, not with a bare status', async () => {
    const { port } = await startRouter();
    const malformed = await send(port, 'GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n');
    expect(malformed.status).toBe(400);
    expect(malformed.headers['x-llmtray-error-source']).toBe('router');
    expect(json(malformed).error).toMatchObject({ code: 'malformed_request', type: 'invalid_request_error' });
    const large = await send(port, `GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Large: ${'x'.repeat(20_000)}\r\n\r\n`);
    expect(large.status).toBe(431);
    expect(json(large).error.code).toBe('headers_too_large');
    const noHost = await send(port, 'GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n');
    expect(noHost.status).toBe(403);
    expect(json(noHost).error.message).toContain("Host '' is not a name this llmtray serves");
    const connect = await send(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(connect.status).toBe(405);
    expect(json(connect).error.message).toContain('not a proxy');
  });

  it('answers a body that stops short of its content-length when the client closes, instead of waiting for ever', async () => {
    const { port, gateway } = await startRouter();
    const cut = await rawExchange('127.0.0.1', port, Buffer.from(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 100\r\n\r\n{"model":"small"`), { halfClose: true, timeoutMs: 10_000 });
    expect(cut.status).toBe(400);
    expect(json(cut).error.code).toBe('malformed_request');
    expect(gateway.calls).toEqual([]);
  });

  it('delivers its answer whole to a client that asked to close while still sending a body nobody reads', async () => {
    const page = Buffer.alloc(300_000, 0x61);
    // Written a piece per turn, as a file is streamed (static-files.ts), so that anything else
    // written to the socket meanwhile would land in the middle of it.
    const streamed: RouterOptions['fallthrough'] = (_req, res) => {
      res.writeHead(200, { 'content-length': String(page.length) });
      const next = (at: number): void => {
        if (at >= page.length) return void res.end();
        res.write(page.subarray(at, at + 16_384));
        setImmediate(() => next(at + 16_384));
      };
      next(0);
    };
    const { port } = await startRouter({ access: access({ clientKeys: [{ name: 'app', key: 'app-key-0123456789' }] }), fallthrough: streamed });
    const body = Buffer.alloc(4 * 1024 * 1024, 0x78);
    const head = (line: string) => Buffer.from(`${line}\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`);
    // Refused before the body is read: the 401 arrives, not a reset.
    const refused = await send(port, Buffer.concat([head('POST /v1/chat/completions HTTP/1.1'), body]));
    expect(refused.status).toBe(401);
    expect(json(refused).error.code).toBe('invalid_api_key');
    // A route that reads no body: all of its answer arrives.
    const served = await send(port, Buffer.concat([head('GET /dashboard HTTP/1.1'), body]));
    expect(served.status).toBe(200);
    expect(served.body.equals(page)).toBe(true);
    // A body longer than its content-length: the rest is junk to the parser, and its 400 waits
    // for the first answer instead of cutting into it.
    const longer = await send(port, `GET /dashboard HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 2\r\n\r\n{}not a request at all\r\n\r\n`);
    expect(longer.status).toBe(200);
    expect(longer.body.equals(page)).toBe(true);
  });
});
