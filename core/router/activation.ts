// Gets a request a claimed engine, loading its model on demand, waiting for room that will be
// made, or says at once why not.
//
// The one real design decision in on-demand loading (from the reference router this ports):
// refusing a cold model makes the feature useless, since the first request for every model
// fails; waiting without a bound turns a request into a job that holds a client's socket for
// minutes. So a request waits, bounded (45 s by default), then is told to come back with
// Retry-After, with the reason it is still waiting. Only a model that will not come is refused
// at once: quarantined, or unschedulable in the strict sense (it cannot fit even if every model
// that may be evicted were gone). A model kept out only by models that are decoding, loading or
// stopping is waited for: that room will be made (seeds/001: "a model that fits once room is
// made is not refused on a stale answer"). Refusing it was what turned 84 of 200 requests of two
// clients alternating two models into 503s, for memory a request would free within milliseconds.
//
// The wait is level-triggered: every change (a controller event, another model's turn ending)
// only says "look again", and each look asks the gateway afresh whether the model is refused,
// or claimable now. A stale strict "left out" is not trusted: the request first asks the
// controller for one fresh pass that sees its demand, and refuses only with that pass's answer.
import type { AbortNotice } from '../common/notice.js';
import type { EngineClaim, ModelGateway, Unservable } from './model-gateway.js';
import { queueFull, type RouterError } from './http/errors.js';

export interface ActivationOptions {
  /** How long one request waits for its model, ms. */
  waitMs: number;
  /** What the 503 past the wait tells the client, seconds. */
  retryAfterSeconds: number;
}

export type Activation =
  | { kind: 'ready'; claim: EngineClaim }
  | { kind: 'refused'; error: RouterError }
  | { kind: 'client_gone' };

/**
 * Resolves once the request holds an engine, must be refused, or its client left. Never rejects.
 * `onWaiting` is called once, synchronously, when the request starts to wait (its model is not
 * claimable and not refused): where a streamed request's progress comments begin. `takesSlot`
 * false (a token count): it neither waits for a free slot nor counts against the model's limits.
 */
export async function activate(
  gateway: ModelGateway,
  modelId: string,
  clientGone: AbortNotice,
  options: ActivationOptions,
  onWaiting: () => void = () => {},
  takesSlot = true,
): Promise<Activation> {
  const known = gateway.whyUnservable(modelId);
  if (known?.code === 'model_quarantined') return refuse(modelId, known);
  if (known === null) {
    const hot = gateway.claim(modelId, takesSlot);
    if (hot !== null) return { kind: 'ready', claim: hot };
  }
  // It would wait: past its model's limits it is refused now. Admission and `wait` below run in
  // one tick, so requests arriving together are counted one by one.
  const full = takesSlot ? gateway.admit(modelId) : null;
  if (full !== null) return { kind: 'refused', error: queueFull(full) };

  gateway.demand(modelId);
  const waiting = gateway.wait(modelId);
  const bound = new AbortController();
  const timer = setTimeout(() => bound.abort('activation_timeout'), options.waitMs);
  const onClientGone = (): void => bound.abort('client_gone');
  clientGone.addEventListener('abort', onClientGone, { once: true });
  try {
    if (known !== null) {
      await untilSettledOrAborted(gateway.reconcileNow(), bound.signal);
      if (bound.signal.aborted) return ended(bound.signal, gateway, modelId, options);
    }
    let toldWaiting = false;
    for (;;) {
      const why = gateway.whyUnservable(modelId);
      if (why !== null) return refuse(modelId, why);
      const claim = gateway.claim(modelId, takesSlot);
      if (claim !== null) return { kind: 'ready', claim };
      if (!toldWaiting) {
        toldWaiting = true;
        onWaiting();
      }
      try {
        await gateway.nextChange(bound.signal);
      } catch (error) {
        if (bound.signal.aborted) return ended(bound.signal, gateway, modelId, options);
        return {
          kind: 'refused',
          error: { status: 503, source: 'router', type: 'unavailable_error', code: 'model_unavailable', param: 'model', message: `Model '${modelId}' could not be made ready: ${(error as Error).message}` },
        };
      }
    }
  } finally {
    waiting();
    clearTimeout(timer);
    clientGone.removeEventListener('abort', onClientGone);
  }
}

function ended(signal: AbortSignal, gateway: ModelGateway, modelId: string, options: ActivationOptions): Activation {
  return signal.reason === 'client_gone' ? { kind: 'client_gone' } : tooSlow(modelId, options, gateway.waitReason(modelId));
}

function refuse(modelId: string, why: Unservable): Activation {
  if (why.code === 'model_environment_failure') {
    const retryAfter = why.retryAfterSeconds ?? 1;
    return unavailable(
      why.code,
      `Model '${modelId}' cannot be loaded now, for a reason of this machine, not of the model: ${why.reason}. llmtray keeps trying it and serves it once that is fixed; retry in ${retryAfter} s.`,
      { 'retry-after': String(retryAfter) },
    );
  }
  const message =
    why.code === 'model_quarantined'
      ? `Model '${modelId}' is quarantined and will not be loaded until it is retried (tray, dashboard or \`llmtray retry ${modelId}\`): ${why.reason}`
      : `Model '${modelId}' cannot be loaded even with every other model unloaded: ${why.reason}`;
  // x-should-retry: OpenAI's SDKs retry every 5xx unless told not to; retrying cannot help here.
  return unavailable(why.code, message, { 'x-should-retry': 'false' });
}

function tooSlow(modelId: string, options: ActivationOptions, reason: string): Activation {
  const waited = (options.waitMs / 1000).toFixed(options.waitMs % 1000 === 0 ? 0 : 1);
  return unavailable(
    'model_loading',
    `Model '${modelId}' is not ready after ${waited} s: ${reason}. It is still coming; retry in ${options.retryAfterSeconds} s.`,
    { 'retry-after': String(options.retryAfterSeconds) },
  );
}

/** The router's 503 for a model that is not served now, with the headers that say whether and when to come back. */
function unavailable(code: string, message: string, headers: Record<string, string>): Activation {
  return { kind: 'refused', error: { status: 503, source: 'router', type: 'unavailable_error', code, param: 'model', message, headers } };
}

/** Waits for `work` (ignoring its failure: the caller asks the gateway what it decided) or the abort. */
function untilSettledOrAborted(work: Promise<void>, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
    work.then(() => resolve(), () => resolve());
  });
}
