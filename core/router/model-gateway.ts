// What the router needs from the rest of llmtray, and nothing more.
//
// The router knows that a request arrived for a model; the controller decides what runs, the
// supervisor knows where a running model listens, the catalog knows names. The router sees
// them only through this interface, which the daemon implements over the three. Why not
// import them: the router is the hot path and the part local apps touch, so it must be
// testable with real HTTP and a scripted gateway, without a controller loop or a GPU; and the
// controller must never learn HTTP.
//
// Every method is called on the request path, so every synchronous one must be cheap (a map
// lookup), and none may throw for an ordinary "no" — absence is `undefined` / `null`.
import type { OpenAIModel } from '../contracts/openai.js';
import type { ModelStateName } from '../contracts/model-status.js';
import type { LaunchLevel } from '../policy/levels.js';

// One definition of "this model will not come", shared with the controller that raises it.
import { ModelUnservableError, type Unservable, type UnservableCode } from '../contracts/controller-events.js';
export { ModelUnservableError, type Unservable, type UnservableCode };

/**
 * One entry of `GET /v1/models`: OpenAI's model object plus llmtray's own fields, in the
 * wire's snake_case. OpenAI clients ignore fields they do not know, so this stays compatible
 * with every SDK while telling a curious person what each model is doing.
 */
export interface RouterModelEntry extends OpenAIModel {
  aliases: string[];
  state: ModelStateName;
  /** The level it runs (or will launch) at; null while not resident. */
  level: LaunchLevel | null;
  /** While in fallback: the model that answers in its place; otherwise null. */
  served_by: string | null;
  /** Why it is quarantined or left out of the plan, as a sentence; otherwise null. */
  reason: string | null;
}

export interface ModelGateway {
  /**
   * The catalog id for a request's `model`: an id or an alias. Non-blocking, pure lookup.
   * `undefined` means no such model exists (the router answers 404).
   */
  resolve(name: string): { modelId: string } | undefined;

  /** Every catalog id, for the 404's message. Non-blocking, pure. */
  modelIds(): string[];

  /** Every catalog model with its state, for `GET /v1/models`. Non-blocking, pure. */
  listModels(): RouterModelEntry[];

  /**
   * Why the model will not come if asked now, from what the controller last decided:
   * quarantined (needs a person's retry), or left out of the last plan. `null` means it may
   * come. Non-blocking, pure. The unschedulable answer may be stale: the router calls
   * `reconcileNow()` and asks again before refusing with it; a quarantined answer is final.
   */
  whyUnservable(modelId: string): Unservable | null;

  /**
   * Runs (or joins) one fresh controller pass that sees every demand made before the call,
   * and resolves when it has decided. Blocks for one pass — not for a load. Idempotent:
   * concurrent callers may share one pass. Rejects only if the controller is stopped; the
   * router then refuses with what `whyUnservable` says.
   */
  reconcileNow(): Promise<void>;

  /**
   * Marks the model wanted now (lastUsed = now, a request waiting) and triggers the
   * controller. Non-blocking and idempotent: any number of concurrent demands for one cold
   * model start one load, never two (DESIGN's lesson from the anchors). Never throws.
   */
  demand(modelId: string): void;

  /**
   * Resolves when the model (or its fallback, while falling back) is ready to serve — when
   * `endpointFor` has an endpoint for it — by notification from the controller, not by
   * polling. Blocks until then. Rejects with
   * `ModelUnservableError` as soon as the model is quarantined or left out of a plan while it
   * waits, and with `signal.reason` when `signal` aborts (the router's bound, or the client
   * leaving). Idempotent; it does not itself ask for the model (that is `demand`).
   */
  waitUntilReady(modelId: string, signal: AbortSignal): Promise<void>;

  /**
   * The model that answers requests for `modelId`: itself, or its configured fallback while
   * the recovery ladder says fallback. Non-blocking, pure.
   */
  servingModel(modelId: string): string;

  /**
   * Where the serving model's engine listens while it is resident and ready, else
   * `undefined`. `baseUrl` is the engine's origin (`http://127.0.0.1:41234`): the router
   * appends the request's own `/v1/...` path. `apiKey` is the engine's per-launch key, which
   * only the router sends. Non-blocking, pure.
   */
  endpointFor(servingModelId: string): { baseUrl: string; apiKey: string } | undefined;

  /**
   * The engine at `endpoint` (as `endpointFor` gave it) refused or reset the router's
   * connection before answering. Resolves once the gateway knows whether that engine ended —
   * at once if it already knew, or if another engine serves the model now — so that the next
   * `endpointFor` and `waitUntilReady` no longer name a dead engine. Blocks for at most a
   * couple of seconds (an engine that reset one connection and lives on stays served), or
   * until `signal` aborts. Idempotent; never rejects.
   */
  engineUnreachable(servingModelId: string, endpoint: { baseUrl: string; apiKey: string }, signal: AbortSignal): Promise<void>;

  /**
   * Counts one request in flight for `modelId` (the requested id; while falling back the
   * gateway counts it on the process that answers) and stamps lastUsed: an active model is
   * never evicted. Returns the `finished` callback, which the router calls exactly once, when
   * the exchange ends for any reason (completed, engine error, client gone). Non-blocking.
   */
  requestStarted(modelId: string): () => void;
}
