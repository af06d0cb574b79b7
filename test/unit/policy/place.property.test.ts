// `place` over random workstations of 1–4 GPUs of mixed classes, with drafts, layer costs
// (dense and mixtures of experts), pinned, busy and retrying models: 100,000 cases, each checked
// against every rule at once, and the one-device case against `schedule` itself.
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { place, type Device, type LayerCost, type PlacedDesired, type PlacedResident, type PlacePlan } from '../../../core/policy/place.js';
import { schedule } from '../../support/schedule-oracle.js';
import type { Placement } from '../../../core/contracts/plan.js';
import { atMost, equal, same } from '../../support/hot-expect.js';

const MODEL_IDS = Array.from({ length: 12 }, (_, i) => `m${i}`);
const DRAFT_IDS = ['d0', 'd1'];
/**
 * A fixed seed, so that `npm test` gives one verdict for one commit: a random draw once found a
 * case after 92,833 draws that 100,000 had missed in every run before (a split whose last card
 * could not carry the output), and failed CI on code that had passed it. Explore beyond with
 * PLACE_SEED (any integer) and PLACE_RUNS; after each change to `place`, a million random cases.
 */
const CASES = { numRuns: Number(process.env.PLACE_RUNS ?? 100_000), seed: Number(process.env.PLACE_SEED ?? 20_261_201) };

const rarely = fc.integer({ min: 0, max: 5 }).map((n) => n === 0);
const sometimes = fc.boolean();
const stamp = fc.integer({ min: 0, max: 4 });
const bytes = (max: number) => fc.integer({ min: 0, max });

const layerCostArb: fc.Arbitrary<LayerCost> = fc
  .record({ layers: fc.integer({ min: 1, max: 8 }), perLayerBytes: bytes(200), mainBytes: bytes(100), computeBytesPerDevice: bytes(50), moe: sometimes, expertShare: fc.double({ min: 0, max: 1, noNaN: true }) })
  .map(({ moe, expertShare, ...cost }) => ({ ...cost, expertBytesPerLayer: moe ? Math.floor(cost.perLayerBytes * expertShare) : 0 }));

const layeredFootprint = (cost: LayerCost): number => cost.mainBytes + cost.computeBytesPerDevice + cost.layers * cost.perLayerBytes;

const desiredArb: fc.Arbitrary<PlacedDesired> = fc
  .record(
    {
      modelId: fc.constantFrom(...MODEL_IDS),
      opaqueFootprint: bytes(1200),
      layerCost: fc.option(layerCostArb, { nil: undefined }),
      priority: fc.integer({ min: 0, max: 3 }),
      pinned: rarely,
      draft: fc.record({ modelId: fc.constantFrom(...DRAFT_IDS), footprint: bytes(100) }),
      lastUsed: stamp,
      waitingSince: stamp,
      retrying: rarely,
      mixedSplit: sometimes,
    },
    { requiredKeys: ['modelId', 'opaqueFootprint', 'priority', 'pinned'] },
  )
  .map(({ opaqueFootprint, ...d }) => {
    const { layerCost, ...rest } = d;
    return layerCost === undefined ? { ...rest, footprint: opaqueFootprint } : { ...rest, layerCost, footprint: layeredFootprint(layerCost) };
  });

interface Workstation {
  devices: Device[];
  desired: PlacedDesired[];
  resident: PlacedResident[];
  hostFree: number;
}

const workstationArb: fc.Arbitrary<Workstation> = fc
  .record({
    budgets: fc.array(fc.record({ budget: bytes(2000), deviceClass: fc.constantFrom('rtx-4090', 'rtx-3060') }), { minLength: 1, maxLength: 4 }),
    desired: fc.uniqueArray(desiredArb, { selector: (d) => d.modelId, maxLength: 8 }),
    residents: fc.uniqueArray(
      fc.record({ modelId: fc.constantFrom(...MODEL_IDS), footprint: bytes(1000), pinned: rarely, inUse: rarely, lastUsed: stamp, at: fc.nat(), splitWith: fc.option(fc.nat(), { nil: undefined }), offCpu: fc.constantFrom('none', 'none', 'partial', 'cpu') }),
      { selector: (r) => r.modelId, maxLength: 8 },
    ),
    hostFree: fc.oneof(fc.constant(0), bytes(3000)),
  })
  .map(({ budgets, desired, residents, hostFree }) => {
    const devices = budgets.map((b, index) => ({ index, name: `GPU${index}`, deviceClass: b.deviceClass, budgetBytes: b.budget }));
    const resident = residents.map(({ at, splitWith, offCpu, ...r }): PlacedResident => {
      const main = at % devices.length;
      const other = splitWith === undefined ? main : splitWith % devices.length;
      // Some run partly or wholly on the CPU, as `place` puts models when the GPUs are full.
      const placement: Placement =
        offCpu === 'cpu'
          ? { kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: r.footprint }
          : offCpu === 'partial'
            ? { kind: 'partial', devices: [{ index: main, layers: 1, bytes: Math.ceil(r.footprint / 2) }], cpuMoeLayers: 0, hostBytes: Math.floor(r.footprint / 2) }
            : other === main
          ? { kind: 'gpu', devices: [{ index: main, layers: 0, bytes: r.footprint }], cpuMoeLayers: 0, hostBytes: 0 }
          : {
              kind: 'split',
              devices: [
                { index: main, layers: 1, bytes: Math.ceil(r.footprint / 2) },
                { index: other, layers: 1, bytes: Math.floor(r.footprint / 2) },
              ],
              cpuMoeLayers: 0,
              hostBytes: 0,
            };
      return { ...r, placement };
    });
    return { devices, desired, resident, hostFree };
  });

const run = (w: Workstation): PlacePlan => place(w.desired, w.resident, w.devices, w.hostFree);

const costOf = (d: PlacedDesired): number => Math.max(0, d.footprint) + Math.max(0, d.draft?.footprint ?? 0);

/** What the engines would report after the plan: each kept or launched model where the plan put it. */
function applyPlan(w: Workstation, plan: PlacePlan): PlacedResident[] {
  const evicted = new Set(plan.evict);
  const desiredById = new Map(w.desired.map((d) => [d.modelId, d]));
  const after: PlacedResident[] = [];
  for (const r of w.resident) {
    if (evicted.has(r.modelId)) continue;
    const d = desiredById.get(r.modelId);
    const placement = plan.placements[r.modelId] ?? r.placement;
    after.push(d === undefined ? r : { ...r, footprint: costOf(d), ...(placement === undefined ? {} : { placement }) });
  }
  for (const id of plan.launch) {
    const d = desiredById.get(id);
    const placement = plan.placements[id];
    if (d === undefined || placement === undefined) throw new Error(`launched ${id} without a desire or a placement`);
    // A moved model keeps its last use (the daemon's activity stamps it, not the process).
    const lastUsed = d.lastUsed ?? w.resident.find((r) => r.modelId === id)?.lastUsed ?? 0;
    after.push({ modelId: id, footprint: costOf(d), pinned: d.pinned, inUse: false, lastUsed, placement });
  }
  return after;
}

/** Which models are held whatever the budget, by the rules `schedule` and `place` share. */
function forcedIds(w: Workstation): Set<string> {
  const desiredById = new Map(w.desired.map((d) => [d.modelId, d]));
  const ids = new Set<string>();
  for (const r of w.resident) if (r.pinned || r.inUse) ids.add(r.modelId);
  for (const d of w.desired) if (d.pinned && d.retrying !== true) ids.add(d.modelId);
  for (const id of [...ids]) if (desiredById.get(id)?.retrying === true && !w.resident.some((r) => r.modelId === id && (r.pinned || r.inUse))) ids.delete(id);
  return ids;
}

describe('place: properties over random workstations', () => {
  it('keeps every GPU within its budget, evicts nothing forced, is a fixed point, ignores input order, and with one device is schedule', () => {
    fc.assert(
      fc.property(workstationArb, fc.integer(), (w, seed) => {
        const plan = run(w);
        const forced = forcedIds(w);
        const residentIds = new Set(w.resident.map((r) => r.modelId));

        // Nothing forced is evicted or moved; only residents are evicted; launches are desired.
        for (const id of plan.evict) {
          same(residentIds.has(id), true);
          same(forced.has(id), false);
        }
        const desiredIds = new Set(w.desired.map((d) => d.modelId));
        for (const id of plan.launch) same(desiredIds.has(id), true);

        // No GPU over its budget, apart from what forced models hold; no more host RAM than free.
        const after = applyPlan(w, plan);
        for (const device of w.devices) {
          let forcedBytes = 0;
          let otherBytes = 0;
          for (const r of after) {
            const part = (r.placement?.devices ?? []).filter((p) => p.index === device.index).reduce((sum, p) => sum + p.bytes, 0);
            if (forced.has(r.modelId)) forcedBytes += part;
            else otherBytes += part;
          }
          atMost(otherBytes, Math.max(0, device.budgetBytes - forcedBytes) + 1e-6);
        }
        const newHost = plan.launch.reduce((sum, id) => sum + (plan.placements[id]?.hostBytes ?? 0), 0);
        atMost(newHost, w.hostFree);

        // No eviction for nothing: a desired model was stopped (or moved) only because, with
        // everything else as the plan leaves it, it no longer fitted where it was.
        const heldAfter = new Map<number, number>();
        for (const r of after) for (const p of r.placement?.devices ?? []) heldAfter.set(p.index, (heldAfter.get(p.index) ?? 0) + p.bytes);
        for (const id of plan.evict) {
          const d = w.desired.find((x) => x.modelId === id);
          const r = w.resident.find((x) => x.modelId === id);
          if (d === undefined || r?.placement === undefined) continue;
          const where = r.placement.kind === 'gpu' && r.placement.devices.length === 1 ? [{ ...r.placement.devices[0]!, bytes: costOf(d) }] : r.placement.devices;
          const movedOwnBytes = (index: number): number => (plan.placements[id]?.devices ?? []).filter((p) => p.index === index).reduce((sum, p) => sum + p.bytes, 0);
          const stillFits = where.every((p) => {
            const budget = w.devices.find((x) => x.index === p.index)?.budgetBytes ?? 0;
            return (heldAfter.get(p.index) ?? 0) - movedOwnBytes(p.index) + p.bytes <= budget;
          });
          same(stillFits, false);
        }

        // Every desired model is either kept (with a placement) or left out with a reason.
        const out = new Set(plan.unschedulable.map((u) => u.modelId));
        for (const d of w.desired) same(plan.placements[d.modelId] !== undefined, !out.has(d.modelId));

        // A fixed point: apply it and place again (the launches' host share is no longer free), nothing to launch or evict.
        const again = place(w.desired, after, w.devices, w.hostFree - newHost);
        equal(again.launch, []);
        equal(again.evict, []);

        // The same plan whatever the input order.
        const shuffle = <T>(items: readonly T[]): T[] => {
          const copy = [...items];
          let s = seed;
          for (let i = copy.length - 1; i > 0; i--) {
            s = (s * 1103515245 + 12345) & 0x7fffffff;
            const j = s % (i + 1);
            [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
          }
          return copy;
        };
        equal(place(shuffle(w.desired), shuffle(w.resident), shuffle(w.devices), w.hostFree), plan);

        // With one device and no host RAM to spare, exactly schedule's plan (which knows no
        // host RAM, so no model may be running partly on the CPU either).
        if (w.devices.length === 1 && w.hostFree === 0 && w.resident.every((r) => r.placement?.kind !== 'partial' && r.placement?.kind !== 'cpu')) {
          const budget = (w.devices[0] as Device).budgetBytes;
          const expected = schedule(w.desired, w.resident.map(({ placement: _, ...r }) => r), budget);
          equal({ launch: plan.launch, evict: plan.evict, unschedulable: plan.unschedulable }, expected);
        }
      }),
      {
        ...CASES,
        // That case, as fast-check shrank it: m11's split fits GPUs 0 and 1, not the roomier 1 and 2.
        examples: [
          [
            {
              devices: [
                { index: 0, name: 'GPU0', deviceClass: 'rtx-4090', budgetBytes: 7 },
                { index: 1, name: 'GPU1', deviceClass: 'rtx-4090', budgetBytes: 44 },
                { index: 2, name: 'GPU2', deviceClass: 'rtx-4090', budgetBytes: 592 },
              ],
              desired: [
                { modelId: 'm0', priority: 0, pinned: false, draft: { modelId: 'd0', footprint: 8 }, layerCost: { layers: 1, perLayerBytes: 0, mainBytes: 0, computeBytesPerDevice: 0, expertBytesPerLayer: 0 }, footprint: 0 },
                { modelId: 'm11', priority: 0, pinned: false, draft: { modelId: 'd0', footprint: 2 }, waitingSince: 0, layerCost: { layers: 7, perLayerBytes: 7, mainBytes: 0, computeBytesPerDevice: 0, expertBytesPerLayer: 0 }, footprint: 49 },
                { modelId: 'm7', priority: 0, pinned: true, draft: { modelId: 'd0', footprint: 46 }, footprint: 538 },
              ],
              resident: [],
              hostFree: 0,
            },
            0,
          ],
        ],
      },
    );
  }, 600_000);
});
