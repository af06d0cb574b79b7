// One GPU's room as a pass of `place` holds it: what is held and by whom, and what undecided
// residents still hold. Its own file, a leaf, because the layout that fills it (device-room.ts)
// and the eviction choice that reads it (eviction-choice.ts) both need the shape, and the
// layout calls the choice: with the shape in either, the two imported each other.
import type { Device } from './place-types.js';
import type { Holder, ReasonWriter, Room } from './reasons.js';

/** Per device: what is held, and by whom, as the reasons will tell it. */
export interface DeviceRoom {
  device: Device;
  budget: number;
  held: number;
  named: readonly Holder[];
  holderCount: number;
  pinnedHeld: number;
  pinnedNamed: readonly Holder[];
  pinnedCount: number;
  /** Held by residents not decided yet (evictable by a model that ranks above them). */
  undecided: number;
  /**
   * Those residents in admission order (a larger rank is less important), with their bytes
   * here. Models are decided in that same order, so the decided ones are always a prefix:
   * `firstUndecided` skips it, and the least important are read from the end, no sort needed.
   */
  undecidedBy: { rank: number; bytes: number }[];
  firstUndecided: number;
  /**
   * bytesFrom[i]: the bytes of undecidedBy[i] and every entry after it, filled once all are
   * in (sealUndecided), so that mostImportantToGo can binary-search instead of summing from
   * the end on every call (that scan made a crowded pass quadratic). exactSums: every entry is a
   * whole number and their total a safe integer, so any order of adding them gives the same
   * number (see mostImportantToGo).
   */
  bytesFrom: number[];
  exactSums: boolean;
  /** This device's sentences; its Room snapshots below are worded once each (see reasonWriter). */
  writer: ReasonWriter;
  /** What held it when a model was last turned away, until the next hold: shared by every model turned away meanwhile. */
  heldRoom: Room | null;
  pinnedRoom: Room | null;
}
