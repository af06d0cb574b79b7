// Who would make way for whom if busy models were idle (the router's turns end a busy model's
// turn with it; see core/demand/turns.ts).
import { place, type Device, type PlacePlan } from '../policy/place.js';
import type { PolicyInputs } from './policy-inputs.js';

/**
 * Per busy model, the models it keeps out: the plan again with every busy (not loading, not
 * pinned) resident unforced. Only computed when the real plan left something out that room
 * could be made for, which is the only time anyone waits on a busy model. Pure.
 */
export function yieldsOf(plan: PlacePlan, inputs: PolicyInputs, devices: readonly Device[], hostFreeBytes: number): Map<string, readonly string[]> {
  const out = new Map<string, readonly string[]>();
  if (!plan.unschedulable.some((u) => !u.strict)) return out;
  const relaxed = inputs.resident.map((r) => (r.inUse && !inputs.loadingIds.has(r.modelId) ? { ...r, inUse: false } : r));
  const ifIdle = place(inputs.desired, relaxed, devices, hostFreeBytes);
  if (ifIdle.launch.length === 0) return out;
  for (const modelId of ifIdle.evict) out.set(modelId, ifIdle.launch);
  return out;
}
