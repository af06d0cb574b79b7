import { describe, expect, it } from 'vitest';
import type { Desired, Resident } from '../../../core/policy/index.js';
import { schedule } from '../../support/schedule-oracle.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

function want(modelId: string, footprint: number, extra: Partial<Desired> = {}): Desired {
  return { modelId, footprint, priority: 0, pinned: false, ...extra };
}

function running(modelId: string, footprint: number, extra: Partial<Resident> = {}): Resident {
  return { modelId, footprint, pinned: false, inUse: false, lastUsed: 0, ...extra };
}

const unschedulableIds = (plan: ReturnType<typeof schedule>): string[] => plan.unschedulable.map((u) => u.modelId);

describe('schedule: forced models', () => {
  it('launches a pinned desired model even when it is larger than the budget', () => {
    const plan = schedule([want('big', 30 * GiB, { pinned: true }), want('small', 1 * GiB)], [], 24 * GiB);
    expect(plan.launch).toEqual(['big']);
    expect(unschedulableIds(plan)).toEqual(['small']);
  });

  it('keeps a pinned resident that nobody desires and counts it against the budget', () => {
    const plan = schedule([want('x', 10 * GiB)], [running('pin', 20 * GiB, { pinned: true })], 24 * GiB);
    expect(plan.evict).toEqual([]);
    expect(plan.launch).toEqual([]);
    expect(plan.unschedulable).toEqual([
      { modelId: 'x', reason: 'needs 10 GiB; 24 GiB budget, 20 GiB held by pinned pin (20 GiB), 4 GiB free: it fits only if a pinned model is unpinned', strict: true },
    ]);
  });

  it('keeps an in-use resident that nobody desires, even over budget', () => {
    const plan = schedule([], [running('busy', 40 * GiB, { inUse: true })], 24 * GiB);
    expect(plan).toEqual({ launch: [], evict: [], unschedulable: [] });
  });

  it('keeps a desired model whose resident is in use even when a higher priority needs the room', () => {
    const plan = schedule(
      [want('busy', 20 * GiB), want('urgent', 10 * GiB, { priority: 9 })],
      [running('busy', 20 * GiB, { inUse: true })],
      24 * GiB,
    );
    expect(plan.evict).toEqual([]);
    expect(plan.launch).toEqual([]);
    expect(unschedulableIds(plan)).toEqual(['urgent']);
  });

  it('does not launch a pinned desired model that is already resident', () => {
    const plan = schedule([want('p', 5 * GiB, { pinned: true })], [running('p', 5 * GiB)], 1 * GiB);
    expect(plan).toEqual({ launch: [], evict: [], unschedulable: [] });
  });

  it('says by how much pinned models already exceed the budget', () => {
    const plan = schedule([want('p', 30 * GiB, { pinned: true }), want('tiny', 0)], [], 24 * GiB);
    expect(plan.unschedulable).toEqual([
      { modelId: 'tiny', reason: 'needs 0 B; 24 GiB budget, 30 GiB held by pinned p (30 GiB), 6 GiB over it: it fits only if a pinned model is unpinned', strict: true },
    ]);
  });
});

describe('schedule: admission order', () => {
  it('admits the higher priority first', () => {
    const plan = schedule([want('low', 10 * GiB, { priority: 1 }), want('high', 10 * GiB, { priority: 2 })], [], 15 * GiB);
    expect(plan.launch).toEqual(['high']);
    expect(unschedulableIds(plan)).toEqual(['low']);
  });

  it('at equal priority admits the more recently used (a waiting request beats an idle model)', () => {
    const plan = schedule([want('idle', 10 * GiB, { lastUsed: 5 }), want('waiting', 10 * GiB, { lastUsed: 9 })], [], 15 * GiB);
    expect(plan.launch).toEqual(['waiting']);
  });

  it('at equal priority and lastUsed prefers the resident one, so nothing churns', () => {
    const plan = schedule(
      [want('a', 10 * GiB, { lastUsed: 5 }), want('b', 10 * GiB, { lastUsed: 5 })],
      [running('b', 10 * GiB, { lastUsed: 5 })],
      15 * GiB,
    );
    expect(plan).toMatchObject({ launch: [], evict: [] });
    expect(unschedulableIds(plan)).toEqual(['a']);
  });

  it('breaks a full tie by model id', () => {
    const plan = schedule([want('b', 10 * GiB), want('a', 10 * GiB)], [], 15 * GiB);
    expect(plan.launch).toEqual(['a']);
  });

  it('gives a desired model without lastUsed the lastUsed of its resident', () => {
    // Without inheriting 100, 'old' would rank as never used and lose to 'newer' (50).
    const plan = schedule(
      [want('old', 10 * GiB), want('newer', 10 * GiB, { lastUsed: 50 })],
      [running('old', 10 * GiB, { lastUsed: 100 })],
      15 * GiB,
    );
    expect(plan).toMatchObject({ launch: [], evict: [] });
    expect(unschedulableIds(plan)).toEqual(['newer']);
  });

  it('skips a model that does not fit and still admits a smaller, lower-priority one', () => {
    const plan = schedule([want('big', 20 * GiB, { priority: 5 }), want('small', 4 * GiB, { priority: 1 })], [], 16 * GiB);
    expect(plan.launch).toEqual(['small']);
    expect(plan.unschedulable).toEqual([{ modelId: 'big', reason: 'needs 20 GiB, more than the whole 16 GiB budget', strict: true }]);
  });

  it('evicts a resident, desired model that a higher priority displaces', () => {
    const plan = schedule(
      [want('low', 10 * GiB, { priority: 0 }), want('high', 10 * GiB, { priority: 1 })],
      [running('low', 10 * GiB)],
      15 * GiB,
    );
    expect(plan.launch).toEqual(['high']);
    expect(plan.evict).toEqual(['low']);
    expect(unschedulableIds(plan)).toEqual(['low']);
  });

  it('evicts an idle resident nobody desires even when there is room', () => {
    const plan = schedule([], [running('stale', 1 * GiB)], 24 * GiB);
    expect(plan.evict).toEqual(['stale']);
  });

  it('lists launches most important first and evictions least recently used first', () => {
    const plan = schedule(
      [want('c', 1, { priority: 1 }), want('a', 1, { priority: 3 }), want('b', 1, { priority: 2 })],
      [running('x', 1, { lastUsed: 30 }), running('y', 1, { lastUsed: 10 }), running('z', 1, { lastUsed: 20 })],
      100,
    );
    expect(plan.launch).toEqual(['a', 'b', 'c']);
    expect(plan.evict).toEqual(['y', 'z', 'x']);
  });
});

describe('schedule: costing', () => {
  it('costs a desired model by its own footprint plus its draft', () => {
    const plan = schedule([want('main', 8 * GiB, { draft: { modelId: 'tiny-draft', footprint: 1 * GiB } })], [], 8.5 * GiB);
    expect(plan.launch).toEqual([]);
    expect(plan.unschedulable).toEqual([
      { modelId: 'main', reason: 'needs 9 GiB with its draft tiny-draft (8 GiB + 1 GiB), more than the whole 8.5 GiB budget', strict: true },
    ]);
  });

  it('costs a resident desired model by what is desired, not by what it reported', () => {
    const plan = schedule([want('m', 5 * GiB, { draft: { modelId: 'd', footprint: 1 * GiB } })], [running('m', 1 * GiB)], 5 * GiB);
    expect(plan.evict).toEqual(['m']);
    expect(unschedulableIds(plan)).toEqual(['m']);
  });

  it('costs a resident nobody desires by its resident footprint (primary and draft as one process)', () => {
    const plan = schedule([want('x', 7 * GiB)], [running('pair', 10 * GiB, { inUse: true })], 16 * GiB);
    expect(plan.unschedulable).toEqual([
      { modelId: 'x', reason: 'needs 7 GiB; 16 GiB budget, 10 GiB held by active pair (10 GiB), 6 GiB free', strict: false },
    ]);
  });

  it('counts negative footprints and a negative budget as zero', () => {
    const plan = schedule(
      [want('neg', -5 * GiB, { draft: { modelId: 'd', footprint: -1 } }), want('zero', 0)],
      [running('r', -3 * GiB, { inUse: true })],
      -1,
    );
    expect(plan.launch).toEqual(['neg', 'zero']);
    expect(plan.unschedulable).toEqual([]);
  });
});

describe('schedule: drafts', () => {
  const pair = want('main', 8 * GiB, { draft: { modelId: 'draft', footprint: 512 * MiB } });

  it('launches a pair as its primary only', () => {
    expect(schedule([pair], [], 24 * GiB)).toEqual({ launch: ['main'], evict: [], unschedulable: [] });
  });

  it('evicts a pair as its primary only', () => {
    expect(schedule([], [running('main', 8.5 * GiB)], 24 * GiB).evict).toEqual(['main']);
  });

  it('leaves a primary out when it fits alone but not with its draft, and says so', () => {
    const plan = schedule([pair, want('pin', 16 * GiB, { pinned: true })], [], 24 * GiB);
    expect(plan.unschedulable).toEqual([
      {
        modelId: 'main',
        reason: 'needs 8.5 GiB with its draft draft (8 GiB + 512 MiB); 24 GiB budget, 16 GiB held by pinned pin (16 GiB), 8 GiB free: it fits only if a pinned model is unpinned',
        strict: true,
      },
    ]);
  });

  it('treats a draft that is also desired on its own as a second, separately costed process', () => {
    const standalone = want('draft', 512 * MiB);
    expect(schedule([pair, standalone], [], 9 * GiB)).toEqual({ launch: ['draft', 'main'], evict: [], unschedulable: [] });
    const tight = schedule([pair, standalone], [], 8.75 * GiB);
    expect(tight.launch).toEqual(['draft']);
    expect(unschedulableIds(tight)).toEqual(['main']);
  });
});

describe('schedule: reasons', () => {
  it('names the largest holders and counts the rest', () => {
    const plan = schedule(
      [
        want('a', 4 * GiB, { priority: 3 }),
        want('b', 3 * GiB, { priority: 3 }),
        want('c', 2 * GiB, { priority: 3 }),
        want('d', 1 * GiB, { priority: 3 }),
        want('late', 9.1 * GiB, { priority: 1 }),
      ],
      [running('busy', 5 * GiB, { inUse: true })],
      24 * GiB,
    );
    expect(plan.unschedulable).toEqual([
      {
        modelId: 'late',
        reason:
          'needs 9.1 GiB; 24 GiB budget, 15 GiB held by active busy (5 GiB), a (4 GiB, priority 3), b (3 GiB, priority 3) and 2 more, 9 GiB free',
        strict: false,
      },
    ]);
  });

  it('names what held the memory when the model was turned away, not smaller models admitted after it', () => {
    const plan = schedule([want('first', 10 * GiB, { priority: 2 }), want('big', 10 * GiB, { priority: 1 }), want('small', 1 * GiB)], [], 15 * GiB);
    expect(plan.launch).toEqual(['first', 'small']);
    expect(plan.unschedulable).toEqual([
      { modelId: 'big', reason: 'needs 10 GiB; 15 GiB budget, 10 GiB held by first (10 GiB, priority 2), 5 GiB free', strict: false },
    ]);
  });

  it('tells each model turned away what held the memory at its own turn', () => {
    const plan = schedule(
      [
        want('first', 10 * GiB, { priority: 3 }),
        want('big', 9 * GiB, { priority: 2 }),
        want('small', 2 * GiB, { priority: 1 }),
        want('last', 4 * GiB, { priority: 0 }),
      ],
      [],
      15 * GiB,
    );
    expect(plan.unschedulable).toEqual([
      { modelId: 'big', reason: 'needs 9 GiB; 15 GiB budget, 10 GiB held by first (10 GiB, priority 3), 5 GiB free', strict: false },
      {
        modelId: 'last',
        reason: 'needs 4 GiB; 15 GiB budget, 12 GiB held by first (10 GiB, priority 3) and small (2 GiB, priority 1), 3 GiB free',
        strict: false,
      },
    ]);
  });
});

describe('schedule: caller bugs', () => {
  it('rejects the same desired id twice, naming it', () => {
    expect(() => schedule([want('m', 1), want('m', 2)], [], 10)).toThrow(/"m" is desired twice/);
  });

  it('rejects the same resident id twice, naming it', () => {
    expect(() => schedule([], [running('r', 1), running('r', 1)], 10)).toThrow(/"r" is resident twice/);
  });
});
