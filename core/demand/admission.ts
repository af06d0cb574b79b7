// Admission: how many requests a model serves at once and how many more may wait for it (config:
// `parallel`, `queueLimit`), decided where a request would start to wait.
//
// Why refuse at once instead of letting the request wait out activationWait: a batch job that
// sends a hundred requests to a model a chat window also uses would hold ninety-eight sockets for
// 45 s each and then hear 503 "still coming"; the person sharing the GPU asked for a bound, and a
// 429 with Retry-After now is what every client's retry logic reads (llama-swap's
// concurrencyLimit). Why llmtray keeps the queue and not the engine: a request queued inside
// llama-server is invisible (no wait reason, no progress comments, no place in the turns), and
// the engine's slots are what the plan priced the KV cache for.
//
// Pure: the counts are the caller's (the supervisor's claims, the activity's waiting requests).
import type { ModelLimits } from '../contracts/snapshot.js';
import type { QueueFull } from '../router/model-gateway.js';

/** Whether every slot the model has holds a request, so the next one waits. False without `parallel` (the engine's own slots take any number). */
export function slotsFull(limits: ModelLimits, served: number): boolean {
  return limits.parallel !== undefined && served >= limits.parallel;
}

/**
 * The refusal for one more request that would wait, or null when it may. With `parallel`,
 * `parallel + queueLimit` requests may be ahead of it, served or waiting (a cold model's first
 * `parallel` waiters are the ones it serves once loaded). Without it the engine takes every
 * claim, so only waiting requests count: the one the model serves next (the one its load is for)
 * and `queueLimit` more. Without `queueLimit`, any number wait, each bounded by activationWait.
 */
export function queueFullOf(modelId: string, limits: ModelLimits, served: number, waiting: number): QueueFull | null {
  const { parallel, queueLimit } = limits;
  if (queueLimit === undefined) return null;
  const counted = parallel === undefined ? 0 : served;
  if (counted + waiting < (parallel ?? 1) + queueLimit) return null;
  return { modelId, ...(parallel === undefined ? {} : { parallel }), queueLimit, served: counted, waiting };
}
