// `llmtray serve --demo` end to end, as local apps use it: the official `openai` client against
// the real daemon process, its real embedded engines and the generated demo models.
//
// One daemon for the file, so the tests run in order and each leaves the state the next one
// starts from: nothing loaded (metrics, guards, validation) → demo-chat loaded on demand →
// swapped out for demo-tiny → demo-draft loaded beside it under 16 concurrent clients →
// demo-tiny's engine killed mid-stream.
//
// The demo budget (core/daemon/demo.ts) holds demo-chat with its draft, or the small models
// together, never demo-chat and demo-tiny at once; all priorities are equal, so the most recent
// request wins the memory.
import http from 'node:http';
import OpenAI, { APIError, BadRequestError, NotFoundError } from 'openai';
import { describe, expect, it, vi } from 'vitest';
import type { ModelView } from '../../core/contracts/snapshot.js';
import { isProcessAlive } from '../support/daemon-process.js';
import { fileDaemon } from '../support/file-daemon.js';
import { SERVING_STATES } from '../../core/contracts/model-status.js';

const DEMO_IDS = ['demo-broken', 'demo-chat', 'demo-draft', 'demo-embed', 'demo-tiny'];

const live = fileDaemon();

const byId = (models: readonly ModelView[], id: string): ModelView => {
  const model = models.find((m) => m.id === id);
  if (model === undefined) throw new Error(`no model ${id} in the snapshot`);
  return model;
};

/** GET with a chosen Host header (fetch may not set one). */
function getWithHost(path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = http.request({ host: '127.0.0.1', port: live.daemon.port, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (text: string) => (body += text));
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

describe('before any model is loaded', () => {
  it('publishes every per-model metric series for every demo model, at 0', async () => {
    const res = await fetch(`${live.daemon.origin}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    for (const id of DEMO_IDS) {
      expect(text).toContain(`llmtray_model_ready{model="${id}"} 0`);
      expect(text).toContain(`llmtray_model_desired{model="${id}"} 0`);
      expect(text).toContain(`llmtray_model_state{model="${id}",state="idle"} 1`);
    }
  });

  it('lists every demo model with its state through the openai client', async () => {
    const page = await live.client.models.list();
    const entries = page.data as unknown as Array<{ id: string; object: string; aliases: string[]; state: string; level: string | null; served_by: string | null; reason: string | null }>;
    expect(entries.map((e) => e.id).sort()).toEqual(DEMO_IDS);
    for (const entry of entries) {
      expect(entry).toMatchObject({ object: 'model', state: 'idle', level: null, served_by: null, reason: null });
    }
    expect(entries.find((e) => e.id === 'demo-chat')?.aliases).toEqual(['chat']);
    expect(entries.find((e) => e.id === 'demo-tiny')?.aliases).toEqual(['tiny']);
  });

  it('refuses a Host that is not loopback (DNS rebinding) on every path', async () => {
    for (const path of ['/v1/models', '/api/state', '/metrics']) {
      const hostile = await getWithHost(path, 'evil.example');
      expect(hostile.status, path).toBe(403);
      expect(hostile.body).toContain('evil.example');
    }
    expect((await getWithHost('/v1/models', `localhost:${live.daemon.port}`)).status).toBe(200);
  });

  it('guards /api/state with the admin token', async () => {
    expect((await fetch(`${live.daemon.origin}/api/state`)).status).toBe(401);
    expect((await fetch(`${live.daemon.origin}/api/state`, { headers: { authorization: 'Bearer not-the-token' } })).status).toBe(401);
    const ok = await live.daemon.api('/api/state');
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { models: unknown[] }).models).toHaveLength(DEMO_IDS.length);
  });

  it('answers an unknown model with 404 naming the models that exist', async () => {
    const error = await live.client.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    const message = (error as NotFoundError).message;
    expect(message).toContain('no-such-model');
    for (const id of DEMO_IDS) expect(message).toContain(id);
  });

  it('answers a malformed body with 400 naming the field, without loading the model', async () => {
    const error = await live.client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: -3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).param).toBe('max_tokens');
    expect((error as BadRequestError).message).toContain('max_tokens');
    const noMessages = await live.client.chat.completions.create({ model: 'chat', messages: [] }).catch((e: unknown) => e);
    expect(noMessages).toBeInstanceOf(BadRequestError);
    expect((noMessages as BadRequestError).param).toBe('messages');
    // A refused request must not cost a load (and an eviction of what someone was using).
    const chat = await live.daemon.model('demo-chat');
    expect(chat.status.state).toBe('idle');
    expect(chat.upstream).toBeNull();
  });
});

describe('on-demand loading and swapping', () => {
  it('loads demo-chat on the first request, by its alias, and names the model in the answer', async () => {
    const before = await live.daemon.model('demo-chat');
    expect(before.upstream).toBeNull();

    const answer = await live.client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'Say hello.' }], max_tokens: 8 });
    expect(answer.model).toBe('demo-chat');
    expect(answer.object).toBe('chat.completion');
    expect(typeof answer.choices[0]?.message.content).toBe('string');
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0);

    const chat = await live.daemon.model('demo-chat');
    expect(SERVING_STATES).toContain(chat.status.state);
    expect(chat.upstream?.pid).toBeGreaterThan(0);
    expect((await live.daemon.model('demo-tiny')).upstream).toBeNull();
  });

  it('streams a chat completion from the resident model', async () => {
    const stream = await live.client.chat.completions.create({ model: 'demo-chat', messages: [{ role: 'user', content: 'Count.' }], max_tokens: 12, stream: true });
    let text = '';
    let chunks = 0;
    let finish: string | null = null;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.model).toBe('demo-chat');
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
    }
    expect(chunks).toBeGreaterThan(2);
    expect(text.length).toBeGreaterThan(0);
    expect(finish).toBe('length');
  });

  it('swaps: a request for demo-tiny evicts demo-chat and loads demo-tiny', async () => {
    const chatPid = (await live.daemon.model('demo-chat')).upstream?.pid;
    expect(chatPid).toBeGreaterThan(0);

    const answer = await live.client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });
    expect(answer.model).toBe('demo-tiny');

    const state = await live.daemon.state();
    const tiny = byId(state.models, 'demo-tiny');
    const chat = byId(state.models, 'demo-chat');
    expect(SERVING_STATES).toContain(tiny.status.state);
    expect(tiny.upstream?.pid).toBeGreaterThan(0);
    expect(chat.upstream).toBeNull();
    expect(SERVING_STATES).not.toContain(chat.status.state);
    expect(isProcessAlive(chatPid as number)).toBe(false);
    // It stays wanted (its idle time has not run out) but does not fit beside demo-tiny, and says why.
    expect(state.plan?.unschedulable.find((u) => u.modelId === 'demo-chat')?.reason).toContain('demo-tiny');
    // Because the demo's limit follows the runtime as measured, not the prior it started with: it
    // lies in the middle half between demo-chat (with its draft) alone and demo-chat beside
    // demo-tiny, as every footprint is priced now, in whole MiB (the config says "260MiB").
    const limit = state.budget.limitBytes ?? 0;
    expect(limit % 2 ** 20).toBe(0);
    expect(limit).toBeGreaterThanOrEqual(chat.estimateBytes.full + Math.ceil(tiny.estimateBytes.full / 4));
    expect(limit).toBeLessThanOrEqual(chat.estimateBytes.full + Math.floor((3 * tiny.estimateBytes.full) / 4));
  });

  it('serves the legacy completions endpoint', async () => {
    const answer = await live.client.completions.create({ model: 'tiny', prompt: 'Once upon a time', max_tokens: 6 });
    expect(answer.model).toBe('demo-tiny');
    expect(answer.object).toBe('text_completion');
    expect(typeof answer.choices[0]?.text).toBe('string');
  });

  it('answers a prompt over the context in OpenAI’s shape: the real engine’s refusal with a string code, OpenAI’s type and the param', async () => {
    // demo-tiny has 4096 tokens of context; every word is at least one token.
    const long = Array.from({ length: 6000 }, (_, i) => `w${i}`).join(' ');
    let error: unknown;
    try {
      await live.client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: long }], max_tokens: 2 });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(BadRequestError);
    const refusal = error as BadRequestError;
    expect(refusal.code).toBe('context_length_exceeded');
    expect(refusal.type).toBe('invalid_request_error');
    expect(refusal.param).toBe('messages');
    expect(refusal.message).toMatch(/exceeds the available context size/);
    expect(refusal.headers?.get('x-llmtray-error-source')).toBe('engine');
  });
});

describe('concurrency', () => {
  it('serves 16 concurrent clients on two models that fit together, loading the cold one once', async () => {
    const state = await live.daemon.state();
    const pair = byId(state.models, 'demo-tiny').estimateBytes.full + byId(state.models, 'demo-draft').estimateBytes.full;
    expect(pair).toBeLessThanOrEqual(state.budget.budgetBytes);
    expect(byId(state.models, 'demo-draft').upstream).toBeNull();
    const launchesBefore = countLines(live.daemon.stderr(), 'launching demo-draft');

    const requests = Array.from({ length: 16 }, (_, i) => {
      const own = new OpenAI({ baseURL: live.daemon.endpoint, apiKey: `client-${i}`, maxRetries: 0 });
      const model = i % 2 === 0 ? 'demo-tiny' : 'demo-draft';
      return own.chat.completions.create({ model, messages: [{ role: 'user', content: `client ${i}` }], max_tokens: 8 }).then((answer) => ({ model, answer }));
    });
    const results = await Promise.all(requests);
    for (const { model, answer } of results) {
      expect(answer.model).toBe(model);
      expect(answer.choices[0]?.finish_reason).toBe('length');
    }

    const after = await live.daemon.state();
    expect(SERVING_STATES).toContain(byId(after.models, 'demo-tiny').status.state);
    expect(SERVING_STATES).toContain(byId(after.models, 'demo-draft').status.state);
    for (const model of after.models) expect(model.inFlight, model.id).toBe(0);
    // Eight requests for the cold demo-draft started one load, not eight.
    expect(countLines(live.daemon.stderr(), 'launching demo-draft') - launchesBefore).toBe(1);
  });
});

describe('an engine that dies mid-answer', () => {
  it('ends the client stream with an error within 1 s; requests sent at the kill and right after the error are served by a relaunched engine', async () => {
    const tinyPid = (await live.daemon.model('demo-tiny')).upstream?.pid;
    expect(tinyPid).toBeGreaterThan(0);

    const stream = await live.client.chat.completions.create({
      model: 'demo-tiny',
      messages: [{ role: 'user', content: 'Write a long story.' }],
      max_tokens: 1900,
      stream: true,
    });
    let killedAt = 0;
    let received = 0;
    let sentAtKill: Promise<unknown> = Promise.resolve(null);
    const failure = await (async () => {
      try {
        for await (const chunk of stream) {
          received++;
          if (killedAt === 0 && chunk.choices[0]?.delta.content) {
            process.kill(tinyPid as number, 'SIGKILL');
            killedAt = performance.now();
            // Reaches the router while the engine dies: forwarded to the dying engine (which
            // resets it) or to its closed port, unless the exit has already been seen.
            sentAtKill = live.client.chat.completions.create({ model: 'demo-tiny', messages: [{ role: 'user', content: 'at the kill' }], max_tokens: 8 }).catch((error: unknown) => error);
          }
        }
        return null;
      } catch (error) {
        return error;
      }
    })();
    const erroredAfterMs = performance.now() - killedAt;
    expect(killedAt).toBeGreaterThan(0);
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toContain('demo-tiny');
    expect(received).toBeLessThan(1900);
    // A product promise, not a speed measurement: a client must learn that its answer broke off
    // at once, not after a socket timeout or never (DESIGN: "Streams straight through").
    expect(erroredAfterMs).toBeLessThan(1000);

    // Sent at once, racing the death: the engine's sockets close before its exit reaches the
    // supervisor, and its exit reaches the controller only after its log has drained. Each
    // request must wait for the relaunch, never meet the dead engine with a 502.
    const next = await live.client.chat.completions.create({ model: 'demo-tiny', messages: [{ role: 'user', content: 'again' }], max_tokens: 8 });
    expect(next.model).toBe('demo-tiny');
    expect(await sentAtKill).toMatchObject({ model: 'demo-tiny', object: 'chat.completion' });
    const relaunched = await live.daemon.model('demo-tiny');
    expect(relaunched.upstream?.pid).not.toBe(tinyPid);
    expect(isProcessAlive(relaunched.upstream?.pid as number)).toBe(true);
    expect(live.daemon.stderr()).toContain("demo-tiny's server ended on its own");
  });
});

describe('llama.cpp router mode’s model commands', () => {
  /** demo-tiny's router-mode status, as a client made for llama.cpp reads it. */
  async function tinyStatus(): Promise<unknown> {
    const entries = (await live.client.models.list()).data as unknown as { id: string; status: unknown }[];
    return entries.find((e) => e.id === 'demo-tiny')?.status;
  }
  const post = async (path: string, model: string): Promise<{ status: number; json: Record<string, unknown> }> => {
    const response = await fetch(`${live.daemon.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };

  it('unloads and loads demo-tiny by POST /models/unload and /models/load, as the tray does, and /v1/models follows', async () => {
    const unloaded = await post('/models/unload', 'tiny');
    expect(unloaded).toMatchObject({ status: 200, json: { success: true, model: 'demo-tiny' } });
    await vi.waitFor(async () => expect(await tinyStatus()).toEqual({ value: 'unloaded' }), { timeout: 60_000, interval: 100 });
    expect(await post('/models/load', 'tiny')).toMatchObject({ status: 200, json: { success: true } });
    await vi.waitFor(async () => expect(await tinyStatus()).toEqual({ value: 'loaded' }), { timeout: 60_000, interval: 100 });
  });
});

function countLines(text: string, needle: string): number {
  return text.split('\n').filter((line) => line.includes(needle)).length;
}
