// The router's on-demand activation end to end (core/router/activation.ts): the official
// `openai` client → the router → the fake engine, over a scripted gateway that makes a model
// cold, quarantined, left out of a stale plan, kept out by a busy one or waiting for its turn.
// The set-up is router.test.ts's (test/support/openai-router.ts).
import { describe, expect, it, vi } from 'vitest';
import { openAIRouters, caught, hello } from '../support/openai-router.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const { engine, startRouter } = openAIRouters();

describe('on-demand activation', () => {
  it('refuses a quarantined model at once with its reason, without asking for it', async () => {
    const { client, gateway } = await startRouter();
    const error = await caught(client.chat.completions.create({ model: 'broken', messages: hello }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_quarantined');
    expect(error.message).toContain('unknown model architecture');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('router');
    expect(gateway.calls).toEqual([]);
    expect(gateway.nextChanges).toBe(0);
  });

  it('refuses a strictly unschedulable model after exactly one fresh controller pass, without waiting for a change', async () => {
    const { client, gateway } = await startRouter();
    const error = await caught(client.chat.completions.create({ model: 'huge', messages: hello }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_unschedulable');
    expect(error.message).toContain('needs 30.0 GB; 24.0 GB budget');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(gateway.calls).toEqual(['demand:huge', 'wait:huge', 'reconcileNow']);
    expect(gateway.nextChanges).toBe(0);
    expect(gateway.waiting.get('huge')).toBe(0);
    expect(gateway.startedTotal).toBe(0);
  });

  it('serves a model left out of a stale plan once the fresh pass finds room', async () => {
    const { client, gateway } = await startRouter({}, { huge: { onReconcile: 'room-made' } });
    const answer = await client.chat.completions.create({ model: 'huge', messages: hello });
    expect(answer.choices[0]?.message.content).toBe('echo: hello');
    expect(gateway.calls.slice(0, 3)).toEqual(['demand:huge', 'wait:huge', 'reconcileNow']);
  });

  it('waits for a model kept out only by a busy one, looking again at each change, and serves it once it can be claimed', async () => {
    const { client, gateway } = await startRouter();
    const answer = client.chat.completions.create({ model: 'blocked', messages: hello });
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    expect(gateway.waiting.get('blocked')).toBe(1);
    // A change that makes no room (another model's state, say): the request asks again and waits on.
    gateway.changed();
    await vi.waitFor(() => expect(gateway.nextChanges).toBe(2), UNTIL_SEEN);
    expect(gateway.parked).toBe(1);
    expect(gateway.startedTotal).toBe(0);
    gateway.setState('blocked', 'ready');
    expect((await answer).choices[0]?.message.content).toBe('echo: hello');
    expect(gateway.calls).toEqual(['demand:blocked', 'wait:blocked']); // never a reconcileNow: nothing said it will not come
    expect(gateway.claims.map((c) => c.servedBy)).toEqual(['blocked']);
    expect(gateway.waiting.get('blocked')).toBe(0);
  });

  it('holds a request for a ready model whose turn is over until its turn comes again', async () => {
    const { client, gateway } = await startRouter({}, { small: { turnOver: true } });
    const before = engine.requests.length;
    const answer = client.chat.completions.create({ model: 'small', messages: hello });
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    expect(engine.requests.length).toBe(before);
    expect(gateway.startedTotal).toBe(0);
    gateway.setTurnOver('small', false);
    expect((await answer).choices[0]?.message.content).toBe('echo: hello');
    expect(gateway.startedTotal).toBe(1);
  });

  it('waits for a cold model, then answers; concurrent requests start one load', async () => {
    const { client, gateway } = await startRouter();
    // 'never' loads only when the test says so: all four requests are waiting by then, however
    // slowly a busy machine delivers them (a timed load let late ones find it ready).
    const answers = Promise.all(
      [1, 2, 3, 4].map((n) => client.chat.completions.create({ model: 'never', messages: [{ role: 'user', content: `request ${n}` }] })),
    );
    await vi.waitFor(() => expect(gateway.parked).toBe(4), UNTIL_SEEN);
    gateway.setState('never', 'ready');
    expect((await answers).map((a) => a.choices[0]?.message.content)).toEqual(['echo: request 1', 'echo: request 2', 'echo: request 3', 'echo: request 4']);
    expect(gateway.calls.filter((call) => call === 'demand:never')).toHaveLength(4);
    expect(gateway.loadsStarted.get('never')).toBe(1);
    expect(gateway.waiting.get('never')).toBe(0);
    await vi.waitFor(() => expect(gateway.inFlight('never')).toBe(0), UNTIL_SEEN);
  });

  it('answers 503 model_loading with Retry-After and the gateway’s reason when the model is not ready within the wait', async () => {
    const { client, gateway } = await startRouter({ activationWaitMs: 30, retryAfterSeconds: 7 });
    const error = await caught(client.chat.completions.create({ model: 'blocked', messages: hello }));
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_loading');
    expect(error.headers?.get('retry-after')).toBe('7');
    expect(error.headers?.get('x-llmtray-error-source')).toBe('router');
    expect(error.message).toContain("'blocked'");
    expect(error.message).toContain('it is waiting for memory: needs 6.0 GB; 2.0 GB free, 4.0 GB held by active small');
    expect(gateway.startedTotal).toBe(0);
    expect(gateway.waiting.get('blocked')).toBe(0);
    expect(gateway.parked).toBe(0);
  });

  it('refuses a waiting request as soon as its model is quarantined, with the reason', async () => {
    const { client, gateway } = await startRouter();
    const pending = caught(client.chat.completions.create({ model: 'never', messages: hello }));
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    gateway.setState('never', 'quarantined', 'Out of memory at every level, and no fallback is configured.');
    const error = await pending;
    expect(error.code).toBe('model_quarantined');
    expect(error.message).toContain('Out of memory at every level');
    expect(error.headers?.get('x-should-retry')).toBe('false');
    expect(gateway.waiting.get('never')).toBe(0);
  });

  it('refuses a waiting request with 503 when the controller stops, since nothing will be loaded', async () => {
    const { client, gateway } = await startRouter();
    const pending = caught(client.chat.completions.create({ model: 'never', messages: hello }));
    await vi.waitFor(() => expect(gateway.parked).toBe(1), UNTIL_SEEN);
    gateway.stop();
    const error = await pending;
    expect(error.status).toBe(503);
    expect(error.code).toBe('model_unavailable');
    expect(error.message).toContain('no model will be loaded');
    expect(gateway.waiting.get('never')).toBe(0);
  });
});
