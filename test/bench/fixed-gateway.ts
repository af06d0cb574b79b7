// A ModelGateway with one model that is always ready at a fixed engine: what the router sees
// when the model is hot, with the controller, catalog and supervisor taken out. Benchmarking
// the router through it measures the router's own cost per request and nothing else — every
// method is the constant-time answer the daemon's gateway gives for a resident model.
import { setMaxListeners } from 'node:events';
import type { EngineClaim, ModelGateway, RouterModelEntry } from '../../core/router/model-gateway.js';

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
  // One claim serves every request: its endpoint is fixed and the benchmark's engine never
  // hangs, so `lost` never aborts. The daemon's bookkeeping on a claim (the supervisor's count,
  // activity stamps, a controller refresh) is the daemon's cost, not the router's; the
  // activation benchmark covers the whole daemon. The shared `lost` signal carries one listener
  // per request in flight, so 32 clients would pass Node's leak warning at 10.
  const lost = new AbortController().signal;
  setMaxListeners(0, lost);
  const claim: EngineClaim = {
    servedBy: engine.modelId,
    endpoint: { baseUrl: engine.baseUrl, apiKey: engine.apiKey },
    anthropicMessages: false,
    engine: 'llama-server',
    toolCalls: true,
    lost,
    progressed: () => {},
    release: () => {},
  };
  return {
    resolve: (name) => (name === engine.modelId ? { modelId: engine.modelId, embeddingsOnly: null } : undefined),
    modelIds: () => [engine.modelId],
    listModels: () => [entry],
    whyUnservable: () => null,
    waitReason: () => 'it is ready',
    reconcileNow: () => Promise.resolve(),
    demand: () => {},
    wait: () => () => {},
    // Always claimable: no request would wait, so none is counted against a limit.
    admit: () => null,
    claim: (modelId) => (modelId === engine.modelId ? claim : null),
    // The model is always claimable, so no request waits for a change; nothing ever changes.
    nextChange: (signal) =>
      new Promise((_resolve, reject) => {
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      }),
    // The benchmark's engine never dies; a failed forward is the benchmark's own failure.
    engineUnreachable: () => Promise.resolve(),
  };
}
