// Everything the controller reads from or does to the world: its "syscall table".
//
// Why one small set of injected interfaces: the loop's behaviour (ordering, backoff, the
// recovery ladder, collapse of triggers) is what breaks, and it can only be tested exactly
// with a recording fake server and a clock the test steps. Production wires the catalog, the
// GPU probe, the router's counters and the engine supervisor behind these; the controller
// never learns about processes, HTTP or files.
import type { FailureKind } from '../policy/recover.js';
import type { FootprintEstimate, LaunchLevel } from '../policy/levels.js';

/** One catalog model as the desired-state provider sees it, read fresh on every pass. */
export interface ModelDemand {
  modelId: string;
  /** Higher is kept first under memory pressure. */
  priority: number;
  /** The person's persisted choice to keep it hot. Implies wanted. */
  pinned: boolean;
  /** Should be resident now: pinned, a request waiting or in flight, or used within its idle TTL. */
  wanted: boolean;
  /** Requests decoding now; above zero the policy treats it as active and never evicts it. */
  inFlight: number;
  /** Epoch ms of the last request; a waiting request stamps it, so on-demand swaps win ties. */
  lastUsed?: number;
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
  /** Free host RAM, bytes; a 'minimal' (CPU-only) launch must fit in it. */
  hostFreeBytes: number;
}

export interface DesiredProvider {
  /**
   * The desired state now. Called once at the start of every pass. Non-blocking in spirit (a
   * probe read, a few map lookups); idempotent. A rejection fails the pass, which backs off
   * and runs again: it means the world could not be read, never "want nothing".
   */
  read(): Promise<DesiredState>;
}

/** A model server running now. A pair with a draft is one server and one entry. */
export interface ResidentServer {
  modelId: string;
  level: LaunchLevel;
  /** What the process really holds on the device (measured where possible), bytes. */
  deviceBytes: number;
}

/** The controller's hands on the model servers; the engine supervisor implements it. */
export interface ServerControl {
  /**
   * The servers that are up and ready now. Called once at the start of every pass; cheap and
   * idempotent. A server still starting may be listed or not: the controller counts its own
   * launches in flight either way. A rejection fails the pass (backoff, then again).
   */
  resident(): Promise<ResidentServer[]>;
  /**
   * Starts the model at `level` and resolves once it is ready to serve. Blocks for the load
   * (seconds to minutes). Idempotent: a model already running or starting is not started
   * twice. Rejects when the server could not be made ready; the rejection goes to `Classify`
   * and its message becomes the model's lastError, so it should name the cause. When `signal`
   * aborts (the controller is stopping) it stops the start and rejects.
   */
  launch(modelId: string, level: LaunchLevel, signal: AbortSignal): Promise<void>;
  /**
   * Stops the model and resolves only when it is gone AND its device memory is back (the
   * next launch would otherwise OOM on memory the dying process still holds). Blocks up to
   * the stop grace plus the memory wait. Idempotent: an absent model resolves at once. A
   * rejection means it may still hold memory: the pass fails, launches wait, and the pass
   * runs again after a backoff.
   */
  evict(modelId: string): Promise<void>;
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
