// A ModelGateway with one model that is always ready at a fixed engine: what the router sees
// when the model is hot, with the controller, catalog and supervisor taken out. Benchmarking
// the router through it measures the router's own cost per request and nothing else — every
// method is the constant-time answer the daemon's gateway gives for a resident model.
import type { ModelGateway, RouterModelEntry } from '../../core/router/model-gateway.js';

export interface FixedEngine {
  modelId: string;
  /** The engine's origin, e.g. `http://127.0.0.1:41234`. */
  baseUrl: string;
  apiKey: string;
}

export function fixedGateway(engine: FixedEngine): ModelGateway {
  const entry: RouterModelEntry = {
    id: engine.modelId,
    object: 'model',
    created: 0,
    owned_by: 'llmtray',
    aliases: [],
    state: 'ready',
    level: 'full',
    served_by: null,
    reason: null,
  };
  const endpoint = { baseUrl: engine.baseUrl, apiKey: engine.apiKey };
  return {
    resolve: (name) => (name === engine.modelId ? { modelId: engine.modelId } : undefined),
    modelIds: () => [engine.modelId],
    listModels: () => [entry],
    whyUnservable: () => null,
    reconcileNow: () => Promise.resolve(),
    demand: () => {},
    waitUntilReady: () => Promise.resolve(),
    servingModel: (modelId) => modelId,
    endpointFor: (servingModelId) => (servingModelId === engine.modelId ? endpoint : undefined),
    // The daemon's bookkeeping here (activity counters, a controller trigger) is the daemon's
    // cost, not the router's; the activation benchmark covers the whole daemon.
    requestStarted: () => () => {},
    // The benchmark's engine never dies; a failed forward is the benchmark's own failure.
    engineUnreachable: () => Promise.resolve(),
  };
}
