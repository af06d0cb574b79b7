// Everything the controller reads from or does to the world: its "syscall table".
//
// Why one small set of injected interfaces: the loop's behaviour (ordering, backoff, the
// recovery ladder, collapse of triggers) is what breaks, and it can only be tested exactly
// with a recording fake server and a clock the test steps. Production wires the catalog, the
// GPU probe, the router's counters and the engine supervisor behind these; the controller
// never learns about processes, HTTP or files.
import type { FootprintEstimate } from '../policy/levels.js';
import type { ServerEvent } from '../contracts/server-events.js';
import type { Event } from '../common/emitter.js';
import type { Device } from '../policy/place.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { Placement } from '../contracts/plan.js';
import type { FailureKind } from '../contracts/recovery.js';
import type { EvictOutcome } from '../contracts/evict-outcome.js';

/** One catalog model as the desired-state provider sees it, read fresh on every pass. */
export interface ModelDemand {
  modelId: string;
  /** Higher is kept first under memory pressure. */
  priority: number;
  /** The person's persisted choice to keep it hot. Implies wanted. */
  pinned: boolean;
  /** Should be resident now: pinned, a request waiting or in flight, or used within its idle TTL. */
  wanted: boolean;
  /** Requests decoding now; above zero the policy treats it as in use and never evicts it. */
  inFlight: number;
  /**
   * Its turn holds it though idle: it served a request moments ago and its client is likely to
   * send the next (core/demand/turns.ts). The policy treats it as in use, as while it decodes.
   */
  heldForTurn?: boolean;
  /** The last request, on the clock's elapsed() (an order, so not the wall clock); a waiting request stamps it, so on-demand swaps win ties. */
  lastUsed?: number;
  /** When its oldest request still waiting for it arrived, on the clock's elapsed(); absent when none waits. */
  waitingSince?: number;
  /**
   * What it costs, draft included. The controller prices it with the policy's footprintAt at
   * the level it will launch, the same function the engine uses for `-c`/`-ngl`, so the plan
   * and the launch cannot disagree. The catalog raises it when a measurement says more.
   */
  estimate: FootprintEstimate;
  /** The draft's catalog id when `estimate.draft` is set; only a label for plans and reasons. */
  draftId?: string;
  /** The smaller model that answers in its place when the recovery ladder says fallback. */
  fallbackId?: string;
  /** Its config allows a layer split across GPUs of different classes. */
  mixedSplit?: boolean;
  /**
   * Its engine runs a model on one GPU at most (the embedded engine: node-llama-cpp 3.21 takes
   * no tensorSplit, so a split would run by llama.cpp's own shares, not the plan's).
   */
  oneGpu?: boolean;
  /**
   * Changes whenever the definition changes (path, size, mtime, context, arguments). A change
   * lifts quarantine and fallback: the person fixed something, so the ladder starts over.
   */
  definitionHash: string;
}

export interface DesiredState {
  models: ModelDemand[];
  /** The live device-memory budget, bytes: what the GPU probe leaves after other programs and the reserve. */
  budgetBytes: number;
  /**
   * The GPUs models are placed on, each its own budget (their sum is budgetBytes). Absent: one
   * pool of budgetBytes (CPU mode, unified memory, a single GPU).
   */
  devices?: Device[];
  /** Free host RAM, bytes; a 'minimal' (CPU-only) launch must fit in it. */
  hostFreeBytes: number;
  /**
   * A warm spare engine may be kept here (the config allows one, and the models' memory is host
   * RAM, where a spare's CPU backend runs), holding `bytes` (measured once it runs, else what one
   * is expected to). Absent: none may. Whether one fits is the controller's verdict (spare-verdict.ts).
   */
  warmSpare?: { bytes: number };
}

export interface DesiredProvider {
  /**
   * The desired state now. Called once at the start of every pass. Non-blocking in spirit (a
   * probe read, a few map lookups); idempotent. A rejection fails the pass, which backs off
   * and runs again: it means the world could not be read, never "want nothing".
   */
  read(): Promise<DesiredState>;
}

/** A model server running now, as the controller's records say. A pair with a draft is one server and one entry. */
export interface ResidentServer {
  modelId: string;
  level: LaunchLevel;
  /** What the process really holds on the device (measured where possible), bytes. */
  deviceBytes: number;
  /** Where it runs, as its launch was placed; absent: all on the first device. */
  placement?: Placement;
}

/** The controller's hands on the model servers; the engine supervisor implements it. */
export interface ServerControl {
  /**
   * Every server's lifecycle events (core/contracts/server-events.ts), in order per model,
   * delivered synchronously. The controller subscribes once, before its first pass, and folds
   * them into its records: what is resident is what these events say, never a snapshot.
   */
  readonly onServerEvent: Event<ServerEvent>;
  /**
   * What each running server holds on the device now, bytes, by model id (measured where
   * possible, else estimated). Called once per pass to price the residents; may run a driver
   * query. A model missing from the answer is priced by its estimate. A rejection fails the
   * pass (backoff, then again).
   */
  measure(): Promise<ReadonlyMap<string, number>>;
  /**
   * Starts the model at `level`, where `placement` puts it (which GPUs, how many layers on
   * each, what stays in host RAM), and resolves once it is ready to serve. Blocks for the load
   * (seconds to minutes). Idempotent: a model already running or starting is not started
   * twice. Every failure is also reported once as a `ServerExited` event, before this
   * rejects; the controller counts the event, not the rejection. When `signal` aborts (the
   * controller is stopping) it stops the start and rejects.
   */
  launch(modelId: string, level: LaunchLevel, placement: Placement, signal: AbortSignal): Promise<void>;
  /**
   * Stops the model and resolves 'stopped' only when it is gone AND its device memory is back
   * (the next launch would otherwise OOM on memory the dying process still holds). Resolves
   * 'claimed', stopping nothing, when a request has claimed the ready server: checked at the
   * moment of stopping, so a claim made after the pass read the counts is still honoured; the
   * eviction waits for a later pass. Blocks up to the stop grace plus the memory wait.
   * Idempotent: an absent model resolves 'stopped' at once. A rejection means it may still
   * hold memory: the pass fails, launches wait, and the pass runs again after a backoff.
   */
  evict(modelId: string): Promise<EvictOutcome>;
  /**
   * A hint, before the pass's evictions: `launch(modelId, level, placement)` will follow once
   * they have made room. The supervisor may start what of that launch holds none of the room
   * (the embedded engine's runtime on the CPU) so that it overlaps the evicted servers' exit.
   * Never blocks (what it returns is ignored), never throws; launch() behaves the same with or without it.
   */
  prepareLaunch?(modelId: string, level: LaunchLevel, placement: Placement): unknown;
  /**
   * Whether a warm spare may be kept now: the controller's verdict (spare-verdict.ts), said
   * again after every pass's reading of the world and every lifecycle event (level-triggered:
   * the same answer twice changes nothing). Never blocks, never throws. Absent: no spare.
   */
  setSpareWanted?(wanted: boolean): void;
}

/** Time as the controller sees it (the shared injected clock); tests step a fake one instead of sleeping. */
export type { Clock } from '../common/clock.js';

export type LogFields = Record<string, unknown>;

/** Where the controller says what it did and why. Never blocks; never throws. */
export interface Log {
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
}

/**
 * The failure kind behind a launch rejection (the engine's failure classifier). Pure and
 * total; 'none' is read as 'crash', since a rejected launch did fail.
 */
export type Classify = (error: unknown) => FailureKind;
