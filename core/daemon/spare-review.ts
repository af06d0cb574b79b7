// Start-up step: the warm spare's verdict (spare-room.ts), handed to the supervisor whenever
// something it depends on changes: a server, the plan, the budget, the config, the spare itself
// (its measured size may not fit where the expected one did).
//
// One step on purpose: the verdict is to become an output of the controller's pass, and this is
// the one place to swap for it.
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogModel } from '../catalog/catalog.js';
import type { Controller } from '../controller/controller.js';
import type { RuntimeOverhead } from '../engine/runtime-overhead.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { LiveBudget } from '../gpu/live-budget.js';
import { footprintAt } from '../policy/levels.js';
import { pricedEstimate } from './desired-state.js';
import { spareFits } from './spare-room.js';

export interface SpareReview {
  /** What the spare holds (measured once it runs, else the embedded engine's runtime); null while none runs. */
  spareBytes(): number | null;
  /** Looks again now. */
  review(): void;
  /** Stops looking. Idempotent. */
  close(): void;
}

export function reviewSpareOnChanges(deps: {
  catalog: Catalog;
  supervisor: Supervisor;
  controller: Controller;
  budget: LiveBudget;
  runtime: RuntimeOverhead;
  runtimeBytes: (model: CatalogModel) => number;
  cpuOnly: () => boolean;
  /** Subscribes to the spare's own changes; returns the unsubscribe. */
  onSpareChange: (listener: () => void) => () => void;
}): SpareReview {
  const { catalog, supervisor, controller, budget } = deps;
  const spareBytes = (): number => supervisor.spareStatus()?.residentBytes ?? deps.runtime.bytes('embedded', 'host');
  const heldBytes = (): number =>
    catalog.models().reduce((sum, model) => {
      const server = supervisor.status(model.id);
      if (server === null || server.phase === 'exited') return sum;
      const counted = controller.held(model.id);
      if (counted !== null) return sum + counted.bytes;
      const priced = pricedEstimate(model, deps.runtimeBytes(model), true, deps.cpuOnly());
      const footprint = priced === null ? null : footprintAt(server.level, priced);
      return sum + (footprint === null ? 0 : footprint.deviceBytes + footprint.hostBytes);
    }, 0);
  const review = (): void => {
    const sample = budget.current();
    supervisor.setSpareWanted(
      spareFits({ enabled: catalog.config().warmSpare, mode: sample?.mode ?? null, budgetBytes: sample?.totalBytes ?? 0, heldBytes: heldBytes(), spareBytes: spareBytes() }),
    );
  };
  const unsubscribes = [deps.onSpareChange(review), controller.onEvent(review), budget.onChange(review), catalog.onChanged(review), supervisor.subscribe(review)];
  return {
    spareBytes: () => (supervisor.spareStatus() === null ? null : spareBytes()),
    review,
    close: () => {
      for (const unsubscribe of unsubscribes.splice(0)) unsubscribe();
    },
  };
}
