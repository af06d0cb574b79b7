// The router's one window onto the rest of llmtray (core/router/model-gateway.ts), over the
// catalog (names), the controller (decisions), the supervisor (where a model listens, and the
// claims on it) and the activity (waiting requests, last use). Everything here runs on the
// request path: map lookups only, no I/O; the waits are on notifications, never polls.
//
// One source per fact: whether a model serves is whether the supervisor will let a request
// claim its server (ready, alive, not stopping), asked at the moment of the claim; whether it
// will come is the controller's decision. A wait ends at any change and simply asks both again.
//
// Turns (core/demand/turns.ts): a busy model stops taking new requests once a model it stands
// in the way of has waited its turn, so waiting requests are served grouped by model.
//
// Limits (core/demand/admission.ts): a model with `parallel` takes no claim past its slots, and a
// request that would wait past `queueLimit` is refused; a released slot wakes the waits.
import type { Catalog } from '../catalog/catalog.js';
import type { Controller } from '../controller/controller.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { EngineClaim, ModelGateway, RouterModelEntry } from '../router/model-gateway.js';
import type { ModelActivity } from './activity.js';
import type { ModelTurns } from './turns.js';
import { waitProgressOf } from './wait-progress.js';
import { queueFullOf, slotsFull } from './admission.js';
import { Emitter } from '../common/emitter.js';

export interface GatewayParts {
  /** Without `beingWritten`, a file still being written is a 404 like any unknown name. */
  catalog: Pick<Catalog, 'models' | 'resolve'> & Partial<Pick<Catalog, 'beingWritten'>>;
  controller: Pick<
    Controller,
    'status' | 'whyUnservable' | 'waitReason' | 'reconcileNow' | 'trigger' | 'refreshSoon' | 'servingModel' | 'onEvent' | 'hasStopped' | 'served' | 'definitionPending'
  >;
  supervisor: Pick<Supervisor, 'claim' | 'inFlight' | 'serverEnded' | 'status'>;
  activity: ModelActivity;
  /** When the daemon started, as the `created` of every model in /v1/models. */
  startedAt: number;
  /** Whose turn it is; told when a model's last request ends. */
  turns: Pick<ModelTurns, 'isOver' | 'idled'>;
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
  const waits = new Emitter<void>("the gateway's waits");
  const wakeAll = (): void => waits.fire();
  controller.onEvent(wakeAll);

  const turnIsOver = (serving: string): boolean => parts.turns.isOver(serving);
  const limitsOf = (modelId: string) => catalog.resolve(modelId)?.limits ?? {};
  /**
   * Claims that hold one of their serving model's slots, per model. Not the supervisor's count of
   * claims: a token count or a template rendered is answered beside the slots (takesSlot false),
   * and must neither take one nor wait for one.
   */
  const inSlots = new Map<string, number>();
  const slotsHeld = (serving: string): number => inSlots.get(serving) ?? 0;
  /** Every slot of the serving model holds a request: one more now would queue inside its engine. */
  const slotsTaken = (serving: string): boolean => slotsFull(limitsOf(serving), slotsHeld(serving));

  /**
   * The serving model turned busy or idle. With a request waiting for memory, a pass now: an
   * idle model may be what it waits for. Otherwise only its status shows it (ready or active),
   * and a pass soon is enough. No pass has to see a busy model in time: evictions never stop
   * a claimed server (the supervisor refuses), and every pass reads the claims afresh.
   */
  function turnedBusyOrIdle(): void {
    if (activity.anyWaiting()) controller.trigger();
    else controller.refreshSoon();
  }

  return {
    resolve(name) {
      const model = catalog.resolve(name);
      if (model === undefined) return undefined;
      return { modelId: model.id, embeddingsOnly: model.embeddings === undefined ? null : model.embeddings.modelPools ? 'pooling' : 'config' };
    },
    beingWritten(name) {
      const file = catalog.beingWritten?.(name);
      return file === undefined ? undefined : { modelId: file.id, path: file.path, sizeBytes: file.sizeBytes };
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
    waitReason(modelId) {
      const serving = controller.servingModel(modelId);
      if (!slotsTaken(serving)) return controller.waitReason(modelId);
      const { parallel } = limitsOf(serving);
      return `${serving} serves ${parallel === 1 ? '1 request' : `${parallel} requests`} at once (parallel), and every slot held one the whole time`;
    },
    waitProgress: (modelId) => waitProgressOf({ controller, supervisor, turnIsOver, slotsOf: (serving) => (slotsTaken(serving) ? limitsOf(serving).parallel : undefined), now }, modelId),
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
    admit(modelId) {
      const serving = controller.servingModel(modelId);
      return queueFullOf(modelId, limitsOf(modelId), slotsHeld(serving), activity.waitingCount(modelId));
    },
    claim(modelId, takesSlot): EngineClaim | null {
      const serving = controller.servingModel(modelId);
      // A server on its old definition takes no new request: it waits for the relaunch.
      if (turnIsOver(serving) || controller.definitionPending(serving) || (takesSlot && slotsTaken(serving))) return null;
      const claim = supervisor.claim(serving);
      if (claim === null) return null;
      if (takesSlot) inSlots.set(serving, slotsHeld(serving) + 1);
      // The requested model is stamped too while falling back, so its want (and its
      // fallback's) stays fresh.
      if (serving !== modelId) activity.use(modelId);
      activity.use(serving);
      if (supervisor.inFlight(serving) === 1) turnedBusyOrIdle();
      let released = false;
      // The engine's answer began: the proof of health a failing model's ladder waits for. Told
      // once per claim; progress comes with every chunk.
      let answered = false;
      return {
        servedBy: serving,
        endpoint: { baseUrl: `http://127.0.0.1:${claim.endpoint.port}`, apiKey: claim.endpoint.apiKey },
        anthropicMessages: claim.endpoint.anthropicMessages,
        engine: claim.endpoint.engine,
        toolCalls: claim.endpoint.toolCalls,
        lost: claim.lost,
        beforeChat: (body) => claim.beforeChat(body),
        progressed: () => {
          claim.progressed();
          if (answered) return;
          answered = true;
          controller.served(serving);
        },
        release: () => {
          if (released) return;
          released = true;
          claim.release();
          activity.use(serving);
          if (takesSlot) {
            const held = slotsHeld(serving) - 1;
            if (held > 0) inSlots.set(serving, held);
            else inSlots.delete(serving);
            // A slot came free: the request waiting longest for it takes it (the waits wake in the order they began).
            if (limitsOf(serving).parallel !== undefined) wakeAll();
          }
          if (supervisor.inFlight(serving) === 0) {
            parts.turns.idled(serving);
            turnedBusyOrIdle();
          }
        },
      };
    },
    nextChange(signal) {
      return new Promise((resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        if (controller.hasStopped()) return reject(new Error('llmtray is stopping, so no model will be loaded'));
        let stopListening = (): void => undefined;
        const done = (): void => {
          stopListening();
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
        stopListening = waits.event(wake);
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
