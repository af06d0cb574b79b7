// The one service behind the tray, the dashboard and the CLI: the snapshot, the event stream
// and the commands. Transports (HTTP + SSE here, IPC in Electron) are thin and stateless over
// it, so every surface sees the same revision and validates commands the same way.
//
// Level-triggered like the controller: the daemon does not say *what* changed, it calls
// `changed()` and the service rebuilds the whole snapshot from its sources when it next sends.
// Why not diffs or per-field events: a client that missed one would drift, and the snapshot
// is small (tens of models); a full value per change is what lets the renderer's store be a
// plain replace.
import type { CommandResult, ModelCommand, ModelLogsResponse } from '../contracts/commands.js';
import type { AdminEvent } from '../contracts/admin-events.js';
import { AdminRefusal, type AdminArgs, type AdminParams } from '../contracts/admin-routes.js';
import type { DashboardBridge } from '../contracts/bridge.js';
import { findModelByName } from '../contracts/model-names.js';
import type { ModelView, Snapshot } from '../contracts/snapshot.js';
import type { LogTail } from '../contracts/log-lines.js';
import type { Clock } from '../common/clock.js';
import { PullRefused, type HubModelHit, type PullActions, type PullView, type RepoOffer } from '../contracts/hub/pulls.js';
import { errorMessage } from '../contracts/error-message.js';
import type { ActivityAnswer, RequestFilter } from '../contracts/requests/request-record.js';

/** Time as the service sees it: the shared injected clock (test/support's FakeClock fits). */
export type AdminClock = Clock;

/**
 * What each command does, implemented by the daemon over the controller and the pin store.
 * Called only with a canonical model id that exists in the current snapshot. Each may block
 * until its effect is recorded (a pin is on disk), not until a model has loaded. Resolving
 * `{ ok: false }` means the action declined and says why; a rejection is a failure
 * (reported as `action_failed`).
 */
export type ModelActions = Record<ModelCommand, (modelId: string) => Promise<CommandResult>>;

/** The discrete events the daemon publishes; snapshots come only from `changed()`. */
export type DiscreteAdminEvent = Exclude<AdminEvent, { type: 'SnapshotUpdated' }>;

export type AdminListener = (event: AdminEvent) => void;

export interface AdminServiceOptions {
  /** Assembles the current view from the daemon's parts. Synchronous, cheap, no side effects. */
  buildSnapshot: () => Omit<Snapshot, 'revision'>;
  commands: ModelActions;
  /** A model's recent server log, oldest first, with the position after it; undefined when it has none yet. Never blocks. */
  logs: (modelId: string) => LogTail | undefined;
  /** The requests held, newest first, that `filter` asks for (core/demand/request-log.ts). Never blocks. */
  activity: (filter: RequestFilter) => ActivityAnswer;
  clock: AdminClock;
  /** Least time between two SnapshotUpdated events, ms. Default 100. */
  throttleMs?: number;
  /** Told when a listener throws; the other listeners are still served. */
  warn?: (message: string) => void;
  /** The pulls from the Hugging Face Hub (core/pull's PullManager); absent, every pull call is refused (409) saying so. */
  pulls?: PullActions;
}

export const DEFAULT_SNAPSHOT_THROTTLE_MS = 100;

interface Subscriber {
  listener: AdminListener;
  /** The revision this subscriber saw last, so nobody is sent the same snapshot twice. */
  sentRevision: number;
}

export class AdminService implements DashboardBridge {
  private readonly options: AdminServiceOptions;
  private readonly throttleMs: number;
  private readonly subscribers = new Set<Subscriber>();
  private current: Snapshot | null = null;
  private revision = 0;
  private flushTimer: unknown = null;
  private lastFlushAt = Number.NEGATIVE_INFINITY;

  constructor(options: AdminServiceOptions) {
    this.options = options;
    this.throttleMs = options.throttleMs ?? DEFAULT_SNAPSHOT_THROTTLE_MS;
  }

  /**
   * The current snapshot, built fresh. Its revision grows by one whenever the content differs
   * from the last one built (the budget's `sampledAt` aside, which moves on every probe and
   * would otherwise make every snapshot "new"). Never blocks; throws only if the builder does.
   */
  snapshot(): Snapshot {
    const built = this.options.buildSnapshot();
    if (this.current !== null && sameContent(built, this.current)) {
      return { ...built, revision: this.current.revision };
    }
    this.revision += 1;
    this.current = { ...built, revision: this.revision };
    return this.current;
  }

  /** The route table's getSnapshot: snapshot(), for the transports. Never rejects. */
  async getSnapshot(): Promise<Snapshot> {
    return this.snapshot();
  }

  /**
   * Carries out a command for a model named by id or alias (found as the router finds it).
   * Never rejects: an unknown model or a throwing action resolves `{ ok: false }` with a
   * `code` and a sentence; an action that declines resolves its own `{ ok: false }` without
   * one. Whether it is idempotent is the action's business (pin and unpin are).
   */
  async runCommand({ id, command }: AdminParams<'runCommand'>): Promise<CommandResult> {
    const models = this.options.buildSnapshot().models;
    const model = findModelByName(models, id);
    if (model === undefined) return { ok: false, code: 'unknown_model', message: unknownModel(id, models) };
    let result: CommandResult;
    try {
      result = await this.options.commands[command](model.id);
    } catch (error) {
      result = {
        ok: false,
        code: 'action_failed',
        message: `${command} '${model.id}' failed: ${errorMessage(error)}`,
      };
    }
    // Whatever the action did is visible at once, not after the caller's next poll.
    this.changed();
    return result;
  }

  /**
   * A model's recent log lines (by id or alias), oldest first, with the position after them
   * (where its LogAppended batches continue): no lines at position 0 for a model that exists
   * but has not logged. Rejects with an AdminRefusal (404) listing the models for one that does
   * not exist. Never blocks.
   */
  async getLogs({ id }: AdminParams<'getLogs'>): Promise<ModelLogsResponse> {
    const models = this.options.buildSnapshot().models;
    const model = findModelByName(models, id);
    if (model === undefined) throw new AdminRefusal(404, 'unknown_model', unknownModel(id, models));
    const tail = this.options.logs(model.id);
    return { modelId: model.id, lines: [...(tail?.lines ?? [])], next: tail?.next ?? 0 };
  }

  /** The route table's startPull: blocks until the Hub has said which files the name means; a refusal is an AdminRefusal with the pull's sentence. */
  async startPull({ name }: AdminParams<'startPull'>): Promise<PullView> {
    return this.pullCall((pulls) => pulls.start(name));
  }

  /** Every pull of this run, newest first. Never blocks. */
  async listPulls(): Promise<PullView[]> {
    return this.options.pulls?.list() ?? [];
  }

  /** Stops a pull; resolves once it has stopped. */
  async cancelPull({ name }: AdminParams<'cancelPull'>): Promise<PullView> {
    return this.pullCall((pulls) => pulls.cancel(name));
  }

  /** Removes what a pull wrote. */
  async deletePull({ name }: AdminParams<'deletePull'>): Promise<{ removed: string[] }> {
    return this.pullCall((pulls) => pulls.remove(name));
  }

  /** The Hub's GGUF models matching a query; blocks on the Hub. */
  async searchHub({ query }: AdminParams<'searchHub'>): Promise<HubModelHit[]> {
    return this.pullCall((pulls) => pulls.search(query));
  }

  /** A repo's quants with how each would run here; blocks on the Hub (one header read). */
  async offerRepo({ repo }: AdminParams<'offerRepo'>): Promise<RepoOffer> {
    return this.pullCall((pulls) => pulls.offer(repo));
  }

  private async pullCall<T>(call: (pulls: PullActions) => Promise<T>): Promise<T> {
    const pulls = this.options.pulls;
    if (pulls === undefined) throw new AdminRefusal(409, 'no_pulls', 'This llmtray was started without pulls from the Hugging Face Hub.');
    try {
      return await call(pulls);
    } catch (error) {
      if (error instanceof PullRefused) throw new AdminRefusal(error.status, error.code, error.message);
      throw error;
    }
  }

  /**
   * The requests the daemon holds, newest first, filtered (any filter absent: any). A model
   * filter takes an alias as well as an id; one no model answers to is kept as typed (a request
   * for a name that did not exist is recorded under that name). Never rejects.
   */
  async getActivity(...[filters = {}]: AdminArgs<'getActivity'>): Promise<ActivityAnswer> {
    const filter: RequestFilter = {};
    if (filters.model !== undefined) filter.model = findModelByName(this.options.buildSnapshot().models, filters.model)?.id ?? filters.model;
    if (filters.status !== undefined) filter.status = filters.status;
    if (filters.client !== undefined) filter.client = filters.client;
    return this.options.activity(filter);
  }

  /**
   * Calls `listener` with a full SnapshotUpdated at once, then with every later change and
   * discrete event, in order, synchronously from `changed`'s timer and `publish`. Returns the
   * unsubscribe function (idempotent). A listener must not block; a throwing one is reported
   * through `warn` and kept. In process the stream is never lost: no `onConnection` calls.
   */
  subscribe(listener: AdminListener): () => void {
    const subscriber: Subscriber = { listener, sentRevision: 0 };
    this.subscribers.add(subscriber);
    const snapshot = this.snapshot();
    subscriber.sentRevision = snapshot.revision;
    this.deliver(subscriber, { type: 'SnapshotUpdated', snapshot });
    return () => {
      this.subscribers.delete(subscriber);
    };
  }

  /**
   * Says "something may have changed; look again". Never blocks, idempotent within a window:
   * a burst becomes one snapshot, at most one per `throttleMs`, and the last change of a burst
   * is always sent (the trailing edge: the snapshot is built when the timer fires, so it sees
   * everything that happened before). Even the first change waits for a timer turn (0 ms),
   * because the daemon calls this from inside other components' event handlers, where
   * rebuilding the snapshot synchronously would read them half-updated.
   */
  changed(): void {
    if (this.flushTimer !== null) return;
    const delay = Math.max(0, this.lastFlushAt + this.throttleMs - this.options.clock.elapsed());
    this.flushTimer = this.options.clock.setTimeout(() => this.flush(), delay);
  }

  /**
   * Sends a discrete event to every subscriber at once (not throttled: each is a fact a
   * person is told about, like a desktop notification). Never blocks. LogAppended comes
   * batched and rate-limited already (log-feed.ts), never one event per line.
   */
  publish(event: DiscreteAdminEvent): void {
    for (const subscriber of [...this.subscribers]) this.deliver(subscriber, event);
  }

  /** Cancels a pending snapshot and drops every subscriber. Idempotent; for shutdown. */
  close(): void {
    if (this.flushTimer !== null) this.options.clock.clearTimeout(this.flushTimer);
    this.flushTimer = null;
    this.subscribers.clear();
  }

  private flush(): void {
    this.flushTimer = null;
    this.lastFlushAt = this.options.clock.elapsed();
    if (this.subscribers.size === 0) return;
    const snapshot = this.snapshot();
    for (const subscriber of [...this.subscribers]) {
      if (subscriber.sentRevision === snapshot.revision) continue;
      subscriber.sentRevision = snapshot.revision;
      this.deliver(subscriber, { type: 'SnapshotUpdated', snapshot });
    }
  }

  private deliver(subscriber: Subscriber, event: AdminEvent): void {
    try {
      subscriber.listener(event);
    } catch (error) {
      this.options.warn?.(
        `An admin event listener threw on ${event.type}: ${errorMessage(error)}`,
      );
    }
  }
}

function unknownModel(name: string, models: readonly ModelView[]): string {
  const known = models.length === 0 ? 'no models are configured' : `the models are: ${models.map((m) => m.id).sort().join(', ')}`;
  return `Unknown model '${name}'; ${known}.`;
}

/** Whether two snapshots show the same thing: deep equality, ignoring revision and budget.sampledAt. */
function sameContent(a: Omit<Snapshot, 'revision'>, b: Snapshot): boolean {
  const { revision: _revision, ...rest } = b;
  return deepEqual(withoutSampleTime(a), withoutSampleTime(rest));
}

function withoutSampleTime(snapshot: Omit<Snapshot, 'revision'>): unknown {
  return { ...snapshot, budget: { ...snapshot.budget, sampledAt: 0 } };
}

/** Structural equality over JSON-like values (what a snapshot is), key order ignored. */
function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, index) => deepEqual(item, b[index]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left).filter((key) => left[key] !== undefined);
  const otherKeys = Object.keys(right).filter((key) => right[key] !== undefined);
  return keys.length === otherKeys.length && keys.every((key) => deepEqual(left[key], right[key]));
}
