// Whether the warm spare (core/engine/supervisor/warm-spare.ts) may be kept: the daemon's
// verdict, handed to the supervisor whenever something it depends on changes.
//
// The one real decision: the spare lives only in memory the plan leaves free, and is never
// subtracted from the budget the plan schedules against. Subtracting it would let an idle
// process push a model out: on the demo's budget (demo-chat plus half of demo-tiny) a 100 MiB
// spare beside demo-tiny would leave demo-chat unschedulable, though the spare is exactly the
// runtime demo-chat's launch would adopt. Instead it is given back first: a launch adopts it
// (its memory becomes that model's runtime, which the model's footprint already counts on the
// CPU) or ends it before spawning, and it is ended as soon as the room it sat in is gone.
//
// Only on the CPU: a spare starts a CPU backend (see core/engine/embedded/spare-mode.ts).
import type { BudgetMode } from '../gpu/compute-budget.js';

export interface SpareRoom {
  /** The config's `engines.warmSpare`. */
  enabled: boolean;
  /** The live budget's mode; null before the first sample. */
  mode: BudgetMode | null;
  /** The budget the plan schedules against, bytes. */
  budgetBytes: number;
  /** What every running server holds (as the plan counted it, else its priced estimate), bytes. */
  heldBytes: number;
  /** What the spare holds (measured once it runs), else what one is expected to: the embedded engine's runtime. */
  spareBytes: number;
}

/** True when a spare fits beside what runs now. Pure. */
export function spareFits(room: SpareRoom): boolean {
  return room.enabled && room.mode === 'cpu' && room.budgetBytes - room.heldBytes >= room.spareBytes;
}
