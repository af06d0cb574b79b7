// Ollama's API on the router, against the HTTP fake engine and a scripted gateway
// (test/support/scripted-router.ts), for what the real daemon cannot be made to do on demand:
// an engine that dies mid-answer, a model that never comes, a quarantined one, the guards. What
// holds: NDJSON from end to end (no blank line, no comment, an error on a line of its own),
// Ollama's `{"error"}` on its paths whoever refuses, the admin API keeping every other /api/ path,
// and the `ollama` client raising each refusal with its message.
import http from 'node:http';
import { Ollama } from 'ollama';
import { describe, expect, it } from 'vitest';
import { scriptedRouterHarness } from '../support/scripted-router.js';

const routers = scriptedRouterHarness();

/** A POST's whole answer: status, content type and body text. */
async function post(origin: string, path: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string }> {
  const answer = await fetch(`${origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: answer.status, type: answer.headers.get('content-type'), text: await answer.text() };
}

/** NDJSON as Ollama writes it: every line one JSON object, the text ending in a newline, no blank line. */
function ndjsonLines(text: string): Record<string, unknown>[] {
  expect(text.endsWith('\n')).toBe(true);
  const lines = text.slice(0, -1).split('\n');
  expect(lines.filter((line) => line.trim() === '')).toEqual([]);
  return lines.map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("Ollama's API on the router", () => {
  it('streams a chat as NDJSON lines, the final one done with its counts', async () => {
    const { origin } = await routers.start();
    const answer = await post(origin, '/api/chat', { model: 'small:latest', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status).toBe(200);
    expect(answer.type).toBe('application/x-ndjson');
    const lines = ndjsonLines(answer.text);
    expect(lines.map((line) => (line['message'] as { content: string }).content).join('')).toBe('first second');
    expect(lines.at(-1)).toMatchObject({ model: 'small:latest', done: true, done_reason: 'stop', prompt_eval_count: 3, eval_count: 2 });
    // The engine was asked for a streamed chat completion with usage, under the model's catalog id.
    const sent = routers.engine.requests.at(-1);
    expect(sent?.path).toBe('/v1/chat/completions');
    expect(sent?.body).toMatchObject({ model: 'small', stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'hi' }] });
  });

  it('ends a stream the engine breaks off with an error line of its own, which the client raises', async () => {
    const { origin } = await routers.start();
    const answer = await post(origin, '/api/chat', { model: 'small', messages: [{ role: 'user', content: 'mode:die-mid-stream' }] });
    const lines = ndjsonLines(answer.text);
    expect(lines.at(-1)?.['error']).toMatch(/stopped before the answer was complete/);
    const client = new Ollama({ host: origin });
    const parts: unknown[] = [];
    const failure = await (async () => {
      for await (const part of await client.chat({ model: 'small', messages: [{ role: 'user', content: 'mode:die-mid-stream' }], stream: true })) parts.push(part);
    })().catch((error: unknown) => error);
    expect(parts.length).toBeGreaterThan(0);
    expect((failure as Error).message).toMatch(/stopped before the answer was complete/);
  });

  it('says nothing while a streamed request waits for its model, then refuses with a status and {"error"} once the bound passes', async () => {
    const { origin } = await routers.start({}, { activationWaitMs: 200, retryAfterSeconds: 3 });
    const answer = await post(origin, '/api/generate', { model: 'never', prompt: 'hi' });
    expect(answer.status).toBe(503);
    expect(answer.type).toMatch(/^application\/json/);
    expect(JSON.parse(answer.text)).toEqual({ error: expect.stringMatching(/not ready|loading|waiting/) as string });
  });

  it('refuses a quarantined model at once, with the reason, in Ollama’s shape', async () => {
    const { origin } = await routers.start();
    const answer = await post(origin, '/api/chat', { model: 'broken', messages: [{ role: 'user', content: 'hi' }] });
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toEqual({ error: expect.stringContaining('unknown model architecture') as string });
  });

  it('answers its guards in Ollama’s shape: a foreign Host, a missing client key; a key lets the request through', async () => {
    const { origin, router } = await routers.start({}, { access: () => ({ clientKeys: [{ name: 'app', key: 'k'.repeat(24) }], keysRequired: false, allowedHosts: [], corsOrigins: [], fallthroughFromNetwork: false }) });
    const foreign = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request({ host: '127.0.0.1', port: router.port, path: '/api/tags', headers: { host: 'attacker.example' } }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      request.on('error', reject);
      request.end();
    });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body)).toEqual({ error: expect.any(String) as string });
    const keyless = await new Ollama({ host: origin }).list().catch((error: unknown) => error);
    expect(keyless).toMatchObject({ status_code: 401 });
    const keyed = new Ollama({ host: origin, headers: { authorization: `Bearer ${'k'.repeat(24)}` } });
    expect((await keyed.version()).version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('leaves every other /api/ path to the admin API, and refuses the routes it does not serve with 501 naming them', async () => {
    const seen: string[] = [];
    const { origin } = await routers.start({}, { fallthrough: (req, res) => (seen.push(req.url ?? ''), res.end('admin')) });
    expect(await (await fetch(`${origin}/api/state`)).text()).toBe('admin');
    expect(seen).toEqual(['/api/state']);
    const pull = await post(origin, '/api/pull', { model: 'hf.co/owner/repo:Q4_K_M' });
    expect(pull.status).toBe(501);
    expect(JSON.parse(pull.text).error).toMatch(/^\/api\/pull is not served by llmtray: .*llmtray pull/);
    const wrongMethod = await fetch(`${origin}/api/chat`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');
    expect(await wrongMethod.json()).toEqual({ error: '/api/chat accepts POST only.' });
  });

  it('loads with an empty prompt once the model is ready, answering done_reason load, and sends the engine nothing', async () => {
    const { origin, gateway } = await routers.start();
    const before = routers.engine.requests.length;
    const answer = await post(origin, '/api/generate', { model: 'cold' });
    expect(JSON.parse(answer.text)).toMatchObject({ model: 'cold', response: '', done: true, done_reason: 'load' });
    expect(gateway.loadsStarted.get('cold')).toBe(1);
    expect(routers.engine.since(before)).toEqual([]);
  });
});
