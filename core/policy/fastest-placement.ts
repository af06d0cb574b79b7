// The fastest placement that fits a model, tier by tier (one GPU, a split of one class, a mixed
// split, partial offload, the CPU), each tried in the room nobody holds before the room it would
// have with lower-ranked models evicted; and where a pinned model that fits nowhere goes.
import type { Candidate } from './candidates.js';
import type { DeviceRoom } from './device-room-shape.js';
import { available, type Layout, type RoomKind } from './device-room.js';
import { mostImportantToGo } from './eviction-choice.js';
import { nonNegative } from './non-negative.js';
import { partial } from './partial.js';
import { layeredTotal, type Device, type LayerCost, type PlacedDesired } from './place-types.js';
import { split } from './split.js';
import type { Placement } from '../contracts/plan.js';

type Tier = Placement['kind'];
const TIERS: readonly Tier[] = ['gpu', 'split', 'mixed', 'partial', 'cpu'];

/** The rooms placeOne tries, narrow to wide: for a model that earns its place, a pinned one to launch, and `strict`. */
export const FREE_THEN_ROOM: readonly RoomKind[] = ['free', 'room'];
export const ROOM_ONLY: readonly RoomKind[] = ['room'];
export const PINNED_ONLY: readonly RoomKind[] = ['pinned'];

/**
 * The fastest placement that fits, or null. Each tier is tried in every kind of room, in the
 * order given, before the next (slower) tier: a placement is made slower only when the faster
 * one does not fit even with the models ranked below evicted.
 */
export function placeOne(
  c: Candidate,
  cost: LayerCost | undefined,
  d: PlacedDesired | undefined,
  layout: Layout,
  hostFree: number,
  kinds: readonly RoomKind[],
): Placement | null {
  if (cannotFitAnywhere(c, cost, layout, hostFree, kinds[kinds.length - 1] as RoomKind)) return null;
  for (const tier of TIERS) {
    for (const kind of kinds) {
      const at = tryTier(tier, c, cost, d, layout, hostFree, kind);
      if (at !== null) return at;
    }
  }
  return null;
}

/**
 * True when no tier can hold it even in the widest room (the kinds are ordered narrow to wide):
 * most of the models left out on a crowded workstation, answered without trying every tier. An
 * indivisible model needs one device with room for it all; a layered one at least its smallest
 * form (all on the CPU) across every device's room and the host RAM together.
 */
function cannotFitAnywhere(c: Candidate, cost: LayerCost | undefined, layout: Layout, hostFree: number, widest: RoomKind): boolean {
  let largest = 0;
  let total = 0;
  for (const device of layout.devices) {
    const room = Math.max(0, available(layout.rooms.get(device.index) as DeviceRoom, widest));
    if (room > largest) largest = room;
    total += room;
  }
  if (cost === undefined || !(cost.layers >= 1)) return c.cost > largest;
  const smallest = Math.min(c.cost, layeredTotal(cost, c.draftBytes, cost.layers) - nonNegative(cost.computeBytesPerDevice));
  return smallest > total + Math.max(0, hostFree);
}

function tryTier(
  tier: Tier,
  c: Candidate,
  cost: LayerCost | undefined,
  d: PlacedDesired | undefined,
  layout: Layout,
  hostFree: number,
  kind: RoomKind,
): Placement | null {
  const { rooms, devices } = layout;
  if (tier === 'gpu') {
    // Where models must make way, the device whose most important one to go is least
    // important (the least recently used go first, as on one device); then best fit: the
    // device with the least room that still holds it, so the roomy ones stay for big models.
    let best: Device | null = null;
    let bestRoom = 0;
    let bestVictim = 0;
    for (const device of devices) {
      const deviceRoom = rooms.get(device.index) as DeviceRoom;
      const room = available(deviceRoom, kind);
      if (c.cost > room) continue;
      const victim = kind === 'room' ? mostImportantToGo(deviceRoom, c.cost) : Infinity;
      if (best === null || victim > bestVictim || (victim === bestVictim && room < bestRoom)) {
        best = device;
        bestRoom = room;
        bestVictim = victim;
      }
    }
    return best === null ? null : { kind: 'gpu', devices: [{ index: best.index, layers: cost?.layers ?? 0, bytes: c.cost }], cpuMoeLayers: 0, hostBytes: 0 };
  }
  if (cost === undefined || !(cost.layers >= 1)) return null;
  const free = layout.free[kind];
  if (tier === 'split' || tier === 'mixed') {
    if (d?.oneGpu === true || (tier === 'mixed' && d?.mixedSplit !== true)) return null;
    const groups = tier === 'split' ? layout.classGroups : layout.mixedGroups;
    let best: Placement | null = null;
    for (const group of groups) {
      if (group.length < 2) continue;
      const at = split(tier, group, free, cost, c.draftBytes);
      if (at !== null && (best === null || at.devices.length < best.devices.length)) best = at;
    }
    return best;
  }
  if (tier === 'partial') return partial(devices, free, cost, c.draftBytes, hostFree);
  // With no host RAM to spare (hostFree 0) there is no CPU placement at all, as for `schedule`.
  const all = layeredTotal(cost, c.draftBytes, cost.layers) - nonNegative(cost.computeBytesPerDevice);
  return hostFree > 0 && all <= hostFree ? { kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: all } : null;
}

/** A pinned model that fits nowhere still launches, on the roomiest device, over its budget (as `schedule` holds it). */
export function overBudget(c: Candidate, layout: Layout): Placement {
  let device = layout.devices[0] as Device;
  // The roomiest; ties to the lower index (devices come in index order).
  for (const candidate of layout.devices) {
    if (available(layout.rooms.get(candidate.index) as DeviceRoom, 'room') > available(layout.rooms.get(device.index) as DeviceRoom, 'room')) device = candidate;
  }
  return { kind: 'gpu', devices: [{ index: device.index, layers: 0, bytes: c.cost }], cpuMoeLayers: 0, hostBytes: 0 };
}
