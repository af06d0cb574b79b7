// The router's one window onto the rest of llmtray (core/router/model-gateway.ts), over the
// catalog (names), the controller (decisions, readiness), the supervisor (where a model
// listens) and the activity counters (in flight, last use). Everything here runs on the
// request path: map lookups only, no I/O; the waits are on notifications, never polls.
//
// Two parts know whether an engine is up, and they learn of its death at different times: the
// supervisor the moment the process exits, the controller only once its output has drained
// (up to 250 ms later, so that the crash report carries llama.cpp's last lines). A model is
// served here only while both say it is up, and a wait for readiness ends only when both do.
import type { Catalog } from '../catalog/catalog.js';
import type { Controller } from '../controller/controller.js';
import type { ModelStateName } from '../contracts/model-status.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { ModelGateway, RouterModelEntry, Unservable } from '../router/model-gateway.js';
import type { ModelActivity } from './activity.js';

/** States in which a model's server takes requests. 'evicting' is not one: it is going away. */
const SERVING: ReadonlySet<ModelStateName> = new Set(['ready', 'active', 'degraded']);

export interface GatewayParts {
  catalog: Pick<Catalog, 'models' | 'resolve'>;
  controller: Pick<Controller, 'status' | 'whyUnservable' | 'reconcileNow' | 'trigger' | 'waitUntilReady' | 'servingModel' | 'onEvent'>;
  supervisor: Pick<Supervisor, 'endpointFor' | 'serverEnded'>;
  activity: ModelActivity;
  /** When the daemon started, as the `created` of every model in /v1/models. */
  startedAt: number;
}

/**
 * How long a request whose engine refused or reset its connection waits for the supervisor to
 * see that engine's exit. A killed process's exit follows its sockets' close within
 * milliseconds; the bound is for an engine that reset one connection and lives on.
 */
export const ENGINE_END_WAIT_MS = 2_000;

export function createGateway(parts: GatewayParts): ModelGateway {
  const { catalog, controller, supervisor, activity } = parts;
  const created = Math.floor(parts.startedAt / 1000);

  function endpointFor(servingModelId: string): { baseUrl: string; apiKey: string } | undefined {
    const state = controller.status(servingModelId)?.state;
    if (state === undefined || !SERVING.has(state)) return undefined;
    const endpoint = supervisor.endpointFor(servingModelId);
    if (endpoint === null) return undefined;
    return { baseUrl: `http://127.0.0.1:${endpoint.port}`, apiKey: endpoint.apiKey };
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
        const why: Unservable | null = controller.whyUnservable(model.id);
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
          reason: why?.reason ?? model.metadataError,
        };
      });
    },
    whyUnservable: (modelId) => controller.whyUnservable(modelId),
    reconcileNow: () => controller.reconcileNow(),
    demand(modelId) {
      activity.demand(modelId);
      controller.trigger();
    },
    async waitUntilReady(modelId, signal) {
      const done = activity.wait(modelId);
      try {
        // The controller may still call a model ready whose engine the supervisor has seen
        // die: resolving then would send the request to the dead port, or spin the router's
        // re-checks. Its next event (the death reaching it, say) is the moment to look again.
        for (;;) {
          await controller.waitUntilReady(modelId, signal);
          if (endpointFor(controller.servingModel(modelId)) !== undefined) return;
          await nextEvent(controller, signal);
        }
      } finally {
        done();
      }
    },
    servingModel: (modelId) => controller.servingModel(modelId),
    endpointFor,
    async engineUnreachable(servingModelId, endpoint, signal) {
      const port = Number(new URL(endpoint.baseUrl).port);
      const bound = AbortSignal.any([signal, AbortSignal.timeout(ENGINE_END_WAIT_MS)]);
      await supervisor.serverEnded(servingModelId, { port, apiKey: endpoint.apiKey }, bound);
    },
    requestStarted(modelId) {
      // Counted on the process that answers: while falling back that is the fallback, and it
      // is the one that must not be evicted mid-answer. The requested model is stamped too,
      // so its want (and its fallback's) stays fresh. A pass is asked for only when the model
      // turns busy or idle (its visible state moves between ready and active, and an idle one
      // may now be evicted for a model that waits), not on every request: every pass reads the
      // counts afresh anyway, and the request path should not schedule work per request.
      const serving = controller.servingModel(modelId);
      if (serving !== modelId) activity.use(modelId);
      const finishedOnServing = activity.begin(serving);
      if (activity.inFlight(serving) === 1) controller.trigger();
      return () => {
        finishedOnServing();
        if (activity.inFlight(serving) === 0) controller.trigger();
      };
    },
  };
}

/** Resolves at the controller's next event; rejects with `signal.reason` if it aborts first. */
function nextEvent(controller: Pick<Controller, 'onEvent'>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      unsubscribe();
      reject(signal.reason);
    };
    const unsubscribe = controller.onEvent(() => {
      unsubscribe();
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
