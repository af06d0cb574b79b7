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
import type { OpenAIModel } from '../contracts/protocols/openai.js';
import type { ModelStateName } from '../contracts/model-status.js';

// One definition of "this model will not come", shared with the controller that raises it.
import type { Unservable, UnservableCode } from '../contracts/controller-events.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { EngineKind } from '../contracts/snapshot.js';
import type { AbortNotice } from '../common/notice.js';
export type { Unservable, UnservableCode };

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

/** Why a claimed engine was given up on while answering: its client is told this. */
export interface EngineLost {
  kind: 'hang';
  reason: string;
}

/**
 * One request's hold on the engine that answers it: while held, that engine is counted busy
 * and is never stopped by an eviction (the supervisor checks at the moment of stopping).
 */
export interface EngineClaim {
  /** The model that answers: the requested one, or its fallback while falling back. */
  servedBy: string;
  /** The engine's origin (`http://127.0.0.1:41234`) and its per-launch key, which only the router sends. */
  endpoint: { baseUrl: string; apiKey: string };
  /**
   * The engine serves Anthropic's `/v1/messages` and `/v1/messages/count_tokens` itself (recent
   * llama-server builds; asked of the engine when it became ready): those requests go to it as
   * they are. False: the router translates them to chat completions (anthropic/route.ts).
   */
  anthropicMessages: boolean;
  /** Which engine answers: what it cannot honour is refused by name (openai/request-fields.ts). */
  engine: EngineKind;
  /** The engine can call tools; false for a llama-server build that renders only its built-in templates (no --jinja). */
  toolCalls: boolean;
  /** Aborts with an EngineLost when the engine is found hung, just before it is killed. */
  lost: AbortNotice;
  /** Bytes of the answer reached the client: progress, for hang detection. O(1). */
  progressed(): void;
  /** The exchange is over (completed, failed, client gone, or this try is resent). Idempotent. */
  release(): void;
  /**
   * Before a chat completion is forwarded: the engine's saved conversation sharing the prompt's
   * prefix is loaded, so the engine evaluates only the rest (a llama-server's saved slots; the
   * embedded engine restores its own). Absent, or resolving at once, where there is none. Never rejects.
   */
  beforeChat?(body: Record<string, unknown>): Promise<void>;
}

/**
 * What a request waiting for its model waits on at this moment, as facts the router words for a
 * streamed client's progress comments. `servedBy` is the model that will answer: the requested
 * one, or its fallback while it falls back.
 * - loading: its server is starting; `fraction` 0…1 from the engine's own load progress, or
 *   `estimated` from the time its last load took; null when there is no basis for either.
 * - memory: the plan keeps it out until busy or higher-ranked models make room (or they are
 *   being evicted for it).
 * - turn: it is loaded, but requests for models that waited longer go first (see claim).
 * - slot: it is serving as many requests as it has slots (`parallel`); the next to end frees one.
 * - stopping: its previous server is stopping (a relaunch at another level, an eviction).
 * - retry: its last launch failed (`failure`, the kind) and the recovery ladder tries again.
 * - queued: it is wanted and has not started loading yet.
 */
export type WaitProgress =
  | { kind: 'loading'; servedBy: string; fraction: number | null; estimated: boolean }
  | { kind: 'memory' | 'turn' | 'stopping' | 'queued'; servedBy: string }
  | { kind: 'slot'; servedBy: string; parallel: number }
  | { kind: 'retry'; servedBy: string; failure: string };

/**
 * A request refused at once because its model is at its limits (`parallel` and `queueLimit`,
 * contracts' ModelLimits): the facts the router words as a 429 with Retry-After.
 */
export interface QueueFull {
  modelId: string;
  /** Requests it serves at once; absent where unset (then its engine takes every claim, and only waiting requests count). */
  parallel?: number;
  /** How many more may wait for it. */
  queueLimit: number;
  /** Requests ahead of this one: served by its engine now (counted only with `parallel`)… */
  served: number;
  /** …and waiting for it (a load, room, a turn, a free slot). */
  waiting: number;
}

/**
 * Why a model only embeds: its GGUF names a pooling (an encoder such as bge or MiniLM), or its
 * config entry says `embeddings: true`. Null for a model that writes text.
 */
export type EmbeddingsOnly = 'pooling' | 'config';

/**
 * What Ollama's model routes tell of a model beyond its state (`/api/tags`, `/api/show`;
 * ollama/models.ts), read from the catalog and the model's GGUF header.
 */
export interface ModelCard {
  modelId: string;
  /** A pulled model's `hf.co/OWNER/REPO:QUANT` alias: Ollama's apps list it under the name they pulled. Absent for any other model. */
  hubName?: string;
  /** The model's files, bytes. */
  sizeBytes: number;
  /** When its file last changed, epoch ms. */
  modifiedAt: number;
  /** 64 hex digits naming this definition (its file's identity and launch settings): the same while it is unchanged. */
  digest: string;
  /** The context it launches with, tokens. */
  contextTokens: number;
  /** It has a vision projector (an mmproj file). */
  vision: boolean;
  /** It only embeds (see EmbeddingsOnly). */
  embeddingsOnly: boolean;
  /** The file's header as Ollama quotes it (core/catalog/gguf-card.ts); null when it cannot be read. */
  gguf: {
    architecture: string;
    /** general.file_type's name without llama.cpp's MOSTLY_ ("Q4_K_M", "F16"); null when absent. */
    fileType: string | null;
    /** Every tensor's elements added up. */
    parameterCount: number;
    /** The header's keys: 64-bit integers as numbers, arrays as null unless `verbose`. */
    metadata: Record<string, unknown>;
    /** tokenizer.chat_template (a Jinja template); null when the model has none. */
    chatTemplate: string | null;
  } | null;
}

/** A resident model as Ollama's `/api/ps` tells it. */
export interface ResidentModel {
  modelId: string;
  sizeBytes: number;
  /** What it holds on the GPUs now (measured, else estimated at its level), bytes. */
  deviceBytes: number;
  /** When its idle TTL runs out from its last use, epoch ms; null when nothing will unload it (pinned, busy). */
  expiresAt: number | null;
  contextTokens: number;
}

export interface ModelGateway {
  /**
   * The catalog id for a request's `model`: an id or an alias. Non-blocking, pure lookup.
   * `undefined` means no such model exists (the router answers 404).
   */
  resolve(name: string): { modelId: string; embeddingsOnly: EmbeddingsOnly | null } | undefined;

  /**
   * The file still being written that `name` will mean once it stops growing (a download under
   * way), for a 503 instead of the 404; undefined when none. Optional: without it every unknown
   * name is a 404. Non-blocking, pure.
   */
  beingWritten?(name: string): { modelId: string; path: string; sizeBytes: number } | undefined;

  /**
   * What a request's translation must know of a model (Ollama's API: whether images can be
   * carried, the context `num_ctx` is checked against); undefined for an unknown id. Optional:
   * without it Ollama's generation routes answer 501. Non-blocking, pure.
   */
  modelFacts?(modelId: string): { vision: boolean; contextTokens: number } | undefined;

  /**
   * The model's card for Ollama's `/api/tags` and `/api/show`; undefined for an unknown id.
   * Reads the GGUF header (cached by file identity): blocks on file I/O, never rejects.
   */
  describe?(modelId: string, options: { verbose: boolean }): Promise<ModelCard | undefined>;

  /** The resident models, for Ollama's `/api/ps`. Non-blocking, pure. */
  residents?(): ResidentModel[];

  /**
   * Ollama's `keep_alive`: the model's idle TTL from now on, ms (Infinity: for ever; 0: unload
   * once unused). A pin outlasts any TTL. Non-blocking, idempotent.
   */
  keepAlive?(modelId: string, ttlMs: number): void;

  /** Whether a person pinned the model (an unload asked by an app does not lift a pin). Non-blocking, pure. */
  isPinned?(modelId: string): boolean;

  /** Every catalog id, for the 404's message. Non-blocking, pure. */
  modelIds(): string[];

  /** Every catalog model with its state, for `GET /v1/models`. Non-blocking, pure. */
  listModels(): RouterModelEntry[];

  /**
   * Why the model will not come if asked now, from what the controller last decided:
   * quarantined (needs a person's retry), or unschedulable in the strict sense (it cannot fit
   * even with every evictable model gone). `null` means it may come, perhaps after room is
   * made: the request waits. Non-blocking, pure. The unschedulable answer may be stale: the
   * router calls `reconcileNow()` and asks again before refusing with it; a quarantined answer
   * is final.
   */
  whyUnservable(modelId: string): Unservable | null;

  /**
   * Why the model is not serving yet, as a sentence, for a request that waited out its bound
   * ("it is waiting for memory: needs 105 MiB; … held by active demo-tiny"). Non-blocking, pure.
   */
  waitReason(modelId: string): string;

  /**
   * What a request for the model waits on now, for the progress comments a streamed request
   * gets while it waits. Optional: without it the comments say only how long it has waited.
   * Non-blocking, pure.
   */
  waitProgress?(modelId: string): WaitProgress;

  /**
   * Runs (or joins) one fresh controller pass that sees every demand made before the call,
   * and resolves when it has decided. Blocks for one pass — not for a load. Idempotent:
   * concurrent callers may share one pass. Rejects only if the controller is stopped; the
   * router then refuses with what `whyUnservable` says.
   */
  reconcileNow(): Promise<void>;

  /**
   * Marks the model wanted now (lastUsed = now) and triggers the controller. Non-blocking and
   * idempotent: any number of concurrent demands for one cold model start one load, never two
   * (DESIGN's lesson from the anchors). Never throws.
   */
  demand(modelId: string): void;

  /**
   * A request starts waiting for the model: it is wanted while it waits, and its arrival
   * orders it among waiting requests (a model at a time, in the order they came). Returns the
   * callback that ends the wait, which is idempotent. Non-blocking.
   */
  wait(modelId: string): () => void;

  /**
   * For a request that takes a slot and is about to wait for the model (it could not claim it
   * at once): the refusal when the model is at its limits, null when the request may wait. Served
   * and waiting are counted at the call, and `wait` that follows in the same tick counts this
   * request, so concurrent requests are admitted one by one. Non-blocking, pure.
   */
  admit(modelId: string): QueueFull | null;

  /**
   * Claims the engine that answers for `modelId` for one request, counted in flight from this
   * moment: synchronous from look-up to count, so no eviction can stop that engine in between.
   * Null when it is not ready (not resident, loading, stopping, dead), when the request takes a
   * slot (`takesSlot`, ModelRequest's) and every slot it has (`parallel`) holds one — llmtray
   * keeps the queue, so its engine never holds more — or
   * when it is busy but its turn is over: another model has waited longer than the turn allows
   * for the memory it holds, so new requests wait while it drains. Non-blocking.
   */
  claim(modelId: string, takesSlot: boolean): EngineClaim | null;

  /**
   * Resolves at the next change that may turn a wait into a claim or a refusal (any controller
   * event, or the end of another model's turn), by notification, never by polling. Rejects with
   * `signal.reason` when `signal` aborts, and with an Error when the controller has stopped
   * (nothing will be loaded any more).
   */
  nextChange(signal: AbortSignal): Promise<void>;

  /**
   * The engine at `endpoint` refused or reset the router's connection before answering.
   * Resolves once the gateway knows whether that engine ended — at once if it already knew, or
   * if another engine serves the model now — so that the next claim no longer names a dead
   * engine. Blocks for at most a couple of seconds (an engine that reset one connection and
   * lives on stays served), or until `signal` aborts. Idempotent; never rejects.
   */
  engineUnreachable(servingModelId: string, endpoint: { baseUrl: string; apiKey: string }, signal: AbortSignal): Promise<void>;
}
