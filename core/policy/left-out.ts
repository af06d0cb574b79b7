// Why a model was left out of `place`'s plan, and whether for good (`strict`).
import { needOf, type Candidate } from './candidates.js';
import type { DeviceRoom } from './device-room-shape.js';
import { heldRoomOf, pinnedRoomOf, type Layout } from './device-room.js';
import { placeOne, PINNED_ONLY } from './fastest-placement.js';
import type { Device, LayerCost, PlacedDesired } from './place-types.js';
import { needs } from './reasons.js';
import type { LeftOut } from '../contracts/plan.js';

/**
 * Why it was left out, and whether for good. With one device it is `schedule`'s own sentence;
 * with several, each GPU considered and what was short there.
 */
export function leftOutReason(
  c: Candidate,
  cost: LayerCost | undefined,
  d: PlacedDesired | undefined,
  layout: Layout,
  hostFree: number,
): LeftOut {
  const { rooms, devices } = layout;
  const need = needOf(c);
  if (devices.length === 1) {
    const room = rooms.get((devices[0] as Device).index) as DeviceRoom;
    if (c.cost > room.budget) return { modelId: c.modelId, reason: room.writer.overWholeBudget(need), strict: true };
    if (c.cost > room.budget - room.pinnedHeld) return { modelId: c.modelId, reason: room.writer.pinnedOut(need, pinnedRoomOf(room)), strict: true };
    return { modelId: c.modelId, reason: room.writer.noRoom(need, heldRoomOf(room)), strict: false };
  }
  const strict = placeOne(c, cost, d, layout, hostFree, PINNED_ONLY) === null;
  // The notes joined by "; ", added one by one: a join would copy the long words about the
  // rooms into every reason, where `+` only links them.
  let reason = `${needs(need)}; ${layout.roomsWords(strict)}`;
  if (cost === undefined) reason += '; it cannot be split (its layers are unknown)';
  else {
    if (d?.oneGpu === true) reason += '; its engine runs it on one GPU (the embedded engine cannot split a model by shares)';
    else if (layout.classGroups.length > 1 && d?.mixedSplit !== true) reason += '; a split across mixed GPUs is off for this model (mixedSplit)';
    reason += `; part on the CPU needs host RAM, ${layout.hostWords(hostFree)} free`;
  }
  const pinnedSomewhere = devices.some((device) => (rooms.get(device.index) as DeviceRoom).pinnedHeld > 0);
  if (strict) reason += pinnedSomewhere ? ': it fits only if a pinned model is unpinned' : ': it does not fit even with nothing else loaded';
  return { modelId: c.modelId, reason, strict };
}
