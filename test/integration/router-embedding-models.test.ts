// A request that asks an embedding model to write text is refused by name before anything loads:
// an encoder has no head that writes, so whatever it "answered" would be noise. Real HTTP on
// loopback to the router with the scripted gateway and the HTTP fake engine.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRouter, type ListeningRouter } from '../../core/router/router.js';
import { FakeEngine } from '../support/router-fake-engine.js';
import { ScriptedGateway, scriptedModels } from '../support/scripted-gateway.js';

const ENGINE_KEY = 'engine-per-launch-key';
let engine: FakeEngine;
let engineUrl: string;
beforeAll(async () => {
  engine = new FakeEngine(ENGINE_KEY);
  engineUrl = await engine.start();
});
afterAll(() => engine.stop());

const opened: { router: ListeningRouter; gateway: ScriptedGateway }[] = [];
afterEach(async () => {
  for (const { router, gateway } of opened.splice(0)) {
    gateway.dispose();
    await router.close();
  }
});

/** 'cold' is an encoder (its GGUF names a pooling); 'never' is configured `embeddings: true`; 'small' writes text. */
async function startRouter(): Promise<{ origin: string; gateway: ScriptedGateway }> {
  const gateway = new ScriptedGateway(scriptedModels({ cold: { embeddingsOnly: 'pooling' }, never: { embeddingsOnly: 'config' } }), engineUrl, ENGINE_KEY);
  const router = await createRouter({ gateway }).listen();
  opened.push({ router, gateway });
  return { origin: router.url.replace(/\/v1$/, ''), gateway };
}

async function post(origin: string, path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

const GENERATING: [string, Record<string, unknown>][] = [
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }],
  ['/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], stream: true }],
  ['/v1/completions', { prompt: 'hi' }],
  ['/v1/responses', { input: 'hi' }],
  ['/completion', { prompt: 'hi' }],
];

describe('an embedding model asked to write', () => {
  it.each(GENERATING)('%s is a 400 on `model` that says why, and the model is not loaded', async (path, body) => {
    const { origin, gateway } = await startRouter();
    const answer = await post(origin, path, { model: 'cold', ...body });
    expect(answer.status).toBe(400);
    expect(answer.json['error']).toMatchObject({ type: 'invalid_request_error', code: 'model_only_embeds', param: 'model' });
    expect(String((answer.json['error'] as { message: string }).message)).toContain("'cold' is an embedding model (its GGUF names a pooling type)");
    expect(gateway.loadsStarted.get('cold') ?? 0).toBe(0);
    expect(gateway.claims).toHaveLength(0);
  });

  it("is refused in Anthropic's error shape on /v1/messages, naming the config entry when that is the reason", async () => {
    const { origin, gateway } = await startRouter();
    const answer = await post(origin, '/v1/messages', { model: 'never', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status).toBe(400);
    expect(answer.json).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
    expect(String((answer.json['error'] as { message: string }).message)).toContain('`embeddings: true`');
    expect(gateway.claims).toHaveLength(0);
  });

  it('still answers /v1/embeddings and /tokenize, and a model that writes text still chats', async () => {
    const { origin, gateway } = await startRouter();
    expect((await post(origin, '/v1/embeddings', { model: 'cold', input: 'hi' })).status).toBe(200);
    expect((await post(origin, '/tokenize', { model: 'cold', content: 'hi' })).status).not.toBe(400);
    expect((await post(origin, '/v1/chat/completions', { model: 'small', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
    expect(gateway.claims.map((c) => c.servedBy)).toEqual(['cold', 'cold', 'small']);
  });
});
