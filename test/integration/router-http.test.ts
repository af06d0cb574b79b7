// The router's transport (core/router/http/): the Host and Origin guards, client keys, body
// limits and malformed requests, the LAN mode's listener, and answers at the edge of HTTP that
// the fuzz suite found. The official `openai` client and raw sockets → the router → the fake
// engine, set up as router.test.ts (test/support/openai-router.ts).
import OpenAI, { AuthenticationError, BadRequestError } from 'openai';
import { describe, expect, it, vi } from 'vitest';
import { LOOPBACK_ONLY_ACCESS, type RouterAccess, type RouterOptions } from '../../core/router/router.js';
import { openAIRouters, access, caught, hello, rawRequest } from '../support/openai-router.js';
import { rawExchange, type RawAnswer } from '../support/raw-http.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const { engine, engineKey, startRouter } = openAIRouters();

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
