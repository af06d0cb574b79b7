// Moving up (move-up.ts): a model placed slower than it could be is moved onto the GPU once the
// room is back and what took it has been idle the settle time, without thrashing.
import { afterEach, describe, expect, it } from 'vitest';
import { MOVE_UP_COOL_DOWN_MS, MOVE_UP_SETTLE_MS } from '../../../core/controller/index.js';
import type { ModelDemand } from '../../../core/controller/effects.js';
import { settle } from '../../support/fake-clock.js';
import { GiB, model, stopWorlds, world } from './controller-world.js';

afterEach(stopWorlds);

describe('moving up', () => {
  const oneGpu = [{ index: 0, name: 'RTX 4090', deviceClass: 'nvidia:rtx 4090', budgetBytes: 10 * GiB }];
  /** 8 blocks of 1 GiB and 1 GiB outside them: 9 GiB on one GPU, or part of it in host RAM. */
  const layered = (modelId: string, extra: Partial<ModelDemand> = {}): ModelDemand =>
    model(modelId, 9, { estimate: { weightsBytes: 9 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8, blockWeightsBytes: GiB, nonBlockWeightsBytes: GiB }, ...extra });

  it('runs a model partly on the CPU while the GPU is full, and moves it onto the GPU once the room is back and it is idle', async () => {
    const w = world([model('hog', 6, { lastUsed: 2 }), layered('big', { lastUsed: 1 })], { budgetGiB: 10 });
    w.desired.state.devices = oneGpu;
    await w.start();
    expect(w.server.placements.get('big')).toMatchObject({ kind: 'partial', devices: [{ index: 0, layers: 3 }], hostBytes: 5 * GiB });

    // While it serves a request it is not moved, even with the room back.
    w.desired.update('big', { inFlight: 1 });
    w.desired.update('hog', { wanted: false });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['hog']);
    expect(w.server.placements.get('big')?.kind).toBe('partial');

    // Idle: stopped where it was and launched whole on the GPU.
    w.desired.update('big', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['hog', 'big']);
    expect(w.server.placements.get('big')).toMatchObject({ kind: 'gpu', devices: [{ index: 0, layers: 8, bytes: 9 * GiB }], hostBytes: 0 });
    expect(w.state('big')).toBe('ready');
    expect(w.log.count(/^moving big up: it now fits whole on GPU 0; stopping it/)).toBe(1);
    // At rest there: nothing more moves.
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['hog', 'big']);
  });

  /**
   * Today's story: `chat` (priority 5) arrives while `tiny` (priority 1) streams, and goes partly
   * to host RAM beside it; then `tiny` goes idle. `tinyExtra` sets what tiny is (pinned, its priority).
   */
  async function displacedByTiny(tinyExtra: Partial<ModelDemand> = {}) {
    // 8 blocks of 0.625 GiB and 1 GiB outside them: 6 GiB, whole on the GPU, or on the CPU beside a 9 GiB model.
    const tinyEstimate = { weightsBytes: 6 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8, blockWeightsBytes: 0.625 * GiB, nonBlockWeightsBytes: GiB };
    const w = world([model('tiny', 6, { priority: 1, lastUsed: 1, estimate: tinyEstimate, ...tinyExtra })], { budgetGiB: 10 });
    w.desired.state.devices = oneGpu;
    await w.start();
    w.desired.update('tiny', { inFlight: 1 });
    w.desired.state.models.push(layered('chat', { priority: 5, lastUsed: 2 }));
    w.controller.trigger();
    await settle();
    expect(w.server.placements.get('chat')).toMatchObject({ kind: 'partial', devices: [{ index: 0, layers: 3 }] });
    return w;
  }

  it('moves a higher-priority model up once what displaced it has been idle the settle time, evicting it; its status says why it waits until then', async () => {
    const w = await displacedByTiny();
    // While tiny streams, chat waits for it, and says so.
    expect(w.controller.status('chat')?.next).toBe(`moving up to GPU 0 when tiny has been idle ${MOVE_UP_SETTLE_MS / 1000} s`);
    await w.clock.advance(MOVE_UP_SETTLE_MS * 3);
    expect(w.server.evictions()).toEqual([]);

    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS - 1);
    expect(w.server.evictions()).toEqual([]);
    expect(w.controller.status('chat')?.next).toBe(`moving up to GPU 0 when tiny has been idle ${MOVE_UP_SETTLE_MS / 1000} s`);

    // The settle time ends: its own timer asks for the pass that stops both, and chat comes back whole on the GPU.
    await w.clock.advance(1);
    await settle();
    expect(new Set(w.server.evictions())).toEqual(new Set(['chat', 'tiny']));
    expect(w.server.placements.get('chat')).toMatchObject({ kind: 'gpu', devices: [{ index: 0, layers: 8, bytes: 9 * GiB }], hostBytes: 0 });
    expect(w.state('chat')).toBe('ready');
    expect(w.controller.status('chat')?.next).toBeNull();
    expect(w.log.count(/^moving chat up: it now fits whole on GPU 0; stopping it and tiny \(idle/)).toBe(1);
  });

  it.each([
    ['pinned', { pinned: true }],
    ['of equal priority', { priority: 5 }],
    ['of higher priority', { priority: 7 }],
  ] as const)('never evicts a displacer that is %s, however long it idles', async (_what, tinyExtra) => {
    const w = await displacedByTiny(tinyExtra);
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_COOL_DOWN_MS + MOVE_UP_SETTLE_MS);
    expect(w.server.evictions()).toEqual([]);
    expect(w.server.placements.get('chat')?.kind).toBe('partial');
    expect(w.controller.status('chat')?.next).toBeNull();
    // That alone kept it: an unpinned tiny of lower priority, idle as long, is evicted at the next pass.
    w.desired.update('tiny', { pinned: false, priority: 1 });
    w.controller.trigger();
    await settle();
    await settle();
    expect(new Set(w.server.evictions())).toEqual(new Set(['chat', 'tiny']));
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
  });

  it('never evicts a busy displacer: a stream that goes on past the settle time keeps chat waiting', async () => {
    const w = await displacedByTiny();
    // Idle for a moment between two requests: not long enough.
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS / 2);
    w.desired.update('tiny', { inFlight: 1 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS * 2);
    expect(w.server.evictions()).toEqual([]);
    // Its idle time starts over at its next idle, not at the first.
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS - 1);
    expect(w.server.evictions()).toEqual([]);
    await w.clock.advance(1);
    await settle();
    expect(new Set(w.server.evictions())).toEqual(new Set(['chat', 'tiny']));
  });

  it('does not thrash: the evicted model asked for again is served beside it, not bounced back, and a moved model is not moved again within the cool-down', async () => {
    const w = await displacedByTiny();
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS);
    await settle();
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
    const evictions = w.server.evictions().length;

    // Still wanted, tiny came back where room is left beside chat: on the CPU.
    expect(w.server.placements.get('tiny')?.kind).toBe('cpu');
    // Requests for it within the cool-down, and idle again past the settle time: chat outranks it, so it is not bounced back down.
    w.desired.update('tiny', { inFlight: 1, lastUsed: w.clock.elapsed() });
    w.controller.trigger();
    await settle();
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS * 2);
    expect(w.server.evictions()).toHaveLength(evictions);
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
    expect(w.server.placements.get('tiny')?.kind).toBe('cpu');

    // Another program takes 2 GiB for a moment: chat no longer fits whole and is placed partly on the CPU again.
    w.desired.update('tiny', { wanted: false });
    w.desired.state.devices = [{ ...oneGpu[0]!, budgetBytes: 8 * GiB }];
    w.controller.trigger();
    await settle();
    await settle();
    expect(w.server.placements.get('chat')?.kind).toBe('partial');
    // The room is back, nothing to evict, but chat moved up less than the cool-down ago: it stays, and says why.
    w.desired.state.devices = oneGpu;
    w.controller.trigger();
    await settle();
    const movedAgain = w.server.evictions().length;
    expect(w.server.placements.get('chat')?.kind).toBe('partial');
    expect(w.controller.status('chat')?.next).toBe(`moving up to GPU 0 when its last move is ${MOVE_UP_COOL_DOWN_MS / 1000} s old`);
    // Once the cool-down has passed, it moves up.
    await w.clock.advance(MOVE_UP_COOL_DOWN_MS);
    await settle();
    expect(w.server.evictions()).toHaveLength(movedAgain + 1);
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
  });
});
