// What the policy knows about each desired model while it decides, and the one order in which
// it admits them: shared by `place` (per GPU) and its one-pool oracle `schedule`
// (test/support/schedule-oracle.ts), so the two cannot rank models differently.
import { nonNegative } from './non-negative.js';
import type { HoldReason, Need } from './reasons.js';
import type { Desired, Resident } from './plan-types.js';

export interface Candidate {
  modelId: string;
  /** A shallow copy of the caller's entry (see candidatesOf), with every field it had. */
  desired: Desired;
  /** Its resident entry, if it runs now. */
  running: Resident | undefined;
  /** Own footprint plus the draft's. */
  cost: number;
  draftBytes: number;
  priority: number;
  lastUsed: number;
  /** Its oldest waiting request's arrival; +Infinity when none waits, so that waiting models sort first. */
  waitingSince: number;
  retrying: boolean;
  /** Why it is kept regardless of the budget, or null when it must earn its place. */
  forcedBy: HoldReason | null;
}

/**
 * The desired models as candidates, in admission order (see admissionOrder), and the residents
 * nobody desires: those a pin or a request holds (kept wherever they are, in id order so that
 * fractional sizes sum the same in any input order), and the rest, to evict. Throws on a caller
 * bug, naming `who`: the same id twice in `desired` or in `resident`, where no order-independent
 * answer exists.
 *
 * Each field of the caller's objects is read once, here, and the policy reads the candidates
 * after. Why it matters: objects built by spreading (`{ ...d, layerCost }`) may each get their
 * own hidden class, and then every property read is a slow lookup; at 10,000 models reading
 * the same fields two or three times was a third of a pass. For the same reason a desired
 * entry is read through a shallow copy, which the candidate keeps as `desired`: one copy is
 * one slow step, and the copies of like entries share a hidden class, so the eight reads
 * here and `place`'s later ones (layerCost, mixedSplit, draft) are fast. A copy holds the
 * entry's own enumerable fields, which for the plain records a Desired is are all of them.
 *
 * Why one map of ids, to each resident's position (or NOT_RESIDENT for a desired model that
 * does not run), and a flag per resident, rather than a map and a set checked in turn: each id
 * is hashed once or twice instead of four or five times, which at 10,000 models was a tenth of
 * a pass.
 */
export function candidatesOf<R extends Resident>(who: string, desired: readonly Desired[], resident: readonly R[]): { candidates: Candidate[]; undesired: { forced: R[]; toEvict: R[] } } {
  const positionOf = new Map<string, number>();
  for (let i = 0; i < resident.length; i++) {
    const { modelId } = resident[i] as R;
    const before = positionOf.size;
    positionOf.set(modelId, i);
    if (positionOf.size === before) throw new Error(`${who}: model "${modelId}" is resident twice; each id must appear once`);
  }
  const desiredResident = new Uint8Array(resident.length);
  const candidates: Candidate[] = [];
  for (const given of desired) {
    const d = { ...given };
    const { modelId, footprint, priority, pinned, draft, lastUsed, waitingSince, retrying } = d;
    const at = positionOf.get(modelId);
    if (at === NOT_RESIDENT || (at !== undefined && desiredResident[at] === 1)) throw new Error(`${who}: model "${modelId}" is desired twice; each id must appear once`);
    let running: R | undefined;
    if (at === undefined) positionOf.set(modelId, NOT_RESIDENT);
    else {
      desiredResident[at] = 1;
      running = resident[at];
    }
    const draftBytes = draft === undefined ? 0 : nonNegative(draft.footprint);
    const isRetrying = retrying === true;
    candidates.push({
      modelId,
      desired: d,
      running,
      cost: nonNegative(footprint) + draftBytes,
      draftBytes,
      priority: Number.isNaN(priority) ? 0 : priority,
      lastUsed: recency(lastUsed ?? running?.lastUsed),
      waitingSince: waitingSince === undefined || Number.isNaN(waitingSince) ? Infinity : waitingSince,
      retrying: isRetrying,
      // A retrying model's pin does not force its launch; a resident that is pinned stays pinned.
      forcedBy: (pinned && !isRetrying) || running?.pinned ? 'pinned' : running?.inUse ? 'active' : null,
    });
  }
  candidates.sort(admissionOrder);
  const forced: R[] = [];
  const toEvict: R[] = [];
  for (let i = 0; i < resident.length; i++) {
    if (desiredResident[i] === 1) continue;
    const r = resident[i] as R;
    if (r.pinned || r.inUse) forced.push(r);
    else toEvict.push(r);
  }
  forced.sort((a, b) => compareIds(a.modelId, b.modelId));
  return { candidates, undesired: { forced, toEvict } };
}

/** In candidatesOf's map of ids: a desired model that does not run. */
const NOT_RESIDENT = -1;

export function needOf(c: Candidate): Need {
  const draft = c.desired.draft;
  return draft === undefined ? { bytes: c.cost } : { bytes: c.cost, draft: { modelId: draft.modelId, bytes: c.draftBytes } };
}

/** Never used (or an unreadable stamp) ranks behind every real stamp. */
function recency(lastUsed: number | undefined): number {
  return lastUsed === undefined || Number.isNaN(lastUsed) ? -Infinity : lastUsed;
}

/**
 * Retrying models last; then priority (high first); then models with requests waiting, the
 * longest-waiting first; then lastUsed (recent first); then already resident; then id.
 */
export function admissionOrder(a: Candidate, b: Candidate): number {
  if (a.retrying !== b.retrying) return a.retrying ? 1 : -1;
  if (a.priority !== b.priority) return a.priority > b.priority ? -1 : 1;
  if (a.waitingSince !== b.waitingSince) return a.waitingSince < b.waitingSince ? -1 : 1;
  if (a.lastUsed !== b.lastUsed) return a.lastUsed > b.lastUsed ? -1 : 1;
  const aRuns = a.running !== undefined;
  if (aRuns !== (b.running !== undefined)) return aRuns ? -1 : 1;
  return compareIds(a.modelId, b.modelId);
}

/**
 * The ids of `residents`, the least recently used first, then by id: the order of a plan's
 * evictions. Why each resident's stamp is read once, before the sort, and not in the
 * comparator: the comparator runs some 2·log n times per resident, and reading the caller's
 * objects (of many shapes) that often was most of the sort's time at 10,000 models.
 */
export function leastRecentlyUsedFirst(residents: readonly Resident[]): string[] {
  const keyed = residents.map((r) => ({ modelId: r.modelId, lastUsed: recency(r.lastUsed) }));
  keyed.sort((a, b) => (a.lastUsed !== b.lastUsed ? (a.lastUsed < b.lastUsed ? -1 : 1) : compareIds(a.modelId, b.modelId)));
  return keyed.map((k) => k.modelId);
}

/** Code-unit order: the same on every machine, unlike localeCompare. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
