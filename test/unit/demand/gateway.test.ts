// The daemon's gateway over a scripted controller and supervisor (gateway-harness.ts): what a
// claim counts and on which server, when a busy model's turn ends, what wakes a waiting request,
// and what /v1/models says.
import { describe, expect, it } from 'vitest';
import { catalogModel } from '../../support/catalog-model.js';
import { gatewayWith, settled, turn } from './gateway-harness.js';

describe('the daemon gateway: claims', () => {
  it('claims the engine of the model that serves, counts it there, and stamps both models used (fallback)', async () => {
    const { clock, controller, supervisor, activity, gateway } = gatewayWith();
    controller.fallbacks.set('big', 'small');
    supervisor.run('small', 4100);
    const claim = gateway.claim('big', true);
    expect(claim?.servedBy).toBe('small');
    expect(claim?.endpoint).toEqual({ baseUrl: 'http://127.0.0.1:4100', apiKey: 'key-4100' });
    expect(supervisor.inFlight('small')).toBe(1);
    expect(supervisor.inFlight('big')).toBe(0);
    expect(activity.lastUsed('big')).toBe(clock.elapsed());
    expect(activity.lastUsed('small')).toBe(clock.elapsed());
    await clock.advance(3_000);
    claim?.release();
    expect(supervisor.inFlight('small')).toBe(0);
    expect(activity.lastUsed('small')).toBe(clock.elapsed()); // the idle TTL runs from the end of the answer
  });

  it('asks for a refresh only when the serving model turns busy or idle, and releases each claim once', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    supervisor.run('m', 4100);
    const first = gateway.claim('m', true);
    expect(controller.refreshes).toBe(1);
    const second = gateway.claim('m', true);
    expect(controller.refreshes).toBe(1);
    expect(supervisor.inFlight('m')).toBe(2);

    first?.release();
    first?.release(); // 'close' and a resend may both release: the second must not end another's claim
    expect(supervisor.inFlight('m')).toBe(1);
    expect(controller.refreshes).toBe(1);
    second?.release();
    expect(supervisor.inFlight('m')).toBe(0);
    expect(controller.refreshes).toBe(2);
    second?.release(); // a repeat at idle asks for nothing more
    expect(controller.refreshes).toBe(2);

    const third = gateway.claim('m', true);
    expect(controller.refreshes).toBe(3);
    second?.release();
    first?.release();
    expect(supervisor.inFlight('m')).toBe(1);
    expect(controller.refreshes).toBe(3);
    third?.release();
    expect(controller.refreshes).toBe(4);
    // Nothing waited for memory, so no turn of a busy model asked for a pass at once.
    expect(controller.triggers).toBe(0);
  });

  it('asks for a pass at once when a model turns busy or idle while a request waits for memory', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    supervisor.run('small', 4100);
    const claim = gateway.claim('small', true);
    expect([controller.triggers, controller.refreshes]).toEqual([0, 1]);
    const done = gateway.wait('big'); // asks for a pass itself
    expect(controller.triggers).toBe(1);
    // Idle now, 'small' may be what 'big' waits for: the pass must not wait for a refresh.
    claim?.release();
    expect([controller.triggers, controller.refreshes]).toEqual([2, 1]);
    done();
    gateway.claim('small', true)?.release();
    expect([controller.triggers, controller.refreshes]).toEqual([2, 3]);
  });

  it('claims only what the supervisor would let a request claim, whatever the controller last said', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    controller.set('m', 'ready'); // stale: the engine's exit has not reached the controller yet
    expect(gateway.claim('m', true)).toBeNull();
    const server = supervisor.run('m', 4200, 'loading');
    expect(gateway.claim('m', true)).toBeNull();
    server.phase = 'ready';
    const claim = gateway.claim('m', true);
    expect(claim?.endpoint.baseUrl).toBe('http://127.0.0.1:4200');
    claim?.release();
    server.phase = 'stopping';
    expect(gateway.claim('m', true)).toBeNull();
    expect(controller.refreshes).toBe(2); // the granted claim's busy and idle; the refusals asked for nothing
    expect(controller.triggers).toBe(0);
  });

  it('tells the claim whether the serving engine speaks Anthropic’s Messages API itself, per engine', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    controller.fallbacks.set('big', 'small');
    supervisor.run('small', 4100).anthropicMessages = true;
    supervisor.run('big', 4200);
    expect(gateway.claim('small', true)?.anthropicMessages).toBe(true);
    // Falling back, the request reaches the fallback's engine: its answer is the one that counts.
    expect(gateway.claim('big', true)?.anthropicMessages).toBe(true);
    controller.fallbacks.delete('big');
    expect(gateway.claim('big', true)?.anthropicMessages).toBe(false);
  });

  it('passes the engine’s loss to the claim, and the answer’s progress to the server', () => {
    const { supervisor, gateway } = gatewayWith();
    const server = supervisor.run('m', 4300);
    const claim = gateway.claim('m', true);
    expect(claim?.lost.aborted).toBe(false);
    const mark = server.claims.progressMark;
    claim?.progressed();
    claim?.progressed();
    expect(server.claims.progressMark).toBe(mark + 2);
    server.claims.loseAll({ kind: 'hang', reason: 'it made no progress for 60 s with 1 request in flight' });
    expect(claim?.lost.aborted).toBe(true);
    expect(claim?.lost.reason).toEqual({ kind: 'hang', reason: 'it made no progress for 60 s with 1 request in flight' });
  });

  it('claims no server that runs an old definition: the request waits for its relaunch', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    supervisor.run('m', 4500);
    controller.outdated.add('m');
    expect(gateway.claim('m', true)).toBeNull();
    controller.outdated.delete('m');
    expect(gateway.claim('m', true)).not.toBeNull();
  });

  it('tells the controller once per claim that the serving model answered, at its first progress', () => {
    const { controller, supervisor, gateway } = gatewayWith();
    controller.fallbacks.set('big', 'small');
    supervisor.run('small', 4400);
    const first = gateway.claim('big', true);
    const second = gateway.claim('small', true);
    expect(controller.answered).toEqual([]);
    first?.progressed();
    first?.progressed();
    expect(controller.answered).toEqual(['small']);
    second?.progressed();
    expect(controller.answered).toEqual(['small', 'small']);
  });

  it('counts a waiting request as waiting from its arrival and asks for a pass; ending it twice ends it once', async () => {
    const { clock, controller, activity, gateway } = gatewayWith();
    const done = gateway.wait('m');
    expect(controller.triggers).toBe(1);
    expect(activity.waitingSince('m')).toBe(clock.elapsed());
    const arrived = clock.elapsed();
    await clock.advance(500);
    const later = gateway.wait('m');
    done();
    done();
    expect(activity.waitingSince('m')).toBe(arrived + 500);
    later();
    expect(activity.waitingSince('m')).toBeUndefined();
  });
});

describe('the daemon gateway: turns', () => {
  it('ends a busy model’s turn once a model it is in the way of has waited turnMs, and ends it no longer than that wait', async () => {
    const { clock, controller, supervisor, gateway } = gatewayWith({ turnMs: 2_000 });
    supervisor.run('a', 4100);
    const busy = gateway.claim('a', true);
    controller.yields.set('a', ['b']);
    const bWaits = gateway.wait('b');

    await clock.advance(1_999);
    const early = gateway.claim('a', true);
    expect(early).not.toBeNull();
    early?.release();
    await clock.advance(1);
    expect(gateway.claim('a', true)).toBeNull();
    expect(supervisor.inFlight('a')).toBe(1); // a refused claim counts nothing

    bWaits();
    const again = gateway.claim('a', true);
    expect(again).not.toBeNull();
    again?.release();
    busy?.release();
    expect(supervisor.inFlight('a')).toBe(0);
  });

  it('lets a busy model keep its turn however long a model it is not in the way of waits', async () => {
    const { clock, controller, supervisor, gateway } = gatewayWith({ turnMs: 2_000 });
    supervisor.run('a', 4100);
    controller.yields.set('a', ['b']);
    gateway.wait('c');
    await clock.advance(60_000);
    expect(gateway.claim('a', true)).not.toBeNull();
  });

  it('with turnMs 0, refuses new claims as soon as a rival waits', () => {
    const { controller, supervisor, gateway } = gatewayWith({ turnMs: 0 });
    supervisor.run('a', 4100);
    controller.yields.set('a', ['b']);
    expect(gateway.claim('a', true)).not.toBeNull();
    const bWaits = gateway.wait('b');
    expect(gateway.claim('a', true)).toBeNull();
    bWaits();
    expect(gateway.claim('a', true)).not.toBeNull();
  });

  it('holds a model its client just finished with while its turn lasts: the next request claims it, the policy is told it is held', async () => {
    const { clock, controller, supervisor, turns, gateway } = gatewayWith({ turnMs: 2_000 });
    supervisor.run('a', 4100);
    controller.yields.set('a', ['b']);
    gateway.wait('b');
    gateway.claim('a', true)?.release();
    expect(turns.holds('a')).toBe(true);
    await clock.advance(50);
    const next = gateway.claim('a', true);
    expect(next).not.toBeNull();
    expect(turns.holds('a')).toBe(false); // busy again: active because it decodes
    next?.release();
    await clock.advance(100);
    expect(turns.holds('a')).toBe(false); // nobody came back in time
  });

  it('judges the turn of the model that serves, for a request falling back to it', async () => {
    const { clock, controller, supervisor, gateway } = gatewayWith({ turnMs: 1_000 });
    controller.fallbacks.set('big', 'small');
    supervisor.run('small', 4100);
    controller.yields.set('small', ['b']);
    gateway.wait('b');
    await clock.advance(1_000);
    expect(gateway.claim('big', true)).toBeNull();
    expect(gateway.claim('small', true)).toBeNull();
  });
});

describe('the daemon gateway: what a waiting request waits on', () => {
  it("gives the engine's own load progress where it reports one, else an estimate from the model's last load, else none", async () => {
    const { clock, supervisor, gateway } = gatewayWith();
    supervisor.run('m', 4100, 'loading', { startedAt: clock.now() - 1_200, loadProgress: 0.4, lastLoadMs: 2_000 });
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'loading', servedBy: 'm', fraction: 0.4, estimated: false });
    supervisor.run('m', 4100, 'loading', { startedAt: clock.now() - 1_500, lastLoadMs: 2_000 });
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'loading', servedBy: 'm', fraction: 0.75, estimated: true });
    // Slower than last time: the estimate stops short of done.
    await clock.advance(10_000);
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'loading', servedBy: 'm', fraction: 0.99, estimated: true });
    supervisor.run('m', 4100, 'loading', { startedAt: clock.now() });
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'loading', servedBy: 'm', fraction: null, estimated: false });
  });

  it('says what a model that is not loading waits for, and names the fallback that will answer', () => {
    const { controller, supervisor, gateway } = gatewayWith({ turnMs: 0 });
    controller.set('m', 'queued', { unschedulableReason: 'needs 9.1 GB; 24 GB budget, 17 GB held by active llama-8b' });
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'memory', servedBy: 'm' });
    controller.set('m', 'queued');
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'queued', servedBy: 'm' });
    controller.set('m', 'failed', { recovery: { kind: 'oom', attempts: 1, nextAction: 'degrade', nextAttemptAt: null, lastError: 'cudaMalloc failed' } });
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'retry', servedBy: 'm', failure: 'oom' });
    controller.set('m', 'evicting');
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'stopping', servedBy: 'm' });

    controller.set('m', 'ready');
    supervisor.run('m', 4100);
    controller.yields.set('m', ['b']);
    gateway.wait('b');
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'turn', servedBy: 'm' });

    controller.fallbacks.set('big', 'small');
    supervisor.run('small', 4200, 'loading', { startedAt: 0, loadProgress: 0.1 });
    expect(gateway.waitProgress?.('big')).toEqual({ kind: 'loading', servedBy: 'small', fraction: 0.1, estimated: false });
    supervisor.run('small', 4200, 'stopping');
    expect(gateway.waitProgress?.('big')).toEqual({ kind: 'stopping', servedBy: 'small' });
  });
});

describe('the daemon gateway: limits', () => {
  const limited = (limits: { parallel?: number; queueLimit?: number }) => gatewayWith({ models: [catalogModel('m', { limits }), catalogModel('f', { limits: { parallel: 1 } })] });

  it('claims no more than parallel on its server, so its engine never queues one; without parallel any number', () => {
    const { supervisor, gateway } = limited({ parallel: 2 });
    supervisor.run('m', 4100);
    const [a, b] = [gateway.claim('m', true), gateway.claim('m', true)];
    expect([a, b].every((claim) => claim !== null)).toBe(true);
    expect(gateway.claim('m', true)).toBeNull();
    a?.release();
    expect(gateway.claim('m', true)).not.toBeNull();

    const free = gatewayWith({ models: [catalogModel('m')] });
    free.supervisor.run('m', 4100);
    for (let i = 0; i < 5; i++) expect(free.gateway.claim('m', true)).not.toBeNull();
  });

  it('lets a request that takes no slot (a token count) claim a model whose slots are all held, without taking one', () => {
    const { supervisor, gateway } = limited({ parallel: 1 });
    supervisor.run('m', 4100);
    const generation = gateway.claim('m', true);
    const count = gateway.claim('m', false);
    expect(count).not.toBeNull();
    expect(supervisor.inFlight('m')).toBe(2);
    generation?.release();
    // Its slot is free again though the count is still in flight.
    expect(gateway.claim('m', true)).not.toBeNull();
  });

  it('counts the slots of the model that serves: a request falling back takes one of its fallback’s', () => {
    const { controller, supervisor, gateway } = limited({});
    controller.fallbacks.set('m', 'f');
    supervisor.run('f', 4100);
    expect(gateway.claim('m', true)?.servedBy).toBe('f');
    expect(gateway.claim('f', true)).toBeNull();
  });

  it('wakes the waits when a claim on a limited model ends, and only then', async () => {
    const { supervisor, gateway } = limited({ parallel: 1 });
    supervisor.run('m', 4100);
    const claim = gateway.claim('m', true);
    const change = gateway.nextChange(new AbortController().signal);
    expect(await settled(change)).toBe(false);
    claim?.release();
    await expect(change).resolves.toBeUndefined();

    const free = gatewayWith({ models: [catalogModel('m')] });
    free.supervisor.run('m', 4100);
    const one = free.gateway.claim('m', true);
    free.gateway.claim('m', true);
    const unlimited = free.gateway.nextChange(new AbortController().signal);
    one?.release();
    expect(await settled(unlimited)).toBe(false);
  });

  it('admits by the counts at the call: served on its server and waiting for it', () => {
    const { supervisor, activity, gateway } = limited({ parallel: 1, queueLimit: 1 });
    supervisor.run('m', 4100);
    expect(gateway.admit('m')).toBeNull();
    gateway.claim('m', true);
    expect(gateway.admit('m')).toBeNull();
    gateway.wait('m');
    expect(activity.waitingCount('m')).toBe(1);
    expect(gateway.admit('m')).toEqual({ modelId: 'm', parallel: 1, queueLimit: 1, served: 1, waiting: 1 });
  });

  it('says a request waits for a free slot, in its progress and in the 503 past activationWait', () => {
    const { controller, supervisor, gateway } = limited({ parallel: 1 });
    controller.set('m', 'active');
    supervisor.run('m', 4100);
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'queued', servedBy: 'm' });
    gateway.claim('m', true);
    expect(gateway.waitProgress?.('m')).toEqual({ kind: 'slot', servedBy: 'm', parallel: 1 });
    expect(gateway.waitReason('m')).toBe('m serves 1 request at once (parallel), and every slot held one the whole time');
  });
});

describe('the daemon gateway: nextChange', () => {
  it('resolves at the next controller event, not before, for every request waiting', async () => {
    const { controller, gateway } = gatewayWith();
    const signal = new AbortController().signal;
    const first = gateway.nextChange(signal);
    const second = gateway.nextChange(signal);
    expect(await settled(first)).toBe(false);
    controller.set('m', 'loading');
    await expect(first).resolves.toBeUndefined();
    await expect(second).resolves.toBeUndefined();
    // Each call waits for a change after it: the event above is spent.
    expect(await settled(gateway.nextChange(signal))).toBe(false);
  });

  it('resolves when a request’s wait ends, which may end another model’s turn', async () => {
    const { gateway } = gatewayWith();
    const bWaits = gateway.wait('b');
    const change = gateway.nextChange(new AbortController().signal);
    expect(await settled(change)).toBe(false);
    bWaits();
    await expect(change).resolves.toBeUndefined();
  });

  it('rejects with the signal’s reason, whether it aborted before or during the wait', async () => {
    const { gateway } = gatewayWith();
    const early = new AbortController();
    early.abort('client_gone');
    await expect(gateway.nextChange(early.signal)).rejects.toBe('client_gone');
    const late = new AbortController();
    const change = gateway.nextChange(late.signal);
    expect(await settled(change)).toBe(false);
    late.abort('activation_timeout');
    await expect(change).rejects.toBe('activation_timeout');
  });

  it('rejects when the controller stops while waiting, and at once after it stopped', async () => {
    const { controller, gateway } = gatewayWith();
    const signal = new AbortController().signal;
    const change = gateway.nextChange(signal);
    controller.stop();
    await expect(change).rejects.toThrow(/no model will be loaded/);
    await expect(gateway.nextChange(signal)).rejects.toThrow(/no model will be loaded/);
  });
});

describe('the daemon gateway: /v1/models', () => {
  it('lists every catalog model with its state, level, fallback and the reason it will not come', () => {
    const models = [
      catalogModel('chat', { aliases: ['assistant'] }),
      catalogModel('big', { fallbackId: 'chat' }),
      catalogModel('broken'),
      catalogModel('waiting'),
      catalogModel('unread', { metadataError: 'not a GGUF file: bad magic 0x00000000' }),
    ];
    const { controller, gateway } = gatewayWith({ models });
    controller.set('chat', 'active');
    controller.set('big', 'fallback', { servedBy: 'chat' });
    controller.fallbacks.set('big', 'chat');
    controller.set('broken', 'quarantined', { unschedulableReason: 'an older plan’s words' });
    controller.unservable.set('broken', { code: 'model_quarantined', reason: 'It crashed 5 times in a row.' });
    // Kept out only until a busy model makes room: not unservable, yet its plan's reason is shown.
    controller.set('waiting', 'queued', { unschedulableReason: 'needs 6.0 GB; 2.0 GB free, 4.0 GB held by active chat.' });

    const entries = gateway.listModels();
    expect(entries.map((e) => e.id)).toEqual(['chat', 'big', 'broken', 'waiting', 'unread']);
    for (const entry of entries) expect(entry).toMatchObject({ object: 'model', created: 1_700_000_000, owned_by: 'llmtray' });
    const byId = new Map(entries.map((e) => [e.id, e]));
    expect(byId.get('chat')).toMatchObject({ aliases: ['assistant'], state: 'active', level: 'full', served_by: null, reason: null });
    expect(byId.get('big')).toMatchObject({ state: 'fallback', served_by: 'chat', reason: null });
    expect(byId.get('broken')).toMatchObject({ state: 'quarantined', served_by: null, reason: 'It crashed 5 times in a row.' });
    expect(byId.get('waiting')).toMatchObject({ state: 'queued', reason: 'needs 6.0 GB; 2.0 GB free, 4.0 GB held by active chat.' });
    expect(byId.get('unread')).toMatchObject({ state: 'idle', level: null, served_by: null, reason: 'not a GGUF file: bad magic 0x00000000' });
  });

  it('resolves names and aliases to catalog ids, saying which only embed and why', () => {
    const { gateway } = gatewayWith({
      models: [
        catalogModel('chat', { aliases: ['assistant'] }),
        catalogModel('encoder', { embeddings: { modelPools: true } }),
        catalogModel('as-embedder', { embeddings: { modelPools: false } }),
      ],
    });
    expect(gateway.resolve('assistant')).toEqual({ modelId: 'chat', embeddingsOnly: null });
    expect(gateway.resolve('chat')).toEqual({ modelId: 'chat', embeddingsOnly: null });
    expect(gateway.resolve('encoder')).toEqual({ modelId: 'encoder', embeddingsOnly: 'pooling' });
    expect(gateway.resolve('as-embedder')).toEqual({ modelId: 'as-embedder', embeddingsOnly: 'config' });
    expect(gateway.resolve('gpt-5')).toBeUndefined();
    expect(gateway.modelIds()).toEqual(['chat', 'encoder', 'as-embedder']);
  });
});

describe('the daemon gateway: unreachable engines', () => {
  it('asks the supervisor about the very engine that was unreachable, and returns when it answers', async () => {
    const { supervisor, gateway } = gatewayWith();
    let ended = (): void => {};
    supervisor.endedAfter = new Promise((resolve) => (ended = resolve));
    let returned = false;
    const unreachable = gateway
      .engineUnreachable('m', { baseUrl: 'http://127.0.0.1:4300', apiKey: 'key-4300' }, new AbortController().signal)
      .then(() => (returned = true));
    await turn();
    expect(supervisor.endedAsked).toEqual([{ modelId: 'm', port: 4300, apiKey: 'key-4300' }]);
    expect(returned).toBe(false);
    ended();
    await unreachable;
  });

  it('stops waiting for an engine’s end when the request’s signal aborts', async () => {
    const { supervisor, gateway } = gatewayWith();
    supervisor.endedAfter = new Promise(() => {});
    const abort = new AbortController();
    const unreachable = gateway.engineUnreachable('m', { baseUrl: 'http://127.0.0.1:4400', apiKey: 'k' }, abort.signal);
    abort.abort('client_gone');
    await expect(unreachable).resolves.toBeUndefined();
  });
});
