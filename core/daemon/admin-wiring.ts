// Start-up step: the admin service (the snapshot, the commands, the logs) behind the tray, the
// dashboard and the CLI, and what feeds its event stream: engine log lines, load progress, a lost
// terminal, the pulls' progress, and every part's "something changed".
import { AdminService, LogFeed, type PinStore } from '../admin/index.js';
import type { Catalog } from '../catalog/catalog.js';
import { realClock } from '../common/clock.js';
import type { GuardedOutputs } from '../common/guarded-output.js';
import type { Event } from '../common/emitter.js';
import type { Controller } from '../controller/controller.js';
import type { Log } from '../controller/effects.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { LiveBudget } from '../gpu/live-budget.js';
import type { ModelActivity } from '../demand/activity.js';
import type { PullManager } from '../pull/index.js';
import type { RequestLog } from '../demand/request-log.js';
import { feedLoadProgress } from './load-progress-feed.js';
import { createModelActions, type PinPolicy } from '../demand/model-actions.js';
import { buildSnapshot, type SnapshotParts } from './snapshot-builder.js';

export interface AdminWiring {
  admin: AdminService;
  /** Stops the feeds and the subscriptions, then closes the admin service. */
  close(): Promise<void>;
}

export function openAdmin(deps: {
  snapshot: SnapshotParts;
  catalog: Catalog;
  controller: Controller;
  supervisor: Supervisor;
  budget: LiveBudget;
  activity: ModelActivity;
  /** The requests served (the Activity view's records); each new one goes onto the event stream. */
  requests: RequestLog;
  pins: PinStore;
  pinPolicy: PinPolicy;
  wanted: (modelId: string) => boolean;
  outputs: GuardedOutputs;
  /** The pulls from the Hugging Face Hub: answered by the admin API, each change on the event stream. */
  pulls: PullManager;
  /** More parts whose change the snapshot shows (the warm spare, the measured figures, the saved conversations). */
  changeSources: readonly Event<void>[];
  log: Log;
}): AdminWiring {
  const { catalog, controller, supervisor, log } = deps;
  const admin = new AdminService({
    buildSnapshot: () => buildSnapshot(deps.snapshot),
    commands: createModelActions(
      {
        resolve: (id) => catalog.resolve(id),
        pins: deps.pins,
        activity: deps.activity,
        inFlight: (id) => supervisor.inFlight(id),
        controller,
        answersFor: (id) => catalog.models().filter((m) => m.id !== id && deps.wanted(m.id) && controller.servingModel(m.id) === id).map((m) => m.id),
      },
      deps.pinPolicy,
    ),
    logs: (id) => supervisor.logTail(id),
    activity: (filter) => ({ requests: deps.requests.list(filter), keep: deps.requests.keep, keepBodiesBytes: catalog.config().activity.keepBodiesBytes }),
    clock: realClock,
    warn: (message) => log.warn(message),
    pulls: deps.pulls,
  });
  const changed = (): void => admin.changed();
  // Every engine's log lines onto the event stream as they are written (batched, rate-limited per model).
  const logFeed = new LogFeed({ clock: realClock, publish: (event) => admin.publish(event) });
  const unsubscribes = [
    // A terminal or log file that went away is said once, on the snapshot (and on stderr when stdout went).
    deps.outputs.onLost((lost) => {
      log.warn(`the daemon's ${lost.stream} failed (${lost.code}: ${lost.message}); it is no longer written, serving goes on`);
      admin.changed();
    }),
    supervisor.onLog(({ modelId, line, position }) => logFeed.append(modelId, line, position)),
    // A loading engine's fraction onto the snapshot (the dashboard's card, the tray), at most twice a second, only while one changes.
    feedLoadProgress({ supervisor, changed, clock: realClock }),
    ...deps.changeSources.map((onDidChange) => onDidChange(changed)),
    controller.onEvent((event) => {
      admin.changed();
      if (event.type === 'ModelQuarantined') admin.publish({ type: 'ModelQuarantined', modelId: event.modelId, reason: event.reason, at: event.at });
      if (event.type === 'ModelFellBack') admin.publish({ type: 'ModelFellBack', modelId: event.modelId, fallbackId: event.fallbackId, reason: event.reason, at: event.at });
    }),
    deps.activity.onDidChange(changed),
    // A pull's state at once and its bytes at most once a second (the manager throttles), to every surface.
    deps.pulls.onDidChange((pull) => admin.publish({ type: 'PullProgressed', pull })),
    deps.requests.onRecorded((record) => admin.publish({ type: 'RequestRecorded', record })),
    deps.budget.onDidChange(changed),
    catalog.onDidChange(changed),
  ];
  return {
    admin,
    close: async () => {
      for (const unsubscribe of unsubscribes.splice(0).reverse()) unsubscribe();
      logFeed.close();
      await admin.close();
    },
  };
}
