import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Desired, Plan, Resident } from '../../../core/policy/index.js';
import { schedule } from '../../support/schedule-oracle.js';
import { above, atMost, below, equal, same } from '../../support/hot-expect.js';

// Small id pools so desired and resident overlap often; drafts have their own pool so that a
// draft id showing up in a plan can only mean it was scheduled on its own.
const MODEL_IDS = Array.from({ length: 14 }, (_, i) => `m${i}`);
const DRAFT_IDS = ['d0', 'd1', 'd2'];
const RUNS = { numRuns: 10_000 };

const footprint = fc.integer({ min: -50, max: 1000 });
const rarely = fc.integer({ min: 0, max: 5 }).map((n) => n === 0);
const stamp = fc.integer({ min: 0, max: 4 });

const desiredArb: fc.Arbitrary<Desired> = fc.record(
  {
    modelId: fc.constantFrom(...MODEL_IDS),
    footprint,
    priority: fc.integer({ min: 0, max: 3 }),
    pinned: rarely,
    draft: fc.record({ modelId: fc.constantFrom(...DRAFT_IDS), footprint }),
    lastUsed: stamp,
    waitingSince: stamp,
    retrying: rarely,
  },
  { requiredKeys: ['modelId', 'footprint', 'priority', 'pinned'] },
);

const residentArb: fc.Arbitrary<Resident> = fc.record({
  modelId: fc.constantFrom(...MODEL_IDS),
  footprint,
  pinned: rarely,
  inUse: rarely,
  lastUsed: stamp,
});

interface Scenario {
  desired: Desired[];
  resident: Resident[];
  budget: number;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  desired: fc.uniqueArray(desiredArb, { selector: (d) => d.modelId, maxLength: 10 }),
  resident: fc.uniqueArray(residentArb, { selector: (r) => r.modelId, maxLength: 10 }),
  budget: fc.integer({ min: -100, max: 4000 }),
});

const clamp = (n: number): number => Math.max(0, n);
const desiredCost = (d: Desired): number => clamp(d.footprint) + clamp(d.draft?.footprint ?? 0);
const sum = (ns: number[]): number => ns.reduce((a, b) => a + b, 0);

/** The facts about a plan the properties check, derived from the rules, not from the code. */
function analyse({ desired, resident, budget }: Scenario, plan: Plan) {
  const desiredById = new Map(desired.map((d) => [d.modelId, d]));
  const residentById = new Map(resident.map((r) => [r.modelId, r]));
  const evicted = new Set(plan.evict);
  const kept = [...resident.map((r) => r.modelId).filter((id) => !evicted.has(id)), ...plan.launch];
  const costOf = (id: string): number => {
    const d = desiredById.get(id);
    return d !== undefined ? desiredCost(d) : clamp(residentById.get(id)?.footprint ?? 0);
  };
  const isForced = (id: string): boolean => {
    const r = residentById.get(id);
    const d = desiredById.get(id);
    // A model retrying after a failure is not forced by its pin, only by a running server's.
    return (d?.pinned === true && d.retrying !== true) || r?.pinned === true || r?.inUse === true;
  };
  const pinnedBytes = sum(
    [...new Set([...desired.map((d) => d.modelId), ...resident.map((r) => r.modelId)])]
      .filter((id) => {
        const d = desiredById.get(id);
        return (d?.pinned === true && d.retrying !== true) || residentById.get(id)?.pinned === true;
      })
      .map(costOf),
  );
  const forced = kept.filter(isForced);
  const admitted = kept.filter((id) => !isForced(id));
  const forcedBytes = sum(forced.map(costOf));
  const heldBytes = forcedBytes + sum(admitted.map(costOf));
  return { desiredById, residentById, kept, admitted, forcedBytes, heldBytes, pinnedBytes, costOf, isForced, budget: clamp(budget) };
}

/** The resident set after the plan is applied: what the engines would then report. */
function applyPlan({ desired, resident }: Scenario, plan: Plan): Resident[] {
  const desiredById = new Map(desired.map((d) => [d.modelId, d]));
  const evicted = new Set(plan.evict);
  const after = resident
    .filter((r) => !evicted.has(r.modelId))
    .map((r) => {
      const d = desiredById.get(r.modelId);
      return d === undefined ? r : { ...r, footprint: desiredCost(d) };
    });
  for (const id of plan.launch) {
    const d = desiredById.get(id);
    if (d === undefined) throw new Error(`launched undesired ${id}`);
    after.push({ modelId: id, footprint: desiredCost(d), pinned: d.pinned, inUse: false, lastUsed: d.lastUsed ?? 0 });
  }
  return after;
}

const run = (s: Scenario): Plan => schedule(s.desired, s.resident, s.budget);

describe('schedule: properties', () => {
  it('never evicts a pinned or in-use resident, and evicts only residents', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const byId = new Map(s.resident.map((r) => [r.modelId, r]));
        for (const id of plan.evict) {
          const r = byId.get(id);
          if (r === undefined) expect(r).toBeDefined();
          same(r?.pinned || r?.inUse, false);
        }
        same(new Set(plan.evict).size, plan.evict.length);
      }),
      RUNS,
    );
  });

  it('never launches a resident or undesired model, nor one twice', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const residentIds = new Set(s.resident.map((r) => r.modelId));
        const desiredIds = new Set(s.desired.map((d) => d.modelId));
        for (const id of plan.launch) {
          same(residentIds.has(id), false);
          same(desiredIds.has(id), true);
        }
        same(new Set(plan.launch).size, plan.launch.length);
      }),
      RUNS,
    );
  });

  it('fits the non-forced models into what the forced ones leave, and wastes no room a left-out model could use', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const a = analyse(s, plan);
        atMost(sum(a.admitted.map(a.costOf)), Math.max(0, a.budget - a.forcedBytes));
        for (const { modelId } of plan.unschedulable) above(a.costOf(modelId), a.budget - a.heldBytes);
      }),
      RUNS,
    );
  });

  it('never lets a lower priority take room a left-out higher priority could have used', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const a = analyse(s, plan);
        for (const { modelId } of plan.unschedulable) {
          const out = a.desiredById.get(modelId);
          for (const id of a.admitted) {
            const inside = a.desiredById.get(id);
            // Retrying models come after all others, whatever their priority.
            if (out?.retrying === true && inside?.retrying !== true) continue;
            if (out && inside && inside.priority < out.priority) below(a.costOf(id), a.costOf(modelId));
          }
        }
      }),
      RUNS,
    );
  });

  it('either keeps every desired model or says why, with an amount in units', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const a = analyse(s, plan);
        const kept = new Set(a.kept);
        const out = new Set(plan.unschedulable.map((u) => u.modelId));
        same(out.size, plan.unschedulable.length);
        for (const d of s.desired) same(kept.has(d.modelId) !== out.has(d.modelId), true);
        for (const { modelId, reason } of plan.unschedulable) {
          same(a.isForced(modelId), false);
          if (!/^needs \d+(\.\d)? (B|KiB|MiB|GiB)\b/.test(reason)) expect(reason).toMatch(/^needs \d+(\.\d)? (B|KiB|MiB|GiB)\b/);
        }
      }),
      RUNS,
    );
  });

  it('calls a left-out model strict exactly when pinned models alone leave it no room', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const a = analyse(s, plan);
        for (const { modelId, strict } of plan.unschedulable) {
          same(strict, a.costOf(modelId) > a.budget - a.pinnedBytes);
        }
      }),
      RUNS,
    );
  });

  it('gives a retrying model only room no other desired model takes: the rest of the plan is the plan without it', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const retrying = new Set(s.desired.filter((d) => d.retrying === true).map((d) => d.modelId));
        // A retrying model whose load is in flight holds its memory like any load; not this rule's case.
        fc.pre(!s.resident.some((r) => retrying.has(r.modelId)));
        const plan = run(s);
        const without = run({ ...s, desired: s.desired.filter((d) => !retrying.has(d.modelId)) });
        const others = (ids: string[]): string[] => ids.filter((id) => !retrying.has(id)).sort();
        equal(others(plan.launch), others(without.launch));
        equal(others(plan.evict), others(without.evict));
        equal(others(plan.unschedulable.map((u) => u.modelId)), others(without.unschedulable.map((u) => u.modelId)));
      }),
      RUNS,
    );
  });

  it('keeps a pair with its draft or not at all: the draft never appears on its own', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const planned = [...plan.launch, ...plan.evict, ...plan.unschedulable.map((u) => u.modelId)];
        for (const id of planned) if (DRAFT_IDS.includes(id)) expect(DRAFT_IDS).not.toContain(id);
        const byId = new Map(s.desired.map((d) => [d.modelId, d]));
        for (const { modelId, reason } of plan.unschedulable) {
          const draft = byId.get(modelId)?.draft;
          if (draft && !(typeof reason === 'string' && reason.includes(`with its draft ${draft.modelId}`))) expect(reason).toContain(`with its draft ${draft.modelId}`);
        }
      }),
      RUNS,
    );
  });

  it('is a fixed point: applying the plan and scheduling again launches and evicts nothing', () => {
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const plan = run(s);
        const again = run({ ...s, resident: applyPlan(s, plan) });
        equal(again.launch, []);
        equal(again.evict, []);
        equal(again.unschedulable.map((u) => u.modelId).sort(), plan.unschedulable.map((u) => u.modelId).sort());
      }),
      RUNS,
    );
  });

  it('gives the same plan whatever the input order', () => {
    const shuffled = scenarioArb.chain((s) =>
      fc.record({
        original: fc.constant(s),
        desired: fc.shuffledSubarray(s.desired, { minLength: s.desired.length }),
        resident: fc.shuffledSubarray(s.resident, { minLength: s.resident.length }),
      }),
    );
    fc.assert(
      fc.property(shuffled, ({ original, desired, resident }) => {
        equal(schedule(desired, resident, original.budget), run(original));
      }),
      RUNS,
    );
  });
});
