// Gets a request a ready engine, loading its model on demand, or says at once why not.
//
// The one real design decision in on-demand loading (from the reference router this ports):
// refusing a cold model makes the feature useless, since the first request for every model
// fails; waiting without a bound turns a request into a job that holds a client's socket for
// minutes. So a request waits, bounded (45 s by default), then is told to come back with
// Retry-After while the load goes on. And a model that will not come — quarantined, or left out
// of the plan — is refused at once with the reason, never "loading, retry", which clients
// retry forever.
//
// A stale "left out" must not refuse a model that would fit now (room is made when another
// model idles out): the request first asks the controller for one fresh pass that sees its
// demand, and refuses only with that pass's answer. A quarantine is final until a person acts,
// so it is refused without asking.
import { type ModelGateway, ModelUnservableError, type Unservable } from './model-gateway.js';
import type { RouterError } from './errors.js';

export interface ActivationOptions {
  /** How long one request waits for a cold model, ms. */
  waitMs: number;
  /** What the 503 past the wait tells the client, seconds. */
  retryAfterSeconds: number;
}

export type Activation =
  | { kind: 'ready'; servedBy: string; endpoint: { baseUrl: string; apiKey: string }; finished: () => void }
  | { kind: 'refused'; error: RouterError }
  | { kind: 'client_gone' };

/**
 * How many times a request that saw its model become ready goes back to waiting because the
 * model was gone again by the time it looked (evicted in between). Bounded so a gateway that
 * says "ready" without an endpoint cannot spin the event loop.
 */
const MAX_READY_RECHECKS = 3;

/** Resolves once the request may be forwarded, must be refused, or its client left. Never rejects. */
export async function activate(
  gateway: ModelGateway,
  modelId: string,
  clientGone: AbortSignal,
  options: ActivationOptions,
): Promise<Activation> {
  const known = gateway.whyUnservable(modelId);
  if (known?.code === 'model_quarantined') return refuse(modelId, known);
  const hot = claimEndpoint(gateway, modelId);
  if (hot !== undefined) return hot;

  gateway.demand(modelId);
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort('activation_timeout'), options.waitMs);
  const onClientGone = (): void => bound.abort('client_gone');
  clientGone.addEventListener('abort', onClientGone, { once: true });
  try {
    if (known !== null) {
      await untilSettledOrAborted(gateway.reconcileNow(), bound.signal);
      if (bound.signal.aborted) return ended(bound.signal, modelId, options);
      const fresh = gateway.whyUnservable(modelId);
      if (fresh !== null) return refuse(modelId, fresh);
    }
    for (let attempt = 0; attempt < MAX_READY_RECHECKS; attempt++) {
      try {
        await gateway.waitUntilReady(modelId, bound.signal);
      } catch (error) {
        if (error instanceof ModelUnservableError) return refuse(modelId, error);
        if (bound.signal.aborted) return ended(bound.signal, modelId, options);
        return {
          kind: 'refused',
          error: { status: 503, source: 'router', type: 'unavailable_error', code: 'model_unavailable', param: 'model', message: `Model '${modelId}' could not be made ready: ${(error as Error).message}` },
        };
      }
      const ready = claimEndpoint(gateway, modelId);
      if (ready !== undefined) return ready;
      gateway.demand(modelId);
    }
    return tooSlow(modelId, options, 'it became ready but was unloaded again before the request reached it');
  } finally {
    clearTimeout(timer);
    clientGone.removeEventListener('abort', onClientGone);
  }
}

/**
 * The serving model's endpoint with the request already counted in flight, or undefined when
 * it is not resident. Synchronous from look-up to count, so no controller pass can evict the
 * model between the two.
 */
function claimEndpoint(gateway: ModelGateway, modelId: string): Activation | undefined {
  const servedBy = gateway.servingModel(modelId);
  const endpoint = gateway.endpointFor(servedBy);
  if (endpoint === undefined) return undefined;
  return { kind: 'ready', servedBy, endpoint, finished: gateway.requestStarted(modelId) };
}

function ended(signal: AbortSignal, modelId: string, options: ActivationOptions): Activation {
  return signal.reason === 'client_gone' ? { kind: 'client_gone' } : tooSlow(modelId, options, 'it is still loading');
}

function refuse(modelId: string, why: Unservable): Activation {
  const message =
    why.code === 'model_quarantined'
      ? `Model '${modelId}' is quarantined and will not be loaded until it is retried (tray, dashboard or \`llmtray retry ${modelId}\`): ${why.reason}`
      : `Model '${modelId}' cannot be loaded now: ${why.reason}`;
  return {
    kind: 'refused',
    // x-should-retry: OpenAI's SDKs retry every 5xx unless told not to; retrying cannot help here.
    error: { status: 503, source: 'router', type: 'unavailable_error', code: why.code, param: 'model', message, headers: { 'x-should-retry': 'false' } },
  };
}

function tooSlow(modelId: string, options: ActivationOptions, what: string): Activation {
  const waited = (options.waitMs / 1000).toFixed(options.waitMs % 1000 === 0 ? 0 : 1);
  return {
    kind: 'refused',
    error: {
      status: 503,
      source: 'router',
      type: 'unavailable_error',
      code: 'model_loading',
      param: 'model',
      message: `Model '${modelId}' is not ready after ${waited} s (${what}); the load continues, retry in ${options.retryAfterSeconds} s.`,
      headers: { 'retry-after': String(options.retryAfterSeconds) },
    },
  };
}

/** Waits for `work` (ignoring its failure: the caller asks the gateway what it decided) or the abort. */
function untilSettledOrAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
    work.then(() => resolve(), () => resolve());
  });
}
