// Moving an idle model back up to a faster placement once the GPUs have room again.
//
// Why: `place` puts a model partly (or wholly) on the CPU when the GPUs are full, and keeps a
// running model where it is as long as it fits there, which is what makes its plan a fixed
// point. But once the memory comes back (another model unloaded, another program closed), a
// model left on the CPU would stay several times slower for as long as it runs. So the
// controller asks, when the plan is at rest: would `place`, with this model not running, put it
// somewhere faster, evicting nothing? Then it evicts it, and the next pass launches it there.
// Only idle, unpinned models move (a request is never cut for it), one per pass.
import { place, type Device, type PlacePlan, type Placement } from '../policy/place.js';
import type { PolicyInputs } from './policy-inputs.js';

const SPEED: Readonly<Record<Placement['kind'], number>> = { cpu: 0, partial: 1, mixed: 2, split: 3, gpu: 4 };

/** The model to move up now, with where it would go, or null. Pure; calls `place` once per candidate. */
export function moveUpOf(plan: PlacePlan, inputs: PolicyInputs, devices: readonly Device[], hostFreeBytes: number): { modelId: string; to: Placement } | null {
  // Only at rest: while anything launches or stops, the room it would move into is not settled.
  if (plan.launch.length > 0 || plan.evict.length > 0) return null;
  const desiredIds = new Set(inputs.desired.map((d) => d.modelId));
  for (const resident of inputs.resident) {
    const at = plan.placements[resident.modelId];
    if (at === undefined || (at.kind !== 'partial' && at.kind !== 'cpu')) continue;
    if (resident.active || resident.pinned || !desiredIds.has(resident.modelId)) continue;
    const others = inputs.resident.filter((r) => r.modelId !== resident.modelId);
    // Its host share is freed only once it has stopped: not counted back, as `place` does.
    const without = place(inputs.desired, others, devices, hostFreeBytes);
    const to = without.placements[resident.modelId];
    if (without.evict.length > 0 || without.launch.length !== 1 || without.launch[0] !== resident.modelId || to === undefined) continue;
    if (SPEED[to.kind] > SPEED[at.kind]) return { modelId: resident.modelId, to };
  }
  return null;
}
