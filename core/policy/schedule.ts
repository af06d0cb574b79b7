// Which models stay resident in the device-memory budget: one pure decision per reconcile pass.
//
// Why pure: the controller calls this on every pass, with whatever it just observed, and
// applies the plan through its effects. Without I/O, a clock or a log here, every rule below
// is a table test or a property test, and a converged set provably yields an empty plan, so a
// steady state does no work and cannot thrash.
//
// Drafts. A speculative-decoding draft is loaded by its primary's process, so a pair is one
// process: one Desired entry carrying `draft`, one Resident entry whose footprint is primary
// plus draft. The draft's id is only a label for costing and for reasons; it is never
// launched or evicted on its own. When the same id is also desired as a model in its own
// right, that is a second, standalone process with its own entry and its own memory (a
// llama-server cannot share a loaded draft with another server), and it is scheduled like
// any other model.
import { candidatesOf, leastRecentlyUsedFirst, needOf, type Candidate } from './candidates.js';
import { nonNegative } from './non-negative.js';
import { reasonWriter, withHolder, type Holder, type HoldReason, type Room } from './reasons.js';
import type { LeftOut } from '../contracts/plan.js';

/** The companion model a primary loads for speculative decoding. */
export interface Draft {
  modelId: string;
  /** Device bytes the draft adds to its primary's process. Negative counts as zero. */
  footprint: number;
}

/** A model the system wants resident now. */
export interface Desired {
  /** The catalog id, shared with the engines and the router. */
  modelId: string;
  /** Device bytes at the level it will launch at, without its draft. Negative counts as zero. */
  footprint: number;
  /** Higher is admitted first under memory pressure. */
  priority: number;
  /** Kept whatever the budget says: the person asked for it to stay hot. */
  pinned: boolean;
  draft?: Draft;
  /** When a request last wanted it (any monotonic stamp); absent: its resident's, else never. */
  lastUsed?: number;
  /**
   * When its oldest request still waiting for it arrived (same clock as lastUsed); absent: no
   * request waits. Among models of one priority, those with requests waiting go first, the
   * longest-waiting first: requests for several models are served a model at a time, in the
   * order they came, and no model with waiting requests is passed over for ever.
   */
  waitingSince?: number;
  /**
   * It failed since its last success and is being tried again. It is admitted after every
   * other desired model, and a pin does not force it: its retries may use free memory, or
   * memory held by models nobody wants, but never push out a model that is wanted — a broken
   * model retried on every backoff would otherwise evict a working one each time.
   */
  retrying?: boolean;
}

/** A model server running now, as the engines report it. */
export interface Resident {
  modelId: string;
  /** Device bytes of the whole process: primary plus draft for a pair. Negative counts as zero. */
  footprint: number;
  /** Never evicted. */
  pinned: boolean;
  /** In use: loading, decoding, or held for its turn (core/controller/policy-inputs.ts); evicting it would drop that work, so it is never evicted. */
  inUse: boolean;
  lastUsed: number;
}

/** What converges the resident set on the desired one. Empty launch and evict: converged. */
export interface Plan {
  /** Desired models to start, most important first; none of them is resident. */
  launch: string[];
  /** Resident models to stop, least recently used first; none is pinned or in use. */
  evict: string[];
  /** Desired models left out, most important first, each with a sentence a person can act on. */
  unschedulable: LeftOut[];
}

/**
 * The launches and evictions that bring `resident` to the chosen set within `budget` bytes.
 *
 * 1. Forced models are kept first, whatever they cost: every pinned desired model (unless it
 *    is retrying after a failure), and every resident model that is pinned or in use
 *    (desired or not).
 * 2. The other desired models are admitted in order (models retrying after a failure last,
 *    then priority high first, then those with
 *    requests waiting, the longest-waiting first, then lastUsed recent first, then already
 *    resident first, then id) whenever they fit what is left.
 *    A model that does not fit is skipped, not a stop: a smaller one further down may still
 *    use the room, and it only gets room that no model before it could use.
 * 3. Every other resident model is evicted; every desired model left out is reported with
 *    its reason, and whether it is left out for good (`strict`: pinned models alone leave it
 *    no room) or only until room is made.
 *
 * Deterministic and independent of input order; a fixed point (apply the plan, call again:
 * nothing to launch or evict). O(n log n): one sort of the desired models, one of the evictions.
 * Throws only on a caller bug: the same model id twice in `desired` or twice in `resident`,
 * where no order-independent answer exists.
 */
export function schedule(desired: readonly Desired[], resident: readonly Resident[], budget: number): Plan {
  const budgetBytes = nonNegative(budget);
  const { candidates, undesired } = candidatesOf('schedule', desired, resident);

  const { forced: forcedUndesired, toEvict } = undesired;

  let held = 0;
  let holderCount = 0;
  // What pinned models hold: the room no eviction can make, for `strict`.
  let pinnedHeld = 0;
  let pinnedNamed: readonly Holder[] = [];
  let pinnedCount = 0;
  let named: readonly Holder[] = [];
  // What held the budget, as the reasons will tell it; rebuilt only when a model turned away
  // finds it stale, so every model turned away between two admissions shares one Room.
  let room: Room | null = null;
  const hold = (modelId: string, bytes: number, why: HoldReason, priority: number): void => {
    held += bytes;
    if (bytes <= 0) return;
    if (why === 'pinned') {
      pinnedHeld += bytes;
      pinnedCount++;
      pinnedNamed = withHolder(pinnedNamed, { modelId, bytes, why, priority });
    }
    holderCount++;
    named = withHolder(named, { modelId, bytes, why, priority });
    room = null;
  };

  for (const r of forcedUndesired) hold(r.modelId, nonNegative(r.footprint), r.pinned ? 'pinned' : 'active', 0);
  for (const c of candidates) if (c.forcedBy !== null) hold(c.modelId, c.cost, c.forcedBy, c.priority);

  const launch: string[] = [];
  // A reason tells what held the memory when the model was turned away, not what later,
  // smaller admissions took.
  const turnedAway: { candidate: Candidate; room: Room }[] = [];
  for (const c of candidates) {
    if (c.forcedBy === null) {
      if (c.cost > budgetBytes - held) {
        room ??= { heldBytes: held, named, holderCount };
        turnedAway.push({ candidate: c, room });
        if (c.running !== undefined) toEvict.push(c.running);
        continue;
      }
      hold(c.modelId, c.cost, 'admitted', c.priority);
    }
    if (c.running === undefined) launch.push(c.modelId);
  }

  const reasons = reasonWriter(budgetBytes);
  return {
    launch,
    evict: leastRecentlyUsedFirst(toEvict),
    unschedulable: turnedAway.map(({ candidate, room: then }) => {
      const need = needOf(candidate);
      if (candidate.cost > budgetBytes) return { modelId: candidate.modelId, reason: reasons.overWholeBudget(need), strict: true };
      if (candidate.cost > budgetBytes - pinnedHeld) {
        const pinned: Room = { heldBytes: pinnedHeld, named: pinnedNamed, holderCount: pinnedCount };
        return { modelId: candidate.modelId, reason: reasons.pinnedOut(need, pinned), strict: true };
      }
      return { modelId: candidate.modelId, reason: reasons.noRoom(need, then), strict: false };
    }),
  };
}
