// Which models stay resident, and where: `schedule` (the one-pool oracle the tests hold this to,
// test/support/schedule-oracle.ts) generalised to the workstation's GPUs, each its own budget.
// Pure, like `schedule`, and called on every pass.
//
// Why per GPU: a model "fits" in 24 + 12 GiB only if one card, or a split across cards, can
// really hold it; the sum says nothing (seeds/003: filter on what each node can hold and name
// what was short there). llama.cpp's `--fit` sizes one process against the free memory at load
// time, Ollama spreads one model's layers; neither plans the whole set of models against each
// card, which is where their users' OOMs and wrong estimates come from.
//
// How: the same candidates in the same admission order as `schedule` (candidates.ts). Forced
// models are held first where they are (nothing pinned or busy is moved, except off a GPU
// that is no longer offered: a card that is gone cannot hold it). Then each other model,
// in order, gets the fastest placement that fits — one GPU; a layer split over GPUs of one class,
// shares in proportion to their room; over mixed classes where its config allows; `partial`
// (as many layers as fit on one GPU, the rest in host RAM; a mixture of experts first leaves its
// expert tensors on the CPU, --n-cpu-moe, which keeps attention on the GPU); CPU only. Each
// placement is tried first in the room nobody holds, then in the room it would have after
// evicting the models that rank below it, before a slower placement is tried: an idle,
// lower-ranked model is evicted before a requested model is slowed, and only on the GPU that
// needs the room. A running model that fits where it is stays there (moving an idle one up to a
// faster placement once room comes back is the controller's call: core/controller/move-up.ts). A model
// without a layer cost is one indivisible footprint on one GPU, exactly
// as `schedule` treats it; with one device and no host RAM to spare, `place` gives `schedule`'s
// very plan (property-tested against it).
//
// The seams: place-types.ts (the shapes), device-room.ts (what each GPU holds this pass),
// eviction-choice.ts (who goes first for room), fastest-placement.ts (the tiers, per-GPU fit),
// split.ts (a split over GPUs), partial.ts (part in host RAM), left-out.ts (the reasons).
import { candidatesOf, leastRecentlyUsedFirst, type Candidate } from './candidates.js';
import type { DeviceRoom } from './device-room-shape.js';
import { createLayout } from './device-room.js';
import { FREE_THEN_ROOM, overBudget, placeOne, ROOM_ONLY } from './fastest-placement.js';
import { leftOutReason } from './left-out.js';
import { nonNegative } from './non-negative.js';
import type { Device, PlacedDesired, PlacedResident, PlacePlan } from './place-types.js';
import type { HoldReason } from './reasons.js';
import type { LeftOut, Placement } from '../contracts/plan.js';

export type { Device, LayerCost, PlacedDesired, PlacedResident, PlacePlan } from './place-types.js';

/**
 * The launches, evictions and placements that bring `resident` to the chosen set within each
 * device's budget and `hostFreeBytes` of host RAM. See the header for the rules; `schedule`'s
 * invariants hold per device. Deterministic and independent of input order; a fixed point.
 * Throws only on a caller bug (an id twice, or no device).
 */
export function place(desired: readonly PlacedDesired[], resident: readonly PlacedResident[], devices: readonly Device[], hostFreeBytes = 0): PlacePlan {
  if (devices.length === 0) throw new Error('place: there must be at least one device (the CPU pool counts as one)');
  const layout = createLayout(devices);
  const { rooms } = layout;
  const { candidates, undesired } = candidatesOf('place', desired, resident);
  const first = layout.devices[0] as Device;
  const placementOf = (r: PlacedResident): Placement =>
    r.placement ?? { kind: 'gpu', devices: [{ index: first.index, layers: 0, bytes: nonNegative(r.footprint) }], cpuMoeLayers: 0, hostBytes: 0 };
  let hostFree = nonNegative(hostFreeBytes);

  // `hostFreeBytes` is what is free now: a running server's host share is already outside it,
  // so only a new placement's host share is taken from it.
  const hold = (modelId: string, at: Placement, why: HoldReason, priority: number, running: boolean): void => {
    if (!running) hostFree -= at.hostBytes;
    layout.hold(modelId, at, why, priority);
  };

  // Forced residents first, desired or not, where they are: nothing pinned or busy is moved,
  // unless where it is is a GPU no longer offered (gone, core/gpu): an undesired one is stopped.
  const { forced: forcedUndesired, toEvict } = undesired;
  for (const r of forcedUndesired) {
    const at = placementOf(r);
    if (strandedAt(at, rooms)) toEvict.push(r);
    else hold(r.modelId, at, r.pinned ? 'pinned' : 'active', 0, true);
  }

  const placements: Record<string, Placement> = {};
  // Every candidate's desired entry is a copy of the caller's PlacedDesired, layerCost and all (see candidatesOf).
  const placedOf = (c: Candidate): PlacedDesired => c.desired as PlacedDesired;

  // A running model on a GPU that is not offered (gone: fallen off the bus, core/gpu) cannot
  // stay there, pinned or busy: it is placed again as though it did not run, and stopped there.
  // Its pin still forces that launch; a busy one earns its place like any other (its requests
  // cannot be answered on a card that is gone).
  const stranded = candidates.map((c) => c.running !== undefined && strandedAt(placementOf(c.running), rooms));
  const forcedBy = candidates.map((c, rank): HoldReason | null => (c.forcedBy === 'active' && stranded[rank] === true ? null : c.forcedBy));

  // Forced desired models: running ones stay where they are (re-priced at what they cost now);
  // pinned ones to launch take the fastest placement that fits, else the roomiest GPU, over budget.
  for (let rank = 0; rank < candidates.length; rank++) {
    const c = candidates[rank] as Candidate;
    const why = forcedBy[rank] as HoldReason | null;
    if (why === null) continue;
    const stays = c.running !== undefined && stranded[rank] !== true;
    const at = stays ? repriced(placementOf(c.running as PlacedResident), c.cost) : placeOne(c, placedOf(c).layerCost, placedOf(c), layout, hostFree, ROOM_ONLY) ?? overBudget(c, layout);
    placements[c.modelId] = at;
    hold(c.modelId, at, why, c.priority, stays);
  }

  // The other residents hold their room until their turn comes: a model ranked above them may
  // take it only when it cannot fit in the room nobody holds.
  const runningAt: (Placement | undefined)[] = candidates.map((c, rank) => {
    if (forcedBy[rank] !== null || c.running === undefined || stranded[rank] === true) return undefined;
    const where = repriced(placementOf(c.running), c.cost);
    layout.setUndecided(where, rank, 1);
    return where;
  });
  layout.sealUndecided();

  const launch: string[] = [];
  const evictMoved: PlacedResident[] = [];
  const unschedulable: LeftOut[] = [];
  for (let rank = 0; rank < candidates.length; rank++) {
    const c = candidates[rank] as Candidate;
    if (forcedBy[rank] !== null) {
      if (c.running === undefined || stranded[rank] === true) launch.push(c.modelId);
      if (c.running !== undefined && stranded[rank] === true) evictMoved.push(c.running);
      continue;
    }
    const d = placedOf(c);
    const cost = d.layerCost;
    const where = runningAt[rank];
    if (where !== undefined) {
      layout.setUndecided(where, rank, -1);
      if (fitsWhereItIs(where, rooms, hostFree + where.hostBytes)) {
        placements[c.modelId] = where;
        hold(c.modelId, where, 'admitted', c.priority, true);
        continue;
      }
    }
    const at = placeOne(c, cost, d, layout, hostFree, FREE_THEN_ROOM);
    if (at === null) {
      unschedulable.push(leftOutReason(c, cost, d, layout, hostFree));
      if (c.running !== undefined) toEvict.push(c.running);
      continue;
    }
    placements[c.modelId] = at;
    hold(c.modelId, at, 'admitted', c.priority, false);
    // A resident that could not stay where it was moves: stopped there, started here.
    if (c.running !== undefined) evictMoved.push(c.running);
    launch.push(c.modelId);
  }

  toEvict.push(...evictMoved);
  return {
    launch,
    evict: leastRecentlyUsedFirst(toEvict),
    unschedulable,
    placements,
  };
}

/**
 * A running model's placement, priced for this pass. On one device it costs what the model
 * costs now (its desired footprint and draft), as `schedule` prices a running desired model; a
 * split or a partial placement keeps its own per-device bytes, which are what its launch holds
 * (a split pays a compute buffer on every device, so it is not the one-device cost spread out).
 */
function repriced(at: Placement, cost: number): Placement {
  if (at.kind !== 'gpu' || at.devices.length !== 1 || (at.devices[0] as Placement['devices'][number]).bytes === cost) return at;
  return { ...at, devices: [{ ...(at.devices[0] as Placement['devices'][number]), bytes: cost }] };
}

function fitsWhereItIs(at: Placement, rooms: Map<number, DeviceRoom>, hostFree: number): boolean {
  if (at.hostBytes > hostFree) return false;
  return at.devices.every((part) => {
    const room = rooms.get(part.index);
    return room !== undefined && part.bytes <= room.budget - room.held;
  });
}

/** Some of it is on a device this pass does not offer (a GPU that is gone): it cannot run there. */
function strandedAt(at: Placement, rooms: ReadonlyMap<number, DeviceRoom>): boolean {
  return at.devices.some((part) => !rooms.has(part.index));
}
