// What the controller answers between passes (read-model.ts): from the records as they are, and
// from the last pass's reading of memory; and the visible state each model passes through.
import { afterEach, describe, expect, it } from 'vitest';
import { settle } from '../../support/fake-clock.js';
import { GiB, model, stopWorlds, world } from './controller-world.js';

afterEach(stopWorlds);

describe('the read model', () => {
  it('answers from the records as they are: a server that ends is out of every answer before any pass', async () => {
    const w = world([model('a', 10), model('b', 8)]);
    w.desired.state.warmSpare = { bytes: 10 * GiB };
    await w.start();
    expect(w.controller.held('b')?.bytes).toBe(8 * GiB);
    expect(w.server.spareVerdicts.at(-1)).toBe(false); // 24 GiB - 18 held < 10

    const reads = w.desired.reads;
    w.server.die('b', 'invalid');
    // No pass has run since (the one the exit asks for starts on a later turn), and yet:
    expect(w.desired.reads).toBe(reads);
    expect(w.controller.held('b')).toBeNull();
    expect(w.controller.placement('b')).toBeNull();
    expect(w.controller.whyUnservable('b')?.code).toBe('model_quarantined');
    expect(w.server.spareVerdicts.at(-1)).toBe(true); // 24 GiB - 10 held >= 10
  });

  it('reads memory once a pass, and answers from that observation until the next pass', async () => {
    const w = world([model('a', 10), model('b', 8)]);
    w.desired.state.warmSpare = { bytes: 12 * GiB };
    await w.start();
    // Each pass read the budget once and measured once, whatever it did.
    expect(w.server.measureReads).toBe(w.desired.reads);
    expect(w.server.spareVerdicts.at(-1)).toBe(false); // 24 GiB - 18 held < 12

    // Memory shrinks, and no pass has read it yet.
    w.desired.state.budgetBytes = 20 * GiB;
    const reads = [w.desired.reads, w.server.measureReads];
    w.server.die('b');
    // Judged on the last pass's 24 GiB (24 - 10 >= 12), not on a sample of its own (20 - 10 < 12).
    expect(w.server.spareVerdicts.at(-1)).toBe(true);
    expect([w.desired.reads, w.server.measureReads]).toEqual(reads);

    await w.controller.reconcileNow();
    expect(w.server.spareVerdicts.at(-1)).toBe(false);
    expect(w.server.measureReads).toBe(w.desired.reads);
  });

  it('keeps no spare where none may be kept, however much room there is', async () => {
    const w = world([model('a', 1)]);
    await w.start();
    expect(w.server.spareVerdicts.length).toBeGreaterThan(0);
    expect(w.server.spareVerdicts.every((wanted) => !wanted)).toBe(true);
  });
});

describe('visible states', () => {
  it('passes through queued, loading, ready as the server loads', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    await w.start();
    expect(w.state('a')).toBe('loading');
    w.server.release('launch', 'a');
    await settle();
    expect(w.states('a')).toEqual(['queued', 'loading', 'ready']);
  });

  it('a model too big for the whole budget is unservable at once', async () => {
    const w = world([model('huge', 30)]);
    await w.start();
    expect(w.controller.whyUnservable('huge')).toEqual({ code: 'model_unschedulable', reason: 'needs 30 GiB, more than the whole 24 GiB budget' });
  });
});
