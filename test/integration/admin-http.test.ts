// The admin API end to end: a real loopback listener (the router's, with the admin handler as
// its fallthrough, exactly as the daemon mounts it), a real token file and pin store on disk,
// a real dashboard folder, and plain HTTP clients — including a raw one for paths that fetch
// would normalise. The snapshot is a fixture the test edits; time for throttling and
// heartbeats is a fake clock.
import * as fsp from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminHandler, type AdminHandlerOptions } from '../../core/admin/admin-http.js';
import { AdminService } from '../../core/admin/admin-service.js';
import { ensureAdminToken } from '../../core/admin/admin-token.js';
import { PinStore } from '../../core/admin/pin-store.js';
import { DASHBOARD_CSP } from '../../core/admin/static-files.js';
import type { AdminEvent } from '../../core/contracts/admin-events.js';
import { ADMIN_CALL_NAMES, ADMIN_ROUTES, pathFor, type AdminCallName, type AdminParams } from '../../core/contracts/admin-routes.js';
import type { CommandResult, ModelCommand } from '../../core/contracts/commands.js';
import { PullRefused, type PullActions, type PullView } from '../../core/contracts/hub/pulls.js';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { createRouter, type ListeningRouter } from '../../core/router/router.js';
import type { ModelGateway } from '../../core/router/model-gateway.js';
import { FakeClock, settle } from '../support/fake-clock.js';
import { fixtureSnapshot } from '../support/fixture-snapshot.js';
import { RequestLog } from '../../core/demand/request-log.js';

/** The router needs a gateway; the admin routes never reach it (no model resolves, so nothing is claimed or awaited). */
const noModels: ModelGateway = {
  resolve: () => undefined,
  modelIds: () => [],
  listModels: () => [],
  whyUnservable: () => null,
  waitReason: () => 'no models are configured',
  reconcileNow: async () => {},
  demand: () => {},
  wait: () => () => {},
  admit: () => null,
  claim: () => null,
  nextChange: (signal) =>
    new Promise((_resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    }),
  engineUnreachable: async () => {},
};

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let root: string;
let token: string;
let pins: PinStore;
let view: Omit<Snapshot, 'revision'>;
let clock: FakeClock;
let service: AdminService;
const commandCalls: string[] = [];
const listeners: ListeningRouter[] = [];
const requests = new RequestLog(10);
let port: number;

async function listen(handlerOptions: Partial<AdminHandlerOptions> = {}): Promise<number> {
  const router = createRouter({ gateway: noModels, fallthrough: createAdminHandler({ service, token, clock, ...handlerOptions }) });
  const listening = await router.listen();
  listeners.push(listening);
  return listening.port;
}

function request(path: string, options: { method?: string; headers?: Record<string, string>; port?: number } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: options.port ?? port, path, method: options.method ?? 'GET', headers: options.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const bearer = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** An SSE client over a raw socket: yields each event (or heartbeat comment) as it arrives. */
function openEvents(headers: Record<string, string>): Promise<{ next(): Promise<AdminEvent | 'heartbeat'>; close(): void; status: number }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/api/events', headers }, (res) => {
      let buffer = '';
      const queue: (AdminEvent | 'heartbeat')[] = [];
      let waiting: ((item: AdminEvent | 'heartbeat') => void) | null = null;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let item: AdminEvent | 'heartbeat';
          if (block.startsWith(':')) item = 'heartbeat';
          else {
            const [eventLine, dataLine] = block.split('\n');
            const event = JSON.parse((dataLine ?? '').slice('data: '.length)) as AdminEvent;
            expect(eventLine).toBe(`event: ${event.type}`);
            item = event;
          }
          if (waiting !== null) {
            const deliver = waiting;
            waiting = null;
            deliver(item);
          } else queue.push(item);
        }
      });
      resolve({
        status: res.statusCode ?? 0,
        next: () => {
          const item = queue.shift();
          if (item !== undefined) return Promise.resolve(item);
          return new Promise((deliver) => { waiting = deliver; });
        },
        close: () => req.destroy(),
      });
    });
    req.on('error', reject);
  });
}

/**
 * The pulls as the admin transport sees them: a recording stand-in for core/pull's PullManager
 * (tested against the Hub stand-in in test/unit/pull and through a daemon in
 * test/integration/daemon-pull.test.ts); here only the route table's carrying of them is tested.
 * A name with "refused" in it is refused as the pull refuses.
 */
const pullCalls: string[] = [];
const pullView = (name: string): PullView => ({ id: name, repo: 'owner/repo', state: 'downloading', files: [], receivedBytes: 0, totalBytes: 10, bytesPerSecond: 0, secondsLeft: null, message: '', startedAt: 0 });
const recordingPulls: PullActions = {
  start: async (name) => {
    pullCalls.push(`start ${name}`);
    if (name.includes('refused')) throw new PullRefused(404, 'unknown_quant', `${name}: the quants there are Q4_K_M; pull one as hf.co/owner/repo:Q4_K_M.`);
    return pullView(name);
  },
  list: () => [pullView('hf.co/owner/repo:Q4_K_M')],
  cancel: async (name) => {
    pullCalls.push(`cancel ${name}`);
    return { ...pullView(name), state: 'cancelled' };
  },
  remove: async (name) => {
    pullCalls.push(`delete ${name}`);
    return { removed: [] };
  },
  search: async (query) => {
    pullCalls.push(`search ${query}`);
    return [];
  },
  offer: async (repo) => {
    pullCalls.push(`offer ${repo}`);
    return { repo, quants: [] };
  },
};

beforeAll(async () => {
  root = await fsp.mkdtemp(join(tmpdir(), 'llmtray-admin-'));
  const dataDir = join(root, 'data');
  const staticDir = join(root, 'renderer');
  await fsp.mkdir(staticDir);
  await fsp.writeFile(join(staticDir, 'index.html'), '<!doctype html><script type="module" src="/app.js"></script>');
  await fsp.writeFile(join(staticDir, 'app.js'), 'console.log("dashboard")');
  await fsp.writeFile(join(root, 'secret.txt'), 'TOP-SECRET');
  await fsp.symlink(join(root, 'secret.txt'), join(staticDir, 'linked.txt'));

  token = await ensureAdminToken(dataDir);
  pins = await PinStore.open(dataDir);
  view = fixtureSnapshot();
  clock = new FakeClock();
  const action = (command: ModelCommand) => async (id: string): Promise<CommandResult> => {
    commandCalls.push(`${command} ${id}`);
    if (command === 'pin' || command === 'unpin') {
      const changed = await pins.setPinned(id, command === 'pin');
      return { ok: true, message: changed ? `${command}ned ${id}` : `${id} was already ${command}ned` };
    }
    if (command === 'retry') return { ok: false, message: `${id} is not quarantined; nothing to retry.` };
    return { ok: true, message: `${command} ${id} requested` };
  };
  service = new AdminService({
    buildSnapshot: () => ({ ...view, models: view.models.map((m) => ({ ...m, pinned: pins.isPinned(m.id) })) }),
    commands: { pin: action('pin'), unpin: action('unpin'), load: action('load'), unload: action('unload'), retry: action('retry') },
    logs: (id) => (id === 'llama-3.1-8b' ? { lines: ['llama_model_loader: loaded meta data', 'server is listening'], next: 12 } : undefined),
    activity: (filter) => ({ requests: requests.list(filter), keep: requests.keep, keepBodiesBytes: 0 }),
    clock,
    pulls: recordingPulls,
  });
  port = await listen({ staticDir });
});

afterAll(async () => {
  service.close();
  await Promise.all(listeners.map((l) => l.close()));
  await fsp.rm(root, { recursive: true, force: true });
});

describe('admin API authentication', () => {
  it.each([
    ['GET', '/api/state'],
    ['GET', '/api/events'],
    ['POST', '/api/models/llama-3.1-8b/unload'],
    ['GET', '/api/models/llama-3.1-8b/logs'],
    ['GET', '/api/nothing-here'],
  ])('refuses %s %s without the token', async (method, path) => {
    const attempts: Record<string, string>[] = [{}, { authorization: 'Bearer wrong' }, { authorization: `Bearer ${token.slice(0, -1)}` }, { authorization: token }, { cookie: `llmtray_session_${port}=${token}` }];
    for (const headers of attempts) {
      const reply = await request(path, { method, headers });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe('Bearer realm="llmtray"');
      expect(JSON.parse(reply.body)).toMatchObject({ error: { code: 'unauthorized' } });
    }
    expect(commandCalls).toEqual([]);
  });

  it('serves the snapshot with the token', async () => {
    const reply = await request('/api/state', { headers: bearer() });
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(reply.headers['cache-control']).toBe('no-store');
    const snapshot = JSON.parse(reply.body) as Snapshot;
    expect(snapshot.revision).toBeGreaterThanOrEqual(1);
    expect(snapshot.models.map((m) => m.id)).toEqual(view.models.map((m) => m.id));
  });

  it('takes the token only as a Bearer header: no session route, no cookie, and never a Set-Cookie', async () => {
    // What the daemon once answered POST /api/session with is gone; a cookie holding the token opens nothing.
    const session = await request('/api/session', { method: 'POST', headers: bearer() });
    expect(session.status).toBe(404);
    expect((await request('/api/state', { headers: { cookie: `llmtray_session=${token}; llmtray_session_${port}=${token}` } })).status).toBe(401);
    expect((await request('/api/state', { headers: { authorization: `bearer ${token}` } })).status).toBe(200);
    const replies = [
      session,
      await request('/api/state', { headers: bearer() }),
      await request('/api/models/kev-0.5b/logs', { headers: bearer() }),
      await request('/api/models/kev-0.5b/load', { method: 'POST', headers: bearer() }),
      await request('/api/state'),
      await request('/'),
      await request('/metrics'),
    ];
    for (const reply of replies) expect(reply.headers['set-cookie']).toBeUndefined();
    const events = await openEvents(bearer());
    expect(events.status).toBe(200);
    expect(await events.next()).toMatchObject({ type: 'SnapshotUpdated' });
    events.close();
    // Another site's page cannot use the API even with the token: the router refuses the foreign Origin first.
    const crossSite = await request('/api/models/llama-3.1-8b/unload', { method: 'POST', headers: { ...bearer(), origin: 'https://evil.example' } });
    expect(crossSite.status).toBe(403);
    // The dashboard's own page (same origin) can.
    const sameSite = await request('/api/models/llama-3.1-8b/load', { method: 'POST', headers: { ...bearer(), origin: `http://127.0.0.1:${port}` } });
    expect(sameSite.status).toBe(200);
  });

  it('serves every call of the route table at the path and method the table gives, and nothing else there', async () => {
    const samples: { [K in AdminCallName]: AdminParams<K> } = {
      getSnapshot: {},
      runCommand: { id: 'kev-0.5b', command: 'load' },
      getLogs: { id: 'kev-0.5b' },
      startPull: { name: 'hf.co/owner/repo:Q4_K_M' },
      listPulls: {},
      cancelPull: { name: 'hf.co/owner/repo:Q4_K_M' },
      deletePull: { name: 'hf.co/owner/repo:Q4_K_M' },
      searchHub: { query: 'qwen' },
      offerRepo: { repo: 'owner/repo' },
      getActivity: { model: undefined, status: '429', client: undefined },
    };
    for (const name of ADMIN_CALL_NAMES) {
      const route = ADMIN_ROUTES[name];
      const path = pathFor(name, samples[name] as never);
      const served = await request(path, { method: route.method, headers: bearer() });
      expect(served.status, `${route.method} ${path}`).toBe(200);
      const other = route.method === 'GET' ? 'POST' : 'GET';
      const wrong = await request(path, { method: other, headers: bearer() });
      expect(wrong.status, `${other} ${path}`).toBe(405);
      expect(wrong.headers.allow).toBe(route.method);
    }
  });

  it('carries a pull name with its slashes as one segment, and a pull refused as the pull refused it, in its words', async () => {
    pullCalls.length = 0;
    const started = await request(pathFor('startPull', { name: 'hf.co/owner/repo:Q4_K_M' }), { method: 'POST', headers: bearer() });
    expect(started.status).toBe(200);
    expect(pullCalls).toEqual(['start hf.co/owner/repo:Q4_K_M']);
    const refused = await request(pathFor('startPull', { name: 'owner/refused:Q9' }), { method: 'POST', headers: bearer() });
    expect(refused.status).toBe(404);
    expect(JSON.parse(refused.body)).toEqual({ error: { code: 'unknown_quant', message: 'owner/refused:Q9: the quants there are Q4_K_M; pull one as hf.co/owner/repo:Q4_K_M.' } });
  });

  it('refuses a Host that is not loopback on admin routes too (DNS rebinding)', async () => {
    const reply = await request('/api/state', { headers: { ...bearer(), host: 'attacker.example:80' } });
    expect(reply.status).toBe(403);
  });
});

describe('admin event stream', () => {
  it('sends the snapshot first, then a change after changed(), discrete events and heartbeats, and cleans up on close', async () => {
    const events = await openEvents(bearer());
    expect(events.status).toBe(200);
    const first = await events.next();
    expect(first).toMatchObject({ type: 'SnapshotUpdated' });
    const firstRevision = first !== 'heartbeat' && first.type === 'SnapshotUpdated' ? first.snapshot.revision : -1;

    view = { ...view, models: view.models.map((m) => (m.id === 'kev-0.5b' ? { ...m, inFlight: 1 } : m)) };
    service.changed();
    await clock.advance(100);
    const change = await events.next();
    expect(change).toMatchObject({ type: 'SnapshotUpdated', snapshot: { revision: firstRevision + 1 } });
    if (change !== 'heartbeat' && change.type === 'SnapshotUpdated') {
      expect(change.snapshot.models.find((m) => m.id === 'kev-0.5b')?.inFlight).toBe(1);
    }

    service.publish({ type: 'ModelQuarantined', modelId: 'kev-0.5b', reason: 'crashed 5 times in a row', at: clock.now() });
    expect(await events.next()).toEqual({ type: 'ModelQuarantined', modelId: 'kev-0.5b', reason: 'crashed 5 times in a row', at: clock.now() });

    await clock.advance(15_000);
    expect(await events.next()).toBe('heartbeat');
    expect(clock.pendingDelays()).toHaveLength(1); // the next heartbeat

    events.close();
    // Until the close reaches the server, however long a busy machine takes (100 looks 10 ms
    // apart were a deadline); a heartbeat left pending after the close never clears and times out.
    while (clock.pendingDelays().length > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    await settle();
  });
});

describe('admin commands and logs', () => {
  it('pins a model through the API onto disk, by an id with dots and dashes', async () => {
    commandCalls.length = 0;
    const reply = await request(`/api/models/${encodeURIComponent('llama-3.1-8b')}/unpin`, { method: 'POST', headers: bearer() });
    expect(reply.status).toBe(200);
    const kev = await request('/api/models/kev-0.5b/pin', { method: 'POST', headers: bearer() });
    expect(JSON.parse(kev.body)).toEqual({ ok: true, message: 'pinned kev-0.5b' });
    expect(commandCalls).toEqual(['unpin llama-3.1-8b', 'pin kev-0.5b']);
    expect((await PinStore.open(join(root, 'data'))).list()).toEqual(['kev-0.5b']);
    const snapshot = JSON.parse((await request('/api/state', { headers: bearer() })).body) as Snapshot;
    expect(snapshot.models.find((m) => m.id === 'kev-0.5b')?.pinned).toBe(true);
  });

  it('answers an alias, an unknown model, an unknown command, a wrong method and a declined action', async () => {
    commandCalls.length = 0;
    expect((await request('/api/models/llama/unload', { method: 'POST', headers: bearer() })).status).toBe(200);
    const unknownModel = await request('/api/models/phi-4/pin', { method: 'POST', headers: bearer() });
    expect(unknownModel.status).toBe(404);
    expect(JSON.parse(unknownModel.body)).toMatchObject({ ok: false, code: 'unknown_model' });
    expect(JSON.parse(unknownModel.body).message).toContain("Unknown model 'phi-4'; the models are: kev-0.5b, llama-3.1-8b");
    const unknownCommand = await request('/api/models/kev-0.5b/delete', { method: 'POST', headers: bearer() });
    expect(unknownCommand.status).toBe(400);
    expect(JSON.parse(unknownCommand.body)).toEqual({
      error: { code: 'invalid_param', message: "runCommand: command: expected one of pin, unpin, load, unload, retry, got 'delete'" },
    });
    const wrongMethod = await request('/api/models/kev-0.5b/pin', { headers: bearer() });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.allow).toBe('POST');
    const declined = await request('/api/models/kev-0.5b/retry', { method: 'POST', headers: bearer() });
    expect(declined.status).toBe(409);
    expect(JSON.parse(declined.body)).toEqual({ ok: false, message: 'kev-0.5b is not quarantined; nothing to retry.' });
    const badEncoding = await request('/api/models/%E0%A4%A/pin', { method: 'POST', headers: bearer() });
    expect(badEncoding.status).toBe(400);
    expect(JSON.parse(badEncoding.body).error.message).toBe('The id in /api/models/%E0%A4%A/pin is not valid percent-encoding.');
    const logsByPost = await request('/api/models/kev-0.5b/logs', { method: 'POST', headers: bearer() });
    expect(logsByPost.status).toBe(405);
    expect(logsByPost.headers.allow).toBe('GET');
    expect(commandCalls).toEqual(['unload llama-3.1-8b', 'retry kev-0.5b']);
  });

  it('serves a model server log', async () => {
    const reply = await request('/api/models/llama-3.1-8b/logs', { headers: bearer() });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toEqual({ modelId: 'llama-3.1-8b', lines: ['llama_model_loader: loaded meta data', 'server is listening'], next: 12 });
    expect(JSON.parse((await request('/api/models/kev-0.5b/logs', { headers: bearer() })).body)).toEqual({ modelId: 'kev-0.5b', lines: [], next: 0 });
    const unknown = await request('/api/models/nope/logs', { headers: bearer() });
    expect(unknown.status).toBe(404);
    expect(JSON.parse(unknown.body)).toMatchObject({ error: { code: 'unknown_model' } });
  });
});

describe('/metrics', () => {
  it('is served without the token, with a series for the model that has no server', async () => {
    const reply = await request('/metrics');
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(reply.body).toContain('# TYPE llmtray_model_ready gauge\n');
    expect(reply.body).toContain('llmtray_model_ready{model="kev-0.5b"} 0\n');
    expect(reply.body).toContain('llmtray_model_desired{model="kev-0.5b"} 1\n');
  });

  it('needs the token when configured so', async () => {
    const guarded = await listen({ metrics: 'token' });
    expect((await request('/metrics', { port: guarded })).status).toBe(401);
    expect((await request('/metrics', { port: guarded, headers: bearer() })).status).toBe(200);
  });
});

describe('dashboard files', () => {
  it('serves index.html at / with a strict CSP, nosniff and no-store, and assets with their type', async () => {
    const index = await request('/');
    expect(index.status).toBe(200);
    expect(index.body).toContain('/app.js');
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect(DASHBOARD_CSP).toContain("default-src 'self'");
    expect(DASHBOARD_CSP).toContain("connect-src 'self'");
    expect(index.headers['x-content-type-options']).toBe('nosniff');
    expect(index.headers['cache-control']).toBe('no-store');
    const app = await request('/app.js?v=1');
    expect(app.status).toBe(200);
    expect(app.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(app.body).toBe('console.log("dashboard")');
    expect((await request('/missing.js')).status).toBe(404);
    const post = await request('/', { method: 'POST' });
    expect(post.status).toBe(405);
    expect((await request('/app.js', { method: 'POST' })).status).toBe(405);
    // An API call that forgot its /v1 is told where the API is, not that the path takes GET.
    const forgotV1 = await request('/chat/completions', { method: 'POST' });
    expect(forgotV1.status).toBe(404);
    expect(forgotV1.body).toContain('did you mean /v1/chat/completions?');
  });

  it.each(['/../secret.txt', '/%2e%2e/secret.txt', '/..%2fsecret.txt', '/..%5csecret.txt', '/linked.txt', '/%00index.html'])(
    'refuses %s, which leaves the folder',
    async (path) => {
      const reply = await request(path);
      expect(reply.status).toBe(403);
      expect(reply.body).not.toContain('TOP-SECRET');
    },
  );

  it('says how to build the dashboard when it is not built', async () => {
    const bare = await listen({ staticDir: join(root, 'no-such-dir') });
    const reply = await request('/', { port: bare });
    expect(reply.status).toBe(200);
    expect(reply.body).toContain('its dashboard is not built');
    expect(reply.body).toContain('no-such-dir');
    expect(reply.headers['content-security-policy']).toBe(DASHBOARD_CSP);
    expect((await request('/app.js', { port: bare })).status).toBe(404);
  });
});
