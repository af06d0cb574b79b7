// One event source, for every part of core/ that tells others of a change: the catalog, the
// config, the activity, the supervisor's lifecycle, log and progress events, the runtime
// figures, the live budget, the controller. Before, ten hand-rolled listener sets disagreed on
// what a throwing listener does (caught and logged in one, "must not throw" in another, the rest
// of the listeners skipped in a third). The rule now, in one place: each listener is called in
// the order it subscribed, on a copy of the set (one that unsubscribes meanwhile does not skip
// another); a throw is caught and reported with the source's name; the others are still called.
//
// One convention for subscribing, VS Code's `base/common/event.ts`: a source's public
// subscription is a property `onX: Event<T>` (`catalog.onDidChange`, `supervisor.onLog`), a
// function that takes a listener of one argument and returns the unsubscribe. Where VS Code
// returns an `IDisposable`, this returns the function itself: every teardown here is one (the
// daemon's AsyncDisposableStore, a React effect's cleanup, the bridge's subscribe).

import { errorMessage } from '../contracts/error-message.js';

/** Undoes one subscription; idempotent. */
export type Unsubscribe = () => void;

/** A source's subscription: call it with a listener, get back the unsubscribe. */
export type Event<T> = (listener: (e: T) => void) => Unsubscribe;

/** What a source does with a listener's throw; default: a process warning naming the source. */
export type ListenerErrorReporter = (source: string, error: unknown) => void;

const warn: ListenerErrorReporter = (source, error) => process.emitWarning(`a listener of ${source} threw: ${errorMessage(error)}`);

export class Emitter<T> {
  private readonly listeners = new Set<(e: T) => void>();

  /** `source` names it in a report of a listener's throw. */
  constructor(
    private readonly source: string,
    private readonly report: ListenerErrorReporter = warn,
  ) {}

  /**
   * Subscribes; returns the unsubscribe (idempotent). The same function twice is one
   * subscription. O(1). Bound, so an owner hands it out as its `onX` as it is.
   */
  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  /** Calls every listener with `e`, synchronously; never throws (see the header). */
  fire(e: T): void {
    if (this.listeners.size === 0) return;
    for (const listener of [...this.listeners]) {
      try {
        listener(e);
      } catch (error) {
        try {
          this.report(this.source, error);
        } catch {
          // A reporter that throws must not cost the listeners after it their call.
        }
      }
    }
  }

  /** How many listen now. */
  get size(): number {
    return this.listeners.size;
  }
}
