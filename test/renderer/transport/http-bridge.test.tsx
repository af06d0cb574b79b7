// The HTTP + SSE bridge against a real HTTP server on 127.0.0.1 that speaks the admin API's
// shapes: the Bearer token on every request (no session, no cookie), state, commands, logs,
// and the event stream. The page's surroundings (address fragment, sessionStorage) are the
// injected environment.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import { AdminRefusal } from '../../../core/contracts/admin-routes.js';
import type { DashboardBridge } from '../../../core/contracts/bridge.js';
import { twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { AuthRequiredError, createHttpBridge, TOKEN_STORAGE_KEY, tokenFromHash, type HttpBridgeEnvironment } from '../../../renderer/src/transport/http-bridge.js';

const TOKEN = 'tok-3f9a';

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  cookie: string | undefined;
}

/** A small stand-in for the daemon's admin routes, with the knobs a test needs. */
class FakeDaemon {
  readonly seen: Seen[] = [];
  readonly commands: string[] = [];
  /** The token it accepts; changing it is what replacing DATA_DIR/admin-token does. */
  token = TOKEN;
  /** When set, /api/events answers headers and then never writes (a dead connection). */
  silentStreams = false;
  private streams = new Set<ServerResponse>();
  private server: Server;

  constructor() {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.dropStreams();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  push(event: AdminEvent): void {
    for (const res of this.streams) res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  }

  /** What a daemon restart does to open streams. */
  dropStreams(): void {
    for (const res of this.streams) res.destroy();
    this.streams.clear();
  }

  get openStreams(): number {
    return this.streams.size;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = req.url ?? '/';
    this.seen.push({ method: req.method ?? '', url, authorization: req.headers.authorization, cookie: req.headers.cookie });
    const json = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      return json(401, { error: { code: 'unauthorized', message: 'This API needs the admin token.' } }, { 'www-authenticate': 'Bearer realm="llmtray"' });
    }
    if (url === '/api/state') return json(200, twoGpusWithOtherProgram());
    const command = /^\/api\/models\/([^/]+)\/(pin|unpin|load|unload|retry)$/.exec(url);
    if (req.method === 'POST' && command !== null) {
      const id = decodeURIComponent(command[1]!);
      this.commands.push(`${command[2]} ${id}`);
      if (id === 'nope') return json(404, { ok: false, code: 'unknown_model', message: "Unknown model 'nope'; the models are: llama-8b." });
      return json(200, { ok: true, message: `Pinned ${id}.` });
    }
    if (req.method === 'POST' && url.startsWith('/api/models/')) return json(400, { error: { code: 'invalid_param', message: 'runCommand: command: expected one of pin, unpin, load, unload, retry.' } });
    const logs = /^\/api\/models\/([^/]+)\/logs$/.exec(url);
    if (logs !== null) return json(200, { modelId: decodeURIComponent(logs[1]!), lines: ['line one', 'line two'], next: 2 });
    if (url === '/api/events') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.flushHeaders();
      this.streams.add(res);
      res.on('close', () => this.streams.delete(res));
      if (!this.silentStreams) res.write(`event: SnapshotUpdated\ndata: ${JSON.stringify({ type: 'SnapshotUpdated', snapshot: twoGpusWithOtherProgram() })}\n\n`);
      return;
    }
    json(404, { error: { code: 'not_found', message: `Nothing at ${url}.` } });
  }
}

/** The browser's part: a tab's sessionStorage. */
function pageEnvironment(baseUrl: string, urlToken: string | null, extra: Partial<HttpBridgeEnvironment> = {}) {
  const stored = new Map<string, string>();
  const authRequired: string[] = [];
  const env: HttpBridgeEnvironment = {
    baseUrl,
    fetch,
    takeUrlToken: () => urlToken,
    storage: {
      getItem: (key) => stored.get(key) ?? null,
      setItem: (key, value) => void stored.set(key, value),
      removeItem: (key) => void stored.delete(key),
    },
    onAuthRequired: (message) => authRequired.push(message),
    reconnectInitialMs: 10,
    reconnectMaxMs: 40,
    ...extra,
  };
  return { env, stored, authRequired };
}

const daemons: FakeDaemon[] = [];
const unsubscribes: (() => void)[] = [];
afterEach(async () => {
  unsubscribes.splice(0).forEach((stop) => stop());
  await Promise.all(daemons.splice(0).map((d) => d.stop()));
});

async function daemon(): Promise<{ daemon: FakeDaemon; baseUrl: string }> {
  const d = new FakeDaemon();
  daemons.push(d);
  return { daemon: d, baseUrl: await d.start() };
}

function record(bridge: DashboardBridge) {
  const events: AdminEvent[] = [];
  const connection: boolean[] = [];
  unsubscribes.push(bridge.subscribe((event) => events.push(event), (connected) => connection.push(connected)));
  return { events, connection };
}

describe('tokenFromHash', () => {
  it('finds the token among fragment parameters', () => {
    expect(tokenFromHash('#token=abc')).toBe('abc');
    expect(tokenFromHash('#view=logs&token=a%2Bb')).toBe('a+b');
    expect(tokenFromHash('#token=')).toBeNull();
    expect(tokenFromHash('')).toBeNull();
  });
});

describe('HTTP bridge', () => {
  it('sends the URL token as a Bearer header on every request, remembers it for the tab, and never sends a cookie', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const page = pageEnvironment(baseUrl, TOKEN);
    const bridge = createHttpBridge(page.env);
    const state = await bridge.getSnapshot();
    expect(state.models.map((m) => m.id)).toEqual(['qwen-14b', 'qwen-0.5b', 'llama-8b']);
    expect(page.stored.get(TOKEN_STORAGE_KEY)).toBe(TOKEN);
    const seen = record(bridge);
    await vi.waitFor(() => expect(seen.events).toHaveLength(1));
    expect(d.seen.map((s) => `${s.method} ${s.url}`)).toEqual(['GET /api/state', 'GET /api/events']);
    expect(d.seen.every((s) => s.authorization === `Bearer ${TOKEN}` && s.cookie === undefined)).toBe(true);
    expect(d.seen.some((s) => s.url.includes(TOKEN))).toBe(false);
  });

  it('uses the token this tab remembered when the address has none (a reload)', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const page = pageEnvironment(baseUrl, null);
    page.stored.set(TOKEN_STORAGE_KEY, TOKEN);
    expect((await createHttpBridge(page.env).getSnapshot()).revision).toBeGreaterThan(0);
    expect(d.seen[0]?.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("runs commands, passes the command's own refusals through as results, and the transport's as errors", async () => {
    const { daemon: d, baseUrl } = await daemon();
    const bridge = createHttpBridge(pageEnvironment(baseUrl, TOKEN).env);
    expect(await bridge.runCommand({ id: 'qwen 14b/x', command: 'pin' })).toEqual({ ok: true, message: 'Pinned qwen 14b/x.' });
    expect(d.seen.at(-1)?.url).toBe('/api/models/qwen%2014b%2Fx/pin');
    expect(await bridge.runCommand({ id: 'nope', command: 'retry' })).toEqual({
      ok: false,
      code: 'unknown_model',
      message: "Unknown model 'nope'; the models are: llama-8b.",
    });
    expect(d.commands).toEqual(['pin qwen 14b/x', 'retry nope']);
    // A verb the daemon does not know (an older daemon): the refusal's own sentence, as an error.
    const refused = await bridge.runCommand({ id: 'llama-8b', command: 'frobnicate' as 'pin' }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AdminRefusal);
    expect(refused).toMatchObject({ status: 400, code: 'invalid_param', message: 'runCommand: command: expected one of pin, unpin, load, unload, retry.' });
    expect(await bridge.getLogs({ id: 'llama-8b' })).toEqual({ modelId: 'llama-8b', lines: ['line one', 'line two'], next: 2 });
  });

  it('delivers the snapshot first and then each event, with the connection reported up', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const seen = record(createHttpBridge(pageEnvironment(baseUrl, TOKEN).env));
    await vi.waitFor(() => expect(seen.events.map((e) => e.type)).toEqual(['SnapshotUpdated']));
    expect(seen.connection).toEqual([true]);
    d.push({ type: 'LogAppended', modelId: 'llama-8b', first: 40, lines: ['slot 0: 12 tokens'] });
    d.push({ type: 'ModelQuarantined', modelId: 'demo-broken', reason: 'crashed 5 times', at: 1 });
    await vi.waitFor(() => expect(seen.events).toHaveLength(3));
    expect(seen.events.slice(1)).toEqual([
      { type: 'LogAppended', modelId: 'llama-8b', first: 40, lines: ['slot 0: 12 tokens'] },
      { type: 'ModelQuarantined', modelId: 'demo-broken', reason: 'crashed 5 times', at: 1 },
    ]);
  });

  it('reconnects after a daemon restart with the same token', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const page = pageEnvironment(baseUrl, TOKEN);
    const seen = record(createHttpBridge(page.env));
    await vi.waitFor(() => expect(seen.events).toHaveLength(1));
    d.dropStreams();
    await vi.waitFor(() => expect(seen.events).toHaveLength(2));
    expect(seen.connection).toEqual([true, false, true]);
    const streams = d.seen.filter((s) => s.url === '/api/events');
    expect(streams).toHaveLength(2);
    expect(streams.every((s) => s.authorization === `Bearer ${TOKEN}`)).toBe(true);
    expect(page.authRequired).toEqual([]);
  });

  it('reopens a stream that went silent', async () => {
    const { daemon: d, baseUrl } = await daemon();
    d.silentStreams = true;
    const seen = record(createHttpBridge(pageEnvironment(baseUrl, TOKEN, { staleAfterMs: 50 }).env));
    await vi.waitFor(() => expect(d.seen.filter((s) => s.url === '/api/events').length).toBeGreaterThanOrEqual(2));
    d.silentStreams = false;
    await vi.waitFor(() => expect(seen.events.length).toBeGreaterThanOrEqual(1));
    expect(seen.connection.at(-1)).toBe(true);
  });

  it('without a token, refuses with the sentence that says how to open the dashboard, and stops asking', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const page = pageEnvironment(baseUrl, null);
    const bridge = createHttpBridge(page.env);
    await expect(bridge.getSnapshot()).rejects.toBeInstanceOf(AuthRequiredError);
    expect(page.authRequired).toEqual([expect.stringContaining('llmtray dashboard')]);
    const seen = record(bridge);
    await vi.waitFor(() => expect(page.authRequired).toHaveLength(2));
    // Refused, not lost: the dashboard shows what to do instead of "reconnecting"; and only a
    // new page address can bring a token, so the stream is not retried.
    expect(seen.connection).toEqual([]);
    const asked = d.seen.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(d.seen).toHaveLength(asked);
    expect(d.seen.every((s) => s.authorization === undefined)).toBe(true);
  });

  it('forgets a token the daemon no longer accepts, and sends it no more', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const page = pageEnvironment(baseUrl, TOKEN);
    const bridge = createHttpBridge(page.env);
    await bridge.getSnapshot();
    d.token = 'a-new-token';
    await expect(bridge.getSnapshot()).rejects.toBeInstanceOf(AuthRequiredError);
    expect(page.stored.has(TOKEN_STORAGE_KEY)).toBe(false);
    await expect(bridge.getLogs({ id: 'llama-8b' })).rejects.toBeInstanceOf(AuthRequiredError);
    expect(d.seen.at(-1)?.authorization).toBeUndefined();
  });

  it('reports a lost connection while the daemon is down and stops when unsubscribed', async () => {
    const { daemon: d, baseUrl } = await daemon();
    const bridge = createHttpBridge(pageEnvironment(baseUrl, TOKEN).env);
    const seen = record(bridge);
    await vi.waitFor(() => expect(seen.connection).toEqual([true]));
    await d.stop();
    daemons.splice(daemons.indexOf(d), 1);
    await vi.waitFor(() => expect(seen.connection).toEqual([true, false]));
    unsubscribes.splice(0).forEach((stop) => stop());
    const count = seen.connection.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen.connection).toHaveLength(count);
  });
});
