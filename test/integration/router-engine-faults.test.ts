// The router's side of an engine that fails (core/router/engine/upstream.ts): a client that
// leaves, an engine that dies before or during its answer (the one resend, on a socket-resetting
// "dying engine"), an engine found hung, and the progress hang detection reads. The official
// `openai` client → the router → the fake engine, set up as router.test.ts
// (test/support/openai-router.ts).
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDyingEngine } from '../support/router-fake-engine.js';
import type { ScriptedClaim } from '../support/scripted-gateway.js';
import { openAIRouters, caught, hello } from '../support/openai-router.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const routers = openAIRouters();
const { engine, startRouter } = routers;
let dying: Awaited<ReturnType<typeof startDyingEngine>>;

beforeAll(async () => {
  dying = await startDyingEngine();
});
afterAll(async () => {
  await dying.stop();
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

  it('answers 502 engine_interrupted, not the part it got, when the engine dies while writing a chat completion it collects', async () => {
    const { client, gateway } = await startRouter();
    const before = engine.requests.length;
    // A chat completion is collected whole (chat-answer-shape.ts), so nothing reached the client yet: it can still be told.
    const error = await caught(client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:json-cut' }] }));
    expect(error.status).toBe(502);
    expect(error.code).toBe('engine_interrupted');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('engine');
    // An answer had begun: never resent.
    expect(engine.requests.length - before).toBe(1);
    await vi.waitFor(() => expect(gateway.inFlight('small')).toBe(0), UNTIL_SEEN);
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
