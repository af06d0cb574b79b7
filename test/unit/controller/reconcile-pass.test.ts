// One pass of the controller's loop against a recording fake server (reconcile-pass.ts): what it
// launches and evicts, in which order and where, under a budget that moves, a new definition, a
// server a request has claimed, and models that wait for room.
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_RESYNC_MS } from '../../../core/controller/index.js';
import { settle } from '../../support/fake-clock.js';
import { GiB, model, stopWorlds, world } from './controller-world.js';

afterEach(stopWorlds);

describe('convergence', () => {
  it('launches what fits, reports what does not, and then does no work however often it looks again', async () => {
    const w = world([model('a', 10, { priority: 2 }), model('b', 8, { priority: 1 }), model('c', 10)]);
    await w.start();

    expect(w.server.launches()).toEqual([
      { modelId: 'a', level: 'full' },
      { modelId: 'b', level: 'full' },
    ]);
    expect(w.state('a')).toBe('ready');
    expect(w.state('b')).toBe('ready');
    expect(w.state('c')).toBe('queued');
    expect(w.controller.status('c')?.unschedulableReason).toMatch(/^needs 10 GiB; 24 GiB budget, 18 GiB held by a .* and b .*, 6 GiB free$/);
    expect(w.controller.lastPlan()?.unschedulable.map((u) => u.modelId)).toEqual(['c']);

    const calls = w.server.calls.length;
    const reads = w.desired.reads;
    w.controller.trigger();
    await w.controller.reconcileNow();
    await w.clock.advance(DEFAULT_RESYNC_MS * 3);
    expect(w.desired.reads).toBeGreaterThanOrEqual(reads + 4);
    expect(w.server.calls.length).toBe(calls);
    // The same reason on every pass is logged once, not once per pass.
    expect(w.log.count(/^c does not fit/)).toBe(1);
    expect(w.ofType('ModelUnschedulableChanged').filter((e) => e.modelId === 'c')).toHaveLength(1);

    // A model gone from the catalog and not running is forgotten.
    w.desired.state.models = w.desired.state.models.filter((m) => m.modelId !== 'c');
    await w.controller.reconcileNow();
    expect(w.controller.statuses().map((s) => s.modelId)).toEqual(['a', 'b']);
  });

  it('evicts first and launches only after the eviction has finished', async () => {
    const w = world([model('a', 6)], { budgetGiB: 10 });
    w.desired.state.models.push(model('old', 8, { wanted: false }));
    w.server.place('old', 'full', 8 * GiB);
    w.server.hold('evict', 'old');
    await w.start();

    expect(w.server.calls).toEqual([{ op: 'evict', modelId: 'old' }]);
    expect(w.state('old')).toBe('evicting');
    expect(w.state('a')).toBe('queued');

    w.server.release('evict', 'old');
    await settle();
    expect(w.server.calls).toEqual([
      { op: 'evict', modelId: 'old' },
      { op: 'launch', modelId: 'a', level: 'full' },
    ]);
    expect(w.state('old')).toBe('idle');
    expect(w.state('a')).toBe('ready');
  });

  it('hints the launch an eviction makes room for before evicting, so the supervisor can start its runtime meanwhile; no hint without an eviction', async () => {
    const w = world([model('a', 6)], { budgetGiB: 10 });
    w.desired.state.models.push(model('old', 8, { wanted: false }));
    w.server.place('old', 'full', 8 * GiB);
    w.server.hold('evict', 'old');
    await w.start();
    expect(w.server.preparations).toEqual([expect.objectContaining({ modelId: 'a', level: 'full', afterCalls: 0 })]);
    expect(w.server.calls).toEqual([{ op: 'evict', modelId: 'old' }]);

    w.server.release('evict', 'old');
    await settle();
    // The launch goes where the hint said.
    expect(w.server.placements.get('a')).toEqual(w.server.preparations[0]?.placement);

    w.desired.state.models.push(model('b', 2));
    await w.controller.reconcileNow();
    await settle();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['a', 'b']);
    expect(w.server.preparations.map((p) => p.modelId)).toEqual(['a']);
  });

  it('a load in flight is neither launched twice nor evicted by later passes', async () => {
    const w = world([model('a', 6)]);
    w.server.hold('launch', 'a');
    await w.start();
    expect(w.state('a')).toBe('loading');

    w.desired.update('a', { wanted: false });
    await w.controller.reconcileNow();
    await w.controller.reconcileNow();
    expect(w.server.calls).toEqual([{ op: 'launch', modelId: 'a', level: 'full' }]);

    // Judged once it is up: no longer wanted, so it goes.
    w.server.release('launch', 'a');
    await settle();
    expect(w.server.evictions()).toEqual(['a']);
  });
});

describe('the live budget', () => {
  it('evicts the lowest-priority idle model when the budget shrinks', async () => {
    const w = world([model('a', 8, { priority: 1 }), model('b', 8, { priority: 5 })], { budgetGiB: 20 });
    await w.start();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['b', 'a']);

    w.desired.state.budgetBytes = 10 * GiB;
    w.controller.trigger();
    await settle();

    expect(w.server.evictions()).toEqual(['a']);
    expect(w.server.launches()).toHaveLength(2);
    expect(w.state('a')).toBe('queued');
    expect(w.controller.status('a')?.unschedulableReason).toMatch(/^needs 8 GiB; 10 GiB budget, 8 GiB held by b/);
    expect(w.state('b')).toBe('ready');
  });

  it('never evicts a pinned or an active model, even over budget', async () => {
    const w = world([model('p', 8, { pinned: true }), model('x', 8)], { budgetGiB: 20 });
    await w.start();
    w.desired.update('x', { inFlight: 1 });
    w.desired.state.models.push(model('c', 2));
    w.desired.state.budgetBytes = 4 * GiB;
    w.controller.trigger();
    await settle();

    expect(w.server.evictions()).toEqual([]);
    expect(w.state('p')).toBe('ready');
    expect(w.state('x')).toBe('active');
    // Pinned p alone leaves c no room: that is final until a pin goes, so it is named alone.
    expect(w.controller.status('c')?.unschedulableReason).toBe('needs 2 GiB; 4 GiB budget, 8 GiB held by pinned p (8 GiB), 4 GiB over it: it fits only if a pinned model is unpinned');
    expect(w.controller.whyUnservable('c')?.code).toBe('model_unschedulable');
  });

  it('prices a model with its draft and says so when it does not fit', async () => {
    const estimate = {
      weightsBytes: 20 * GiB,
      kvBytesPerToken: 0,
      contextTokens: 4096,
      computeBytes: 0,
      draft: { weightsBytes: 6 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0 },
    };
    const w = world([model('big', 0, { estimate, draftId: 'tiny-draft' })]);
    await w.start();
    expect(w.server.launches()).toEqual([]);
    expect(w.controller.status('big')?.unschedulableReason).toBe(
      'needs 26 GiB with its draft tiny-draft (20 GiB + 6 GiB), more than the whole 24 GiB budget',
    );
  });
});

describe('placement on the workstation\'s GPUs', () => {
  const twoGpus = [
    { index: 0, name: 'RTX 4090', deviceClass: 'nvidia:rtx 4090', budgetBytes: 10 * GiB },
    { index: 1, name: 'RTX 4090', deviceClass: 'nvidia:rtx 4090', budgetBytes: 10 * GiB },
  ];

  it('places each model on a GPU of its own budget, launches it there, and names each GPU when one is left out', async () => {
    const w = world([model('a', 8, { lastUsed: 3 }), model('b', 8, { lastUsed: 2 }), model('c', 8, { lastUsed: 1 })], { budgetGiB: 20 });
    w.desired.state.devices = twoGpus;
    await w.start();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['a', 'b']);
    expect(new Set([w.server.placements.get('a')?.devices[0]?.index, w.server.placements.get('b')?.devices[0]?.index])).toEqual(new Set([0, 1]));
    expect(w.controller.placement('a')).toEqual(w.server.placements.get('a'));
    // 20 GiB in all, but no GPU has 8 free: the sum would have said it fits.
    expect(w.controller.status('c')?.unschedulableReason).toMatch(/^needs 8 GiB; GPU 0 RTX 4090: 10 GiB budget, 8 GiB held by (a|b) .*; GPU 1 RTX 4090: 10 GiB budget, 8 GiB held by (a|b) .*, 2 GiB free/);
  });

  it('evicts on the GPU that needs the room, never a model elsewhere for nothing', async () => {
    const w = world([model('a', 8, { lastUsed: 1 }), model('b', 4, { lastUsed: 2, wanted: false })], { budgetGiB: 20 });
    w.desired.state.devices = twoGpus;
    await w.start();
    const onA = w.server.placements.get('a')?.devices[0]?.index;
    // b (4 GiB) does not fit next to a (8 of 10 GiB held): it goes to the other GPU.
    w.desired.update('b', { wanted: true });
    w.controller.trigger();
    await settle();
    expect(w.server.placements.get('b')?.devices[0]?.index).not.toBe(onA);
    // A newer 9 GiB model needs a GPU to itself: the least recently used model goes (a), and
    // only it: b, on the other GPU, stays.
    w.desired.state.models.push(model('big', 9, { lastUsed: 3 }));
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['a']);
    expect(w.server.isRunning('b')).toBe(true);
    expect(w.server.placements.get('big')?.devices[0]?.index).toBe(onA);
  });
});

describe('waiting for room', () => {
  it('a model kept out by a busy one waits (not strict); one kept out by pins alone is refused (strict)', async () => {
    const w = world([model('busy', 8), model('pinned', 8, { pinned: true })], { budgetGiB: 20 });
    await w.start();
    w.desired.update('busy', { inFlight: 1 });
    w.desired.state.models.push(model('wants-room', 8, { waitingSince: w.clock.now() }), model('too-big', 14));
    w.controller.trigger();
    await settle();

    expect(w.controller.status('wants-room')?.unschedulableReason).toMatch(/held by .*active busy/);
    expect(w.controller.whyUnservable('wants-room')).toBeNull();
    expect(w.controller.waitReason('wants-room')).toMatch(/^it is waiting for memory: needs 8 GiB; 20 GiB budget/);
    expect(w.controller.yieldsTo('busy')).toEqual(['wants-room']);
    expect(w.controller.yieldsTo('pinned')).toEqual([]);

    expect(w.controller.whyUnservable('too-big')).toEqual({
      code: 'model_unschedulable',
      reason: 'needs 14 GiB; 20 GiB budget, 8 GiB held by pinned pinned (8 GiB), 12 GiB free: it fits only if a pinned model is unpinned',
    });

    // The busy model drains: the waiting one is swapped in, no refusal ever.
    w.desired.update('busy', { inFlight: 0, wanted: false });
    w.controller.trigger();
    await settle();
    expect(w.state('wants-room')).toBe('ready');
    expect(w.server.evictions()).toEqual(['busy']);
  });

  it('an idle model its turn holds is not swapped out for a waiting one; once the hold ends, it is', async () => {
    const w = world([model('served', 8, { lastUsed: 1 })], { budgetGiB: 10 });
    await w.start();
    expect(w.state('served')).toBe('ready');
    // Its client's request just ended; another model's request waits for the memory.
    w.desired.update('served', { heldForTurn: true });
    w.desired.state.models.push(model('waiting', 8, { waitingSince: w.clock.now(), lastUsed: w.clock.now() }));
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual([]);
    expect(w.state('served')).toBe('ready'); // held, not decoding: its status does not say Active
    expect(w.controller.waitReason('waiting')).toMatch(/^it is waiting for memory/);
    expect(w.controller.yieldsTo('served')).toEqual(['waiting']);

    w.desired.update('served', { heldForTurn: false });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['served']);
    expect(w.state('waiting')).toBe('ready');
  });

  it('waiting models are served in the order their oldest request came, not the newest', async () => {
    const w = world([model('a', 8, { waitingSince: 10, lastUsed: 30 }), model('b', 8, { waitingSince: 5, lastUsed: 20 })], { budgetGiB: 10 });
    await w.start();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['b']);
    expect(w.state('a')).toBe('queued');
  });
});

describe('a new definition', () => {
  it('reaches an idle running model: it is stopped and launched again with the new one, the ladder untouched', async () => {
    const w = world([model('a', 4, { pinned: true })]);
    await w.start();
    expect(w.state('a')).toBe('ready');
    expect(w.controller.definitionPending('a')).toBe(false);
    w.desired.update('a', { definitionHash: 'v2' });
    w.controller.trigger();
    await settle();
    await settle();
    expect(w.server.calls.map((c) => `${c.op} ${c.modelId}`)).toEqual(['launch a', 'evict a', 'launch a']);
    expect(w.state('a')).toBe('ready');
    expect(w.controller.definitionPending('a')).toBe(false);
    expect(w.log.count(/^a: its definition changed since it was launched; relaunching it with the new one$/)).toBe(1);
    // Converged: another pass changes nothing.
    w.controller.trigger();
    await settle();
    expect(w.server.calls).toHaveLength(3);
  });

  it('drains a busy one first: its request finishes on the old server, new ones wait, then it is relaunched', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    const release = w.server.claim('a');
    w.desired.update('a', { definitionHash: 'v2', inFlight: 1 });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual([]);
    expect(w.controller.definitionPending('a')).toBe(true);
    expect(w.controller.status('a')?.next).toBe('runs its old definition; relaunching with the new one once its requests finish');
    release?.();
    w.desired.update('a', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await settle();
    expect(w.server.evictions()).toEqual(['a']);
    expect(w.server.launches()).toHaveLength(2);
    expect(w.controller.definitionPending('a')).toBe(false);
    expect(w.controller.status('a')?.next).toBeNull();
  });
});

describe('claims', () => {
  it('an eviction that finds the server claimed stops nothing, launches nothing, and the next pass evicts it', async () => {
    const w = world([model('old', 8, { lastUsed: 1 })], { budgetGiB: 10 });
    await w.start();
    // The pass reads 'old' idle; a request claims it before the eviction reaches it.
    w.desired.state.models.push(model('new', 8, { lastUsed: 2 }));
    w.server.hold('evict', 'old');
    w.controller.trigger();
    await settle();
    const release = w.server.claim('old');
    w.server.release('evict', 'old');
    await settle();

    expect(w.server.isRunning('old')).toBe(true);
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['old']);
    expect(w.state('old')).toBe('ready');
    expect(w.log.count(/old was not evicted: a request claimed it/)).toBe(1);

    release?.();
    w.controller.trigger();
    await settle();
    expect(w.server.isRunning('old')).toBe(false);
    expect(w.state('new')).toBe('ready');
  });

  it('thousands of claims racing passes never see a claimed server stopped, nor memory overcommitted', async () => {
    const rng = mulberry32(7);
    const ids = ['a', 'b', 'c'];
    // Room for one model at a time: every switch is an eviction, each one a chance to race a claim.
    const w = world(ids.map((id) => model(id, 6, { wanted: false })), { budgetGiB: 10 });
    const open = new Map<string, (() => void)[]>(ids.map((id) => [id, []]));
    const held = new Set<string>();
    const violations: string[] = [];
    w.server.onServerEvent((event) => {
      if (event.type === 'ServerStopped' && (open.get(event.modelId)?.length ?? 0) > 0) violations.push(`stopped ${event.modelId} with claims`);
      const running = ids.filter((id) => w.server.isRunning(id)).length;
      if (event.type === 'ServerSpawned' && running > 1) violations.push(`${running} servers of 6 GiB in a 10 GiB budget after spawning ${event.modelId}`);
    });
    await w.start();
    for (let step = 0; step < 4000; step++) {
      const id = ids[Math.floor(rng() * ids.length)] as string;
      const claims = open.get(id) as (() => void)[];
      const roll = rng();
      if (roll < 0.25) {
        // A request arrives: its model is wanted now, and it claims the server if it is ready.
        w.desired.update(id, { wanted: true, lastUsed: step });
        const release = w.server.claim(id);
        if (release !== null) claims.push(release);
      } else if (roll < 0.7) {
        claims.shift()?.();
        if (claims.length === 0) w.desired.update(id, { wanted: false });
      } else if (roll < 0.85 && !held.has(id)) {
        // The next eviction of it stalls (a slow SIGTERM), so claims can arrive after the pass read the counts.
        w.server.hold('evict', id);
        held.add(id);
      } else if (held.has(id)) {
        w.server.release('evict', id);
        held.delete(id);
      }
      for (const m of ids) w.desired.update(m, { inFlight: open.get(m)?.length ?? 0 });
      w.controller.trigger();
      if (rng() < 0.5) await settle();
    }
    for (const id of held) w.server.release('evict', id);
    for (const claims of open.values()) for (const release of claims.splice(0)) release();
    await w.clock.advance(1000);
    expect(violations).toEqual([]);
    // The race was real: evictions happened, and some found a claim that came after the pass read the counts.
    expect(w.server.evictions().length).toBeGreaterThan(200);
    expect(w.log.count(/was not evicted: a request claimed it/)).toBeGreaterThan(10);
  });
});

/** A small seeded PRNG, so the race test explores the same interleavings every run. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
