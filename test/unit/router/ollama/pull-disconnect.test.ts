// Who stops a pull when an app that follows it through /api/pull goes away (ollama/pulls.ts):
// the last Ollama request following a pull an Ollama request started cancels it, as Ollama's
// server does; a pull someone started elsewhere (the CLI, the dashboard) goes on. Real HTTP on
// loopback; the pull manager is a stand-in whose pull never ends until the test says, so that
// the only thing that could cancel it is the departure under test.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Emitter } from '../../../../core/common/emitter.js';
import type { PullView } from '../../../../core/contracts/hub/pulls.js';
import { servePull, type OllamaPulls } from '../../../../core/router/ollama/pulls.js';

const ID = 'hf.co/o/r:Q4_K_M';

function pullStandIn(startedAt: () => number): OllamaPulls & { cancelled: string[]; end: () => void } {
  const changes = new Emitter<PullView>('pulls');
  let end!: () => void;
  const view = (): PullView => ({ id: ID, repo: 'o/r', state: 'downloading', files: [{ path: 'r.gguf', sizeBytes: 10, receivedBytes: 1, sha256: 'c'.repeat(64) }], receivedBytes: 1, totalBytes: 10, bytesPerSecond: 0, secondsLeft: null, message: '', startedAt: startedAt() });
  const finished = new Promise<PullView>((done) => (end = () => done({ ...view(), state: 'cancelled' })));
  const cancelled: string[] = [];
  return {
    cancelled,
    end,
    onDidChange: changes.event,
    start: async () => view(),
    finished: () => finished,
    cancel: async (id) => (cancelled.push(id), end(), finished),
    remove: async () => ({ removed: [] }),
  };
}

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((done) => server?.close(done) ?? done(undefined));
});

/** A server answering /api/pull with `pulls`; resolves with its URL and a promise per connection's close (after the response saw it). */
async function serve(pulls: OllamaPulls): Promise<{ url: string; closed: Promise<void>[] }> {
  const followers = new Map<string, number>();
  const closed: Promise<void>[] = [];
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => void servePull(res, pulls, JSON.parse(raw) as Record<string, unknown>, followers));
  });
  // Registered after the server's own listener, so the response has seen its close when this runs.
  server.on('connection', (socket) => closed.push(new Promise((done) => socket.on('close', () => setImmediate(done)))));
  await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/pull`, closed };
}

/** Starts a streamed pull and returns once its first progress line arrived, with a way to go away. */
async function follow(url: string): Promise<AbortController> {
  const abort = new AbortController();
  const res = await fetch(url, { method: 'POST', body: JSON.stringify({ model: ID }), signal: abort.signal });
  const reader = res.body!.getReader();
  let text = '';
  while (!text.includes('"digest"')) text += new TextDecoder().decode((await reader.read()).value);
  return abort;
}

describe('an app that goes away mid-pull', () => {
  it('cancels a pull an Ollama request started once the last Ollama follower is gone', async () => {
    const pulls = pullStandIn(() => Date.now() + 1000);
    const { url, closed } = await serve(pulls);
    const first = await follow(url);
    const second = await follow(url);
    first.abort();
    await closed[0];
    expect(pulls.cancelled).toEqual([]);
    second.abort();
    await closed[1];
    expect(pulls.cancelled).toEqual([ID]);
  });

  it('leaves a pull started elsewhere running when the app that joined it goes away', async () => {
    const pulls = pullStandIn(() => 0);
    const { url, closed } = await serve(pulls);
    (await follow(url)).abort();
    await closed[0];
    expect(pulls.cancelled).toEqual([]);
    pulls.end();
  });
});
