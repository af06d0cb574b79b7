// The budget limit under which the daemon places a model a given way on this machine: a split
// over two cards of one class, or part of it in host RAM. `npm run gpu-check` needs both on
// cards far bigger than the demo models, and the config's `budget.limit` is the one knob that
// shrinks them: it caps every GPU in proportion (core/demand/desired-state.ts, devicesToPlanOn).
//
// Why ask `place` rather than work the limit out by formula: the window is narrow (a demo-chat
// split holds where each card is short of the whole model by less than its compute buffers) and
// its edges are `place`'s own arithmetic. The daemon's pricing (demandOf, policyInputs) and its
// devices (devicesToPlanOn) are called here as the daemon calls them, so the limit found is the one
// the daemon will act on; the middle of the window is chosen, away from both edges, since the
// cards' free memory moves a little between this probe and the daemon's.
import type { CatalogModel } from '../../core/catalog/catalog.js';
import { policyInputs } from '../../core/controller/policy-inputs.js';
import { ModelActivity } from '../../core/demand/activity.js';
import { demandOf, devicesToPlanOn } from '../../core/demand/desired-state.js';
import type { Budget } from '../../core/gpu/compute-budget.js';
import { place, type PlacedDesired } from '../../core/policy/place.js';
import type { Placement } from '../../core/contracts/plan.js';

/**
 * The policy's view of `modelId` alone wanted, priced as the daemon prices it with `runtimeBytes`
 * per engine process on a GPU, on an engine that splits by shares (llama-server) or not.
 */
export function desiredAlone(models: readonly CatalogModel[], modelId: string, runtimeBytes: number, splitsOverGpus: boolean): PlacedDesired[] {
  const activity = new ModelActivity({ now: () => 1, elapsed: () => 1 });
  activity.use(modelId);
  const sources = { isPinned: () => false, activity, inFlight: () => 0, runtimeBytes: () => runtimeBytes, splitsOverGpus: () => splitsOverGpus };
  const demands = new Map(models.map((model) => [model.id, demandOf(model, sources)]));
  return policyInputs({ demands, records: new Map(), running: [], loading: new Map() }).desired;
}

/** Grid steps between no room and room for the whole model on the largest card: under 1 MiB apart for the demo models. */
const STEPS = 4000;

/**
 * The limit, in bytes, at the middle of the widest range of limits under which `place` gives
 * `modelId` a placement of `kind` on `budget`'s GPUs, and that placement; null when no limit does
 * (one GPU cannot split; a model too small for a layer boundary cannot be partial). Pure.
 */
export function limitForcing(kind: Placement['kind'], desired: readonly PlacedDesired[], modelId: string, budget: Budget): { limitBytes: number; placement: Placement } | null {
  const entry = desired.find((d) => d.modelId === modelId);
  const machine = budget.perGpu.reduce((sum, gpu) => sum + gpu.budgetBytes, 0);
  const largest = Math.max(0, ...budget.perGpu.map((gpu) => gpu.budgetBytes));
  if (entry === undefined || budget.mode !== 'gpu' || largest <= 0) return null;
  const whole = entry.footprint + (entry.draft?.footprint ?? 0);
  // Above this limit the largest card holds the whole model, and every faster placement wins.
  const top = Math.min(machine, Math.ceil((machine * whole * 1.05) / largest));
  let best: { from: number; to: number } | null = null;
  let run: { from: number; to: number } | null = null;
  const kindAt = (step: number): { limitBytes: number; placement: Placement | undefined } => {
    const limitBytes = Math.floor((top * step) / STEPS);
    const devices = devicesToPlanOn({ ...budget, totalBytes: limitBytes, sampledAt: 0 });
    return { limitBytes, placement: place(desired, [], devices, budget.hostAvailableBytes).placements[modelId] };
  };
  for (let step = 1; step <= STEPS; step++) {
    if (kindAt(step).placement?.kind === kind) {
      run = run === null ? { from: step, to: step } : { from: run.from, to: step };
      if (best === null || run.to - run.from > best.to - best.from) best = run;
    } else run = null;
  }
  if (best === null) return null;
  const middle = kindAt(Math.round((best.from + best.to) / 2));
  return middle.placement === undefined ? null : { limitBytes: middle.limitBytes, placement: middle.placement };
}
