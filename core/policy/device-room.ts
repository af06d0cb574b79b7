// The devices as one pass of `place` holds them: per GPU what is held and by whom (as the reasons
// will tell it), what undecided residents still hold, and the room of each kind a placement may use.
import type { DeviceRoom } from './device-room-shape.js';
import { sealUndecided } from './eviction-choice.js';
import { nonNegative } from './non-negative.js';
import type { Device } from './place-types.js';
import { reasonWriter, withHolder, type HoldReason, type Room } from './reasons.js';
import { classGroups } from './split.js';
import { formatBytes } from '../contracts/format-bytes.js';
import type { Placement } from '../contracts/plan.js';

/** The devices as one pass sees them: fixed for the pass, their rooms filled as models are held. */
export interface Layout {
  rooms: Map<number, DeviceRoom>;
  /** In index order. */
  devices: readonly Device[];
  /** The groups a same-class split may use, computed once per pass. */
  classGroups: readonly (readonly Device[])[];
  /** The one group a mixed split may use: every device. */
  mixedGroups: readonly (readonly Device[])[];
  /**
   * A device's room of each kind (see available). Made once per pass rather than per
   * placement tried: a closure per try was a third of what a crowded pass allocated.
   */
  free: Readonly<Record<RoomKind, (device: Device) => number>>;
  /**
   * "GPU 0 RTX 4090: 24 GiB budget, … free; GPU 1 …": every GPU's room as it stands, or with
   * only the pinned models in it (strict). Worded once between two holds, however many models
   * are turned away meanwhile.
   */
  roomsWords(strict: boolean): string;
  /** formatBytes of the host RAM free, worded once for each amount (it changes only when a launch takes some). */
  hostWords(hostFree: number): string;
  /** Holds `at` for `modelId` on its devices (a device not in the layout holds nothing). */
  hold(modelId: string, at: Placement, why: HoldReason, priority: number): void;
  /** Adds (1) a running, undecided resident's bytes at `rank`, or (-1) decides every one up to `rank`. */
  setUndecided(at: Placement, rank: number, sign: 1 | -1): void;
  /** Once every undecided resident is in (see sealUndecided). */
  sealUndecided(): void;
}

/**
 * How much a device can give a new placement: 'free' is what nobody holds (the undecided
 * residents keep theirs); 'room' is what it has once every model ranked below is evicted;
 * 'pinned' is what it would have with every evictable model gone (for `strict`).
 */
export type RoomKind = 'free' | 'room' | 'pinned';

export function available(room: DeviceRoom, kind: RoomKind): number {
  if (kind === 'pinned') return room.budget - room.pinnedHeld;
  return room.budget - room.held - (kind === 'free' ? room.undecided : 0);
}

export function heldRoomOf(room: DeviceRoom): Room {
  return (room.heldRoom ??= { heldBytes: room.held, named: room.named, holderCount: room.holderCount });
}

export function pinnedRoomOf(room: DeviceRoom): Room {
  return (room.pinnedRoom ??= { heldBytes: room.pinnedHeld, named: room.pinnedNamed, holderCount: room.pinnedCount });
}

/** The layout of one pass over `devices` (at least one), every room empty. */
export function createLayout(devices: readonly Device[]): Layout {
  const sortedDevices = [...devices].sort((a, b) => a.index - b.index);
  const rooms = new Map<number, DeviceRoom>(
    sortedDevices.map((device) => [
      device.index,
      { device, budget: nonNegative(device.budgetBytes), held: 0, named: [], holderCount: 0, pinnedHeld: 0, pinnedNamed: [], pinnedCount: 0, undecided: 0, undecidedBy: [], firstUndecided: 0, bytesFrom: [], exactSums: false, writer: reasonWriter(nonNegative(device.budgetBytes)), heldRoom: null, pinnedRoom: null },
    ]),
  );
  const wordsCache: { held: string | null; pinned: string | null } = { held: null, pinned: null };
  const hostWordsCache = { bytes: Number.NaN, words: '' };
  return {
    rooms,
    devices: sortedDevices,
    classGroups: classGroups(sortedDevices),
    mixedGroups: [sortedDevices],
    free: {
      free: (device) => available(rooms.get(device.index) as DeviceRoom, 'free'),
      room: (device) => available(rooms.get(device.index) as DeviceRoom, 'room'),
      pinned: (device) => available(rooms.get(device.index) as DeviceRoom, 'pinned'),
    },
    roomsWords(strict) {
      const cached = strict ? wordsCache.pinned : wordsCache.held;
      if (cached !== null) return cached;
      const words = sortedDevices
        .map((device) => {
          const room = rooms.get(device.index) as DeviceRoom;
          return `GPU ${device.index} ${device.name}: ${room.writer.roomWords(strict ? pinnedRoomOf(room) : heldRoomOf(room))}`;
        })
        .join('; ');
      if (strict) wordsCache.pinned = words;
      else wordsCache.held = words;
      return words;
    },
    hostWords(hostFree) {
      if (hostWordsCache.bytes !== hostFree) hostWordsCache.words = formatBytes(Math.max(0, hostFree));
      hostWordsCache.bytes = hostFree;
      return hostWordsCache.words;
    },
    hold(modelId, at, why, priority) {
      for (const part of at.devices) {
        const room = rooms.get(part.index);
        if (room === undefined || part.bytes <= 0) continue;
        room.held += part.bytes;
        room.holderCount++;
        room.named = withHolder(room.named, { modelId, bytes: part.bytes, why, priority });
        room.heldRoom = null;
        wordsCache.held = null;
        if (why === 'pinned') {
          room.pinnedRoom = null;
          wordsCache.pinned = null;
          room.pinnedHeld += part.bytes;
          room.pinnedCount++;
          room.pinnedNamed = withHolder(room.pinnedNamed, { modelId, bytes: part.bytes, why, priority });
        }
      }
    },
    setUndecided(at, rank, sign) {
      for (const part of at.devices) {
        const room = rooms.get(part.index);
        if (room === undefined) continue;
        room.undecided += sign * nonNegative(part.bytes);
        if (sign > 0) room.undecidedBy.push({ rank, bytes: nonNegative(part.bytes) });
        else while (room.firstUndecided < room.undecidedBy.length && (room.undecidedBy[room.firstUndecided] as { rank: number }).rank <= rank) room.firstUndecided++;
      }
    },
    sealUndecided() {
      for (const room of rooms.values()) sealUndecided(room);
    },
  };
}
