// The sentences the policy gives for a model it left out.
//
// Why sentences with numbers and names: "unschedulable" tells a person nothing, while "needs
// 9.1 GiB; 24 GiB budget, 17.2 GiB held by pinned qwen-32b (12 GiB) …" tells them to unpin
// qwen-32b or wait. The dashboard, the tray, the CLI and the router's 503 all show these
// strings as they are, so they are built once, here.
import type { LaunchLevel } from './levels.js';

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * Bytes for a person, in binary units labelled as such (1 GiB = 1024 MiB, never "GB").
 * The largest unit in which the amount is at least 1; one decimal below 100 of that unit,
 * whole numbers from 100, a trailing ".0" dropped; bytes are always whole. So: "0 B",
 * "512 MiB", "9.1 GiB", "17.2 GiB", "24 GiB", "120 GiB".
 * Why a decimal up to 100 and not only below 10: budgets are tens of GiB, and "17 GiB held,
 * needs 7 GiB, 24 GiB budget" reads as if it fitted when the truth is 17.4 + 7 > 24.
 * Negative amounts keep their sign; NaN and infinities are printed as they are.
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return `${bytes} B`;
  const sign = bytes < 0 ? '-' : '';
  let value = Math.abs(bytes);
  let unit = 0;
  while (unit < UNITS.length - 1 && value >= 1024) {
    value /= 1024;
    unit++;
  }
  let shown = rounded(value, unit);
  // 1023.97 MiB must read "1 GiB", not "1024 MiB".
  if (shown >= 1024 && unit < UNITS.length - 1) {
    unit++;
    shown = rounded(value / 1024, unit);
  }
  return `${sign}${shown} ${UNITS[unit]}`;
}

function rounded(value: number, unit: number): number {
  return unit === 0 || value >= 100 ? Math.round(value) : Math.round(value * 10) / 10;
}

/** What a left-out model asks for: its total, and the draft that rides with it, if any. */
export interface Need {
  /** Own footprint plus the draft's, bytes. */
  bytes: number;
  draft?: { modelId: string; bytes: number };
}

/** Why a holder holds its memory: forced by a pin, forced by in-flight work, or admitted before. */
export type HoldReason = 'pinned' | 'active' | 'admitted';

/** A model that holds part of the budget when another one is left out. */
export interface Holder {
  modelId: string;
  bytes: number;
  why: HoldReason;
  priority: number;
}

/** How many holders a reason names; the rest are counted. Three keeps a tray tooltip readable. */
export const NAMED_HOLDERS = 3;

/**
 * The holders a reason names after `holder` is added: the largest first (they are what a
 * person would free), ties by id. Returns `top` itself when `holder` does not make the cut,
 * and never mutates it, so a caller can keep earlier arrays as snapshots for free.
 */
export function withHolder(top: readonly Holder[], holder: Holder): readonly Holder[] {
  const at = top.findIndex((h) => largerHolderFirst(holder, h) < 0);
  if (at === -1) return top.length < NAMED_HOLDERS ? [...top, holder] : top;
  const next = [...top.slice(0, at), holder, ...top.slice(at)];
  return next.length > NAMED_HOLDERS ? next.slice(0, NAMED_HOLDERS) : next;
}

function largerHolderFirst(a: Holder, b: Holder): number {
  if (a.bytes !== b.bytes) return b.bytes - a.bytes;
  return a.modelId < b.modelId ? -1 : a.modelId > b.modelId ? 1 : 0;
}

/** What held the budget when a model was turned away. Treated as immutable. */
export interface Room {
  heldBytes: number;
  /** The largest holders (see withHolder). */
  named: readonly Holder[];
  /** All holders with bytes > 0, named or not. */
  holderCount: number;
}

/** The sentences for one budget. */
export interface ReasonWriter {
  /** "needs 30 GiB, more than the whole 24 GiB budget": it cannot fit at this level, whatever is evicted. */
  overWholeBudget(need: Need): string;
  /**
   * "needs 9.1 GiB; 24 GiB budget, 17.2 GiB held by pinned qwen-32b (12 GiB) and active
   * llama-8b (5.2 GiB), 6.8 GiB free": it would fit once some of the named holders go.
   */
  noRoom(need: Need, room: Room): string;
  /** "24 GiB budget, 17.2 GiB held by …, 6.8 GiB free": a room alone, for a sentence about several budgets. */
  roomWords(room: Room): string;
  /**
   * "needs 9.1 GiB; 24 GiB budget, 17.2 GiB held by pinned qwen-32b (17.2 GiB): it fits only if
   * a pinned model is unpinned": even with every other model evicted there is no room.
   */
  pinnedOut(need: Need, pinned: Room): string;
}

/**
 * A writer for one schedule pass. Why a writer and not free functions: every model turned
 * away between two admissions sees the same Room, so the writer words each Room once (by
 * identity) and the budget once; with thousands of models left out that is most of the
 * pass's time saved. Pure apart from that cache; never throws.
 */
export function reasonWriter(budgetBytes: number): ReasonWriter {
  const budget = formatBytes(budgetBytes);
  const roomWords = new Map<Room, string>();
  const left = (heldBytes: number): string =>
    heldBytes > budgetBytes ? `${formatBytes(heldBytes - budgetBytes)} over it` : `${formatBytes(budgetBytes - heldBytes)} free`;
  const wordsOf = (room: Room): string => {
    let words = roomWords.get(room);
    if (words === undefined) {
      // An empty budget says so rather than "0 B held by nothing".
      words = room.holderCount === 0 && room.heldBytes <= 0 ? `${budget} budget, all free` : `${budget} budget, ${formatBytes(room.heldBytes)} held by ${holderList(room.named, room.holderCount)}, ${left(room.heldBytes)}`;
      roomWords.set(room, words);
    }
    return words;
  };
  return {
    overWholeBudget: (need) => `${needs(need)}, more than the whole ${budget} budget`,
    roomWords: wordsOf,
    noRoom: (need, room) => `${needs(need)}; ${wordsOf(room)}`,
    pinnedOut(need, pinned) {
      return `${needs(need)}; ${budget} budget, ${formatBytes(pinned.heldBytes)} held by ${holderList(pinned.named, pinned.holderCount)}, ${left(pinned.heldBytes)}: it fits only if a pinned model is unpinned`;
    },
  };
}

/**
 * Why a launch that puts memory in host RAM was refused, given its hostBytes (footprintAt):
 * "needs 6.2 GiB of RAM on the CPU; 3.1 GiB free" for a 'minimal' (CPU-only) launch, "needs
 * 3.1 GiB of RAM for the layers on the CPU; 2 GiB free" for a 'partial' one. Why the level in
 * the words: a person reading "needs 3.1 GiB on the CPU" about a model that is 12 GiB on disk
 * would think the number wrong; it is only the part that did not go to the GPU.
 */
export function hostMemoryReason(needBytes: number, freeBytes: number, level: Extract<LaunchLevel, 'partial' | 'minimal'> = 'minimal'): string {
  const what = level === 'partial' ? 'of RAM for the layers on the CPU' : 'of RAM on the CPU';
  return `needs ${formatBytes(needBytes)} ${what}; ${formatBytes(freeBytes)} free`;
}

export function needs(need: Need): string {
  if (need.draft === undefined) return `needs ${formatBytes(need.bytes)}`;
  const own = need.bytes - need.draft.bytes;
  return `needs ${formatBytes(need.bytes)} with its draft ${need.draft.modelId} (${formatBytes(own)} + ${formatBytes(need.draft.bytes)})`;
}

function holderList(named: readonly Holder[], holderCount: number): string {
  const parts = named.map(describeHolder);
  const unnamed = holderCount - named.length;
  if (unnamed > 0) return `${parts.join(', ')} and ${unnamed} more`;
  if (parts.length <= 1) return parts[0] ?? 'nothing';
  return `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

function describeHolder(holder: Holder): string {
  const size = formatBytes(holder.bytes);
  switch (holder.why) {
    case 'pinned':
      return `pinned ${holder.modelId} (${size})`;
    case 'active':
      return `active ${holder.modelId} (${size})`;
    case 'admitted':
      return `${holder.modelId} (${size}, priority ${holder.priority})`;
  }
}
