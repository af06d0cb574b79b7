import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hostMemoryReason, reasonWriter, type Holder } from '../../../core/policy/index.js';
import { NAMED_HOLDERS, withHolder } from '../../../core/policy/reasons.js';
import { formatBytes } from '../../../core/contracts/format-bytes.js';

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

describe('formatBytes', () => {
  it.each([
    [0, '0 B'],
    [1, '1 B'],
    [1023, '1023 B'],
    [1024, '1 KiB'],
    [1536, '1.5 KiB'],
    [512 * MiB, '512 MiB'],
    [1023.97 * MiB, '1 GiB'], // not "1024 MiB"
    [9.1 * GiB, '9.1 GiB'],
    [17.24 * GiB, '17.2 GiB'],
    [24 * GiB, '24 GiB'],
    [99.96 * GiB, '100 GiB'],
    [120.4 * GiB, '120 GiB'],
    [1.5 * 1024 * GiB, '1.5 TiB'],
    [-2 * GiB, '-2 GiB'],
    [100.5 * KiB, '101 KiB'],
  ])('%d → %s', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});

describe('reason sentences', () => {
  const holder = (modelId: string, gib: number, why: Holder['why'], priority = 0): Holder => ({ modelId, bytes: gib * GiB, why, priority });

  it('says when a model is larger than the whole budget, draft split out', () => {
    const reasons = reasonWriter(24 * GiB);
    expect(reasons.overWholeBudget({ bytes: 30 * GiB })).toBe('needs 30 GiB, more than the whole 24 GiB budget');
    expect(reasons.overWholeBudget({ bytes: 30 * GiB, draft: { modelId: 'qd', bytes: 512 * MiB } })).toBe(
      'needs 30 GiB with its draft qd (29.5 GiB + 512 MiB), more than the whole 24 GiB budget',
    );
  });

  it.each([
    [[holder('a', 8, 'pinned')], 1, 'pinned a (8 GiB)'],
    [[holder('a', 8, 'pinned'), holder('b', 4, 'active')], 2, 'pinned a (8 GiB) and active b (4 GiB)'],
    [[holder('a', 8, 'pinned'), holder('b', 4, 'active'), holder('c', 2, 'admitted', 7)], 3, 'pinned a (8 GiB), active b (4 GiB) and c (2 GiB, priority 7)'],
    [[holder('a', 8, 'pinned'), holder('b', 4, 'active'), holder('c', 2, 'admitted', 7)], 5, 'pinned a (8 GiB), active b (4 GiB), c (2 GiB, priority 7) and 2 more'],
  ])('lists holders in plain English (%#)', (named, count, list) => {
    const room = { heldBytes: 17.2 * GiB, named, holderCount: count };
    expect(reasonWriter(24 * GiB).noRoom({ bytes: 9.1 * GiB }, room)).toBe(`needs 9.1 GiB; 24 GiB budget, 17.2 GiB held by ${list}, 6.8 GiB free`);
  });

  it('says how far forced models already exceed the budget', () => {
    const room = { heldBytes: 30 * GiB, named: [holder('p', 30, 'pinned')], holderCount: 1 };
    expect(reasonWriter(24 * GiB).noRoom({ bytes: 1 * GiB }, room)).toBe(
      'needs 1 GiB; 24 GiB budget, 30 GiB held by pinned p (30 GiB), 6 GiB over it',
    );
  });

  it('words each model against its own room, even when rooms are reused', () => {
    const reasons = reasonWriter(10 * GiB);
    const early = { heldBytes: 2 * GiB, named: [holder('a', 2, 'pinned')], holderCount: 1 };
    const late = { heldBytes: 6 * GiB, named: [holder('b', 4, 'admitted', 1), holder('a', 2, 'pinned')], holderCount: 2 };
    expect(reasons.noRoom({ bytes: 9 * GiB }, early)).toBe('needs 9 GiB; 10 GiB budget, 2 GiB held by pinned a (2 GiB), 8 GiB free');
    expect(reasons.noRoom({ bytes: 5 * GiB }, late)).toBe(
      'needs 5 GiB; 10 GiB budget, 6 GiB held by b (4 GiB, priority 1) and pinned a (2 GiB), 4 GiB free',
    );
    expect(reasons.noRoom({ bytes: 8.5 * GiB }, early)).toBe('needs 8.5 GiB; 10 GiB budget, 2 GiB held by pinned a (2 GiB), 8 GiB free');
  });

  it('words a host-memory shortfall for a CPU-only launch', () => {
    expect(hostMemoryReason(6.2 * GiB, 3.1 * GiB)).toBe('needs 6.2 GiB of RAM on the CPU; 3.1 GiB free');
    expect(hostMemoryReason(6.2 * GiB, 3.1 * GiB, 'minimal')).toBe('needs 6.2 GiB of RAM on the CPU; 3.1 GiB free');
  });

  it('says a partial launch needs RAM only for the layers it leaves on the CPU', () => {
    expect(hostMemoryReason(3.1 * GiB, 2 * GiB, 'partial')).toBe('needs 3.1 GiB of RAM for the layers on the CPU; 2 GiB free');
  });
});

describe('withHolder', () => {
  const holderArb = fc.record({
    modelId: fc.string({ minLength: 1, maxLength: 3 }),
    bytes: fc.integer({ min: 1, max: 20 }),
    why: fc.constantFrom<Holder['why']>('pinned', 'active', 'admitted'),
    priority: fc.integer({ min: 0, max: 3 }),
  });

  it('keeps the largest holders (ties by id) whatever the order they arrive in, without mutating', () => {
    fc.assert(
      fc.property(fc.uniqueArray(holderArb, { selector: (h) => h.modelId, maxLength: 12 }), (holders) => {
        let top: readonly Holder[] = [];
        for (const h of holders) {
          const before = [...top];
          const next = withHolder(top, h);
          expect(top).toEqual(before);
          top = next;
        }
        const expected = [...holders]
          .sort((a, b) => b.bytes - a.bytes || (a.modelId < b.modelId ? -1 : a.modelId > b.modelId ? 1 : 0))
          .slice(0, NAMED_HOLDERS);
        expect(top).toEqual(expected);
      }),
      { numRuns: 10_000 },
    );
  });
});
