// The router's one window onto the rest of llmtray (core/router/model-gateway.ts), over the
// catalog (names), the controller (decisions), the supervisor (where a model listens, and the
// claims on it) and the activity (waiting requests, last use). Everything here runs on the
// request path: map lookups only, no I/O; the waits are on notifications, never polls.
//
// One source per fact: whether a model serves is whether the supervisor will let a request
// claim its server (ready, alive, not stopping), asked at the moment of the claim; whether it
// will come is the controller's decision. A wait ends at any change and simply asks both again.
//
// Turns: requests for several models that do not fit together are served a model at a time.
// A busy model keeps taking new requests until a model it stands in the way of (the
// controller's yieldsTo) has had a request waiting for `turnMs`; from then on new requests for
// the busy model wait too, so it drains, the waiting model is swapped in and serves everything
// that waited for it, and the requests that queued up meanwhile are served after it. That bounds
// every wait (no model starves) and makes each swap serve a group, not one request
// (A A B B, not A B A B) — the thrash protection the anchors' users ask for.
import type { Catalog } from '../catalog/catalog.js';
import type { Controller } from '../controller/controller.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { EngineClaim, ModelGateway, RouterModelEntry } from '../router/model-gateway.js';
import type { ModelActivity } from './activity.js';
import { waitProgressOf } from './wait-progress.js';

export interface GatewayParts {
  catalog: Pick<Catalog, 'models' | 'resolve'>;
  controller: Pick<
    Controller,
    'status' | 'whyUnservable' | 'waitReason' | 'reconcileNow' | 'trigger' | 'servingModel' | 'onEvent' | 'hasStopped' | 'yieldsTo'
  >;
  supervisor: Pick<Supervisor, 'claim' | 'inFlight' | 'serverEnded' | 'status'>;
  activity: ModelActivity;
  /** When the daemon started, as the `created` of every model in /v1/models. */
  startedAt: number;
  /**
   * How long a model that another one stands in the way of must have had a request waiting
   * before that other one stops taking new requests, ms. 0 ends a busy model's turn as soon as
   * anything waits for its memory (first come, first served across models).
   */
  turnMs: number;
  now?: () => number;
}

/**
 * How long a request whose engine refused or reset its connection waits for the supervisor to
 * see that engine's exit. A killed process's exit follows its sockets' close within
 * milliseconds; the bound is for an engine that reset one connection and lives on.
 */
export const ENGINE_END_WAIT_MS = 2_000;

export function createGateway(parts: GatewayParts): ModelGateway {
  const { catalog, controller, supervisor, activity } = parts;
  const now = parts.now ?? Date.now;
  const created = Math.floor(parts.startedAt / 1000);

  // Every wait ends at the next change: a controller event, or a change in who waits (a
  // request that gave up may end another model's claim on the turn).
  const wakers = new Set<() => void>();
  const wakeAll = (): void => {
    for (const wake of [...wakers]) wake();
  };
  controller.onEvent(wakeAll);

  /** Whether `serving` must let the models it stands in the way of go first now. */
  function turnIsOver(serving: string): boolean {
    const rivals = controller.yieldsTo(serving);
    if (rivals.length === 0) return false;
    const at = now();
    return rivals.some((rival) => {
      const since = activity.waitingSince(rival);
      return since !== undefined && at - since >= parts.turnMs;
    });
  }

  return {
    resolve(name) {
      const model = catalog.resolve(name);
      return model === undefined ? undefined : { modelId: model.id };
    },
    modelIds: () => catalog.models().map((m) => m.id),
    listModels(): RouterModelEntry[] {
      return catalog.models().map((model) => {
        const status = controller.status(model.id);
        const servedBy = controller.servingModel(model.id);
        return {
          id: model.id,
          object: 'model',
          created,
          owned_by: 'llmtray',
          aliases: model.aliases,
          state: status?.state ?? 'idle',
          level: status?.level ?? null,
          served_by: servedBy === model.id ? null : servedBy,
          reason: controller.whyUnservable(model.id)?.reason ?? status?.unschedulableReason ?? model.metadataError,
        };
      });
    },
    whyUnservable: (modelId) => controller.whyUnservable(modelId),
    waitReason: (modelId) => controller.waitReason(modelId),
    waitProgress: (modelId) => waitProgressOf({ controller, supervisor, turnIsOver, now }, modelId),
    reconcileNow: () => controller.reconcileNow(),
    demand(modelId) {
      activity.demand(modelId);
      controller.trigger();
    },
    wait(modelId) {
      const done = activity.wait(modelId);
      // A new waiter may be what a pass needs to see (its model becomes wanted, or outranks).
      controller.trigger();
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        done();
        wakeAll();
      };
    },
    claim(modelId): EngineClaim | null {
      const serving = controller.servingModel(modelId);
      if (turnIsOver(serving)) return null;
      const claim = supervisor.claim(serving);
      if (claim === null) return null;
      // The requested model is stamped too while falling back, so its want (and its
      // fallback's) stays fresh. A pass is asked for only when the serving model turns busy or
      // idle (its visible state moves between ready and active, and an idle one may now be
      // evicted for a model that waits), not on every request.
      if (serving !== modelId) activity.use(modelId);
      activity.use(serving);
      if (supervisor.inFlight(serving) === 1) controller.trigger();
      let released = false;
      return {
        servedBy: serving,
        endpoint: { baseUrl: `http://127.0.0.1:${claim.endpoint.port}`, apiKey: claim.endpoint.apiKey },
        anthropicMessages: claim.endpoint.anthropicMessages,
        lost: claim.lost,
        progressed: () => claim.progressed(),
        release: () => {
          if (released) return;
          released = true;
          claim.release();
          activity.use(serving);
          if (supervisor.inFlight(serving) === 0) controller.trigger();
        },
      };
    },
    nextChange(signal) {
      return new Promise((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        if (controller.hasStopped()) return reject(new Error('llmtray is stopping, so no model will be loaded'));
        const done = (): void => {
          wakers.delete(wake);
          signal.removeEventListener('abort', onAbort);
        };
        const wake = (): void => {
          done();
          if (!controller.hasStopped()) resolve();
          else reject(new Error('llmtray is stopping, so no model will be loaded'));
        };
        const onAbort = (): void => {
          done();
          reject(signal.reason);
        };
        wakers.add(wake);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    async engineUnreachable(servingModelId, endpoint, signal) {
      const port = Number(new URL(endpoint.baseUrl).port);
      const bound = AbortSignal.any([signal, AbortSignal.timeout(ENGINE_END_WAIT_MS)]);
      await supervisor.serverEnded(servingModelId, { port, apiKey: endpoint.apiKey }, bound);
    },
  };
}
