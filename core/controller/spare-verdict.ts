// Whether the warm spare (core/engine/supervisor/warm-spare.ts) may be kept: an answer of the
// controller's read model, handed to the server control after every pass's reading of the world
// and every lifecycle event (ServerControl.setSpareWanted).
//
// The one real decision: the spare lives only in memory the plan leaves free, and is never
// subtracted from the budget the plan schedules against. Subtracting it would let an idle
// process push a model out: on the demo's budget (demo-chat plus half of demo-tiny) a 100 MiB
// spare beside demo-tiny would leave demo-chat unschedulable, though the spare is exactly the
// runtime demo-chat's launch would adopt. Instead it is given back first: a launch adopts it
// (its memory becomes that model's runtime, which the model's footprint already counts on the
// CPU) or ends it before spawning, and it is ended as soon as the room it sat in is gone.
//
// Whether one may be kept at all (the config's `engines.warmSpare`, and only where the models'
// memory is host RAM: a spare starts a CPU backend, see core/engine/embedded/spare-mode.ts) is
// the desired state's `warmSpare`; what it costs and what is held are the pass's observation.
import type { MemoryObservation } from './memory-observation.js';
import type { Demands, Records } from './model-record.js';
import { heldBy } from './residents.js';

/** True when a spare of `spareBytes` fits in the budget beside `heldBytes`. Pure. */
export function spareFits(room: { budgetBytes: number; heldBytes: number; spareBytes: number }): boolean {
  return room.budgetBytes - room.heldBytes >= room.spareBytes;
}

/**
 * The verdict from the records as they are now and the last pass's observation: what every
 * running server holds (as the pass priced it; a launch in flight is not counted, since it
 * adopts the spare or ends it before it spawns). False before the first pass and where no
 * spare may be kept.
 */
export function spareWanted(records: Records, demands: Demands, memory: MemoryObservation | null): boolean {
  if (memory === null || memory.warmSpareBytes === null) return false;
  let heldBytes = 0;
  for (const record of records.values()) if (record.server !== null) heldBytes += heldBy(record, demands, memory.serverBytes)?.bytes ?? 0;
  return spareFits({ budgetBytes: memory.budgetBytes, heldBytes, spareBytes: memory.warmSpareBytes });
}
