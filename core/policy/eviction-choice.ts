// Which resident goes first when a model needs room on a device: the least important, read from
// the end of the device's undecided residents (admission order), by a binary search over their
// running sums once the pass has them all.
import type { DeviceRoom } from './device-room-shape.js';

/** Sums `undecidedBy` from each entry to the end, once every running candidate is in it. */
export function sealUndecided(room: DeviceRoom): void {
  const { undecidedBy } = room;
  const bytesFrom = new Array<number>(undecidedBy.length);
  let sum = 0;
  let whole = true;
  for (let i = undecidedBy.length - 1; i >= 0; i--) {
    const { bytes } = undecidedBy[i] as { bytes: number };
    sum += bytes;
    whole &&= Number.isInteger(bytes);
    bytesFrom[i] = sum;
  }
  room.bytesFrom = bytesFrom;
  room.exactSums = whole && sum <= Number.MAX_SAFE_INTEGER;
}

/**
 * The rank of the most important resident that must go from `room` for `need` bytes, evicting
 * the least important first; Infinity when none must go.
 *
 * Evicting from the end, the room grows by bytesFrom[i] once entry i and all after it are gone,
 * and that only grows as i falls: the answer is the last i at which `need` fits, found by a
 * binary search. Why the scan stays as the fallback: it adds the bytes one at a time from the
 * end, and with fractional bytes floating point may round that sum differently from bytesFrom;
 * with whole numbers below 2^53 every partial sum is exact, so both give the same answer and
 * the plan does not depend on which ran.
 */
export function mostImportantToGo(room: DeviceRoom, need: number): number {
  let free = room.budget - room.held - room.undecided;
  if (need <= free) return Infinity;
  const { undecidedBy, bytesFrom, firstUndecided } = room;
  if (room.exactSums && Number.isInteger(free) && Math.abs(free) + (bytesFrom[firstUndecided] ?? 0) <= Number.MAX_SAFE_INTEGER) {
    if (firstUndecided >= undecidedBy.length || need > free + (bytesFrom[firstUndecided] as number)) return -1;
    // Invariant: need fits at `lo`, and does not at `hi` (or hi is past the end).
    let lo = firstUndecided;
    let hi = undecidedBy.length;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (need <= free + (bytesFrom[mid] as number)) lo = mid;
      else hi = mid;
    }
    return (undecidedBy[lo] as { rank: number }).rank;
  }
  for (let i = undecidedBy.length - 1; i >= firstUndecided; i--) {
    const { rank, bytes } = undecidedBy[i] as { rank: number; bytes: number };
    free += bytes;
    if (need <= free) return rank;
  }
  return -1;
}
