// `schedule`: which models stay resident in one pool of device memory, the policy's decision
// before it had GPUs (core/policy/place.ts). Why it lives here, under test/support: nothing in
// the daemon calls it (the controller calls `place` on every pass), but it is the oracle `place`
// is held against, the one-device case of place.property.test.ts giving `schedule`'s answer,
// and its own table and property tests (test/unit/policy/schedule*.test.ts) pin down the rules
// both share: the candidates and their admission order (core/policy/candidates.ts) and the
// reasons' words. Pure, like the policy: no I/O, no clock, no log.
//
// Drafts are one process with their primary, as core/policy/plan-types.ts tells.
import { candidatesOf, leastRecentlyUsedFirst, needOf, type Candidate } from '../../core/policy/candidates.js';
import { nonNegative } from '../../core/policy/non-negative.js';
import { reasonWriter, withHolder, type Holder, type HoldReason, type Room } from '../../core/policy/reasons.js';
import type { Desired, Plan, Resident } from '../../core/policy/plan-types.js';

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
