import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHealth, Doorbell, EMBEDDED_READY_LINE, parseLoadProgress, waitUntilReady } from '../../../core/engine/supervisor/readiness.js';
import { realClock } from '../../../core/common/clock.js';
import { freeLoopbackPort } from '../../../core/engine/supervisor/free-port.js';
import { FakeClock } from '../../support/fake-clock.js';

describe('parseLoadProgress', () => {
  it.each([
    ['{"progress":0.4}', 0.4],
    ['{"status":"loading","progress":40}', 0.4],
    ['{"error":{"code":503,"message":"Loading model","type":"unavailable_error","progress":0.25}}', 0.25],
    ['{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}', null],
    ['Loading model', null],
  ])('%s → %s', (body, progress) => {
    expect(parseLoadProgress(body)).toBe(progress);
  });
});

describe('Doorbell', () => {
  it('keeps a ring that came while nobody waited', async () => {
    const bell = new Doorbell();
    bell.ring();
    // On a clock that never moves, only the kept ring can end the wait.
    await bell.wait(5, new AbortController().signal, new FakeClock());
  });

  it('wakes a waiter', async () => {
    const bell = new Doorbell();
    const clock = new FakeClock();
    const waiting = bell.wait(5, new AbortController().signal, clock);
    expect(clock.pendingDelays()).toEqual([5]);
    bell.ring();
    await waiting;
    expect(clock.pendingDelays()).toEqual([]);
  });
});

describe('waitUntilReady against a real HTTP server', () => {
  let server: Server | undefined;
  afterEach(() => server?.close());

  it('reports progress from 503 bodies and resolves on the first 200 after the ready line', async () => {
    let ready = false;
    const seenKeys: (string | undefined)[] = [];
    server = createServer((req, res) => {
      seenKeys.push(req.headers.authorization);
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
      res.end(ready ? '{"status":"ok"}' : '{"error":{"code":503,"message":"Loading model","progress":0.5}}');
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const doorbell = new Doorbell();
    const progress: (number | null)[] = [];
    let heardProgress = (): void => {};
    const firstProgress = new Promise<void>((resolve) => (heardProgress = resolve));
    const done = waitUntilReady({
      port, apiKey: 'sekret', doorbell, signal: new AbortController().signal, clock: realClock,
      onProgress: (p) => {
        progress.push(p);
        heardProgress();
      },
    });
    // Ready only once a 503 body was read: a fixed wait lost that race on a loaded machine.
    await firstProgress;
    ready = true;
    doorbell.ring();
    await done;
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((p) => p === 0.5)).toBe(true);
    expect(seenKeys.every((k) => k === 'Bearer sekret')).toBe(true);
  });

  it('takes a ready line that proves readiness without asking /health again; any other line still asks', async () => {
    let asked = 0;
    server = createServer((_req, res) => {
      asked++;
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":{"code":503,"message":"Loading model"}}');
    });
    await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const doorbell = new Doorbell();
    let proven = false;
    const done = waitUntilReady({ port, apiKey: 'k', doorbell, signal: new AbortController().signal, clock: new FakeClock(), provenReady: () => proven });
    await new Promise((resolve) => setTimeout(resolve, 30));
    // A ring that proves nothing: one more GET, still loading.
    const before = asked;
    doorbell.ring();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(asked).toBe(before + 1);
    proven = true;
    doorbell.ring();
    await done;
    expect(asked).toBe(before + 1);
  });

  it('knows the embedded engine\'s own ready line, and only that wording, as proof', () => {
    expect(EMBEDDED_READY_LINE.test('srv  llama_server: model loaded')).toBe(true);
    // llama-server says "model loaded" before it turns ready; a stamped or other line is no proof.
    expect(EMBEDDED_READY_LINE.test('main: model loaded')).toBe(false);
    expect(EMBEDDED_READY_LINE.test('0.01.234 I srv  llama_server: model loaded')).toBe(false);
    expect(EMBEDDED_READY_LINE.test('main: HTTP server is listening, hostname: 127.0.0.1, port: 1')).toBe(false);
  });

  it('rejects with the abort reason when aborted while nothing listens', async () => {
    const port = await freeLoopbackPort();
    const controller = new AbortController();
    const done = waitUntilReady({ port, apiKey: 'k', doorbell: new Doorbell(), signal: controller.signal, clock: realClock });
    controller.abort('exited');
    await expect(done).rejects.toBe('exited');
    expect(await checkHealth(port, 'k')).toEqual({ kind: 'unreachable' });
  });
});
