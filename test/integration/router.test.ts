// The router end to end: the official `openai` client → the router on 127.0.0.1 → a real
// HTTP engine that speaks the OpenAI subset llama-server does (test/support/router-fake-engine.ts).
// The model gateway is a scripted in-memory object standing in for controller + supervisor +
// catalog (test/support/scripted-gateway.ts), so each test can make a model cold, quarantined,
// left out of the plan, kept out by a busy one, falling back, or its engine found hung while it
// answers. Anthropic's Messages API on the same router: router-anthropic.test.ts.
//
// This file: routing and answering OpenAI's endpoints (openai/route.ts), the field table's
// refusals and a fallback's name. Split by what they test, over the same set-up
// (test/support/openai-router.ts): on-demand activation in router-activation.test.ts, engines
// that die or hang in router-engine-faults.test.ts, the guards and HTTP's edges in router-http.test.ts.
import OpenAI, { BadRequestError, NotFoundError } from 'openai';
import { describe, expect, it, vi } from 'vitest';
import type { RouterModelEntry } from '../../core/router/model-gateway.js';
import { ENGINE_MODEL_NAME } from '../support/router-fake-engine.js';
import { openAIRouters, access, caught, hello } from '../support/openai-router.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const { engine, engineKey, startRouter } = openAIRouters();

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
