// Start-up step: the controller and what it reads: the desired state (pins, requests, idle TTLs,
// the budget) and the turns that group waiting requests by model. The turns ask the controller
// for rivals and the controller asks the turns what they hold: the cycle is a named Later.
import type { CatalogModel } from '../catalog/catalog.js';
import type { Catalog } from '../catalog/catalog.js';
import { realClock } from '../common/clock.js';
import { Controller, DEFAULT_HEALTHY_AFTER_MS } from '../controller/controller.js';
import type { Log } from '../controller/effects.js';
import { LaunchError } from '../engine/failure-classifier.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { LiveBudget } from '../gpu/live-budget.js';
import type { ModelActivity } from '../demand/activity.js';
import { DaemonDesiredState } from '../demand/desired-state.js';
import { Later } from './later.js';
import type { PinPolicy } from '../demand/model-actions.js';
import { ModelTurns } from '../demand/turns.js';

export interface ControlLoop {
  controller: Controller;
  desired: DaemonDesiredState;
  turns: ModelTurns;
}

export function makeControlLoop(deps: {
  catalog: Catalog;
  supervisor: Supervisor;
  budget: LiveBudget;
  budgetIntervalMs: number;
  activity: ModelActivity;
  pinPolicy: PinPolicy;
  keepsExpertsOnCpu: (model: CatalogModel) => boolean;
  runtimeBytes: (model: CatalogModel) => number;
  cpuOnly: () => boolean;
  /** What a warm spare holds or would, while the config allows one; null when it does not. */
  warmSpareBytes: () => number | null;
  /** Whether the model's engine splits it over GPUs by the plan's shares (llama-server does; the embedded engine cannot). */
  splitsOverGpus: (model: CatalogModel) => boolean;
  log: Log;
}): ControlLoop {
  const { catalog, supervisor, activity } = deps;
  // Asked only in passes and requests, after both exist.
  const controllerLater = new Later<Controller>('the controller');
  const turns = new ModelTurns({
    rivalsOf: (id) => controllerLater.get().yieldsTo(id),
    passSoon: () => controllerLater.get().trigger(),
    activity,
    inFlight: (id) => supervisor.inFlight(id),
    turnMs: catalog.config().swapTurnMs,
    clock: realClock,
  });
  const desired = new DaemonDesiredState({
    models: () => catalog.models(),
    heldForTurn: (id) => turns.holds(id),
    keepsExpertsOnCpu: deps.keepsExpertsOnCpu,
    splitsOverGpus: deps.splitsOverGpus,
    weightsOnCpu: deps.cpuOnly,
    isPinned: (model) => deps.pinPolicy.isPinned(model),
    activity,
    inFlight: (id) => supervisor.inFlight(id),
    runtimeBytes: deps.runtimeBytes,
    // Whether a spare fits is the controller's verdict, which it hands the supervisor (ServerControl.setSpareWanted).
    warmSpareBytes: deps.warmSpareBytes,
    // At most the running cadence old (and a half, so a pass at the end of a window does not probe again), though idle sampling is slower.
    budget: () => deps.budget.fresh(deps.budgetIntervalMs * 1.5),
  });
  const controller = controllerLater.set(
    new Controller({
      provider: desired,
      server: supervisor,
      classify: (error) => (error instanceof LaunchError ? error.kind : 'crash'),
      clock: realClock,
      log: deps.log,
      healthyAfterMs: () => catalog.config().healthyAfterMs ?? DEFAULT_HEALTHY_AFTER_MS,
    }),
  );
  return { controller, desired, turns };
}

/** Runs the controller's loop until the teardown, which stops it and waits for the pass under way. */
export function runControlLoop(controller: Controller): () => Promise<void> {
  const abort = new AbortController();
  const running = controller.run(abort.signal);
  return async () => {
    abort.abort();
    await running;
  };
}
