// A one-shot "this has happened" for the request path: the part of AbortSignal's API that the
// router and the supervisor's claims use (`aborted`, `reason`, listeners for 'abort'), for a
// fraction of its cost.
//
// Why not AbortSignal itself: creating one costs ~5 µs in a tight loop and more in a busy
// server (an EventTarget, built and then given its prototype), and every request made two — one
// for its client leaving, one for its engine being lost. In a CPU profile of the daemon under
// one client, creating them was the largest single item of the router's own work per request
// (issue 14). Almost every request ends without either happening, so the work is paid for
// nothing. `signal` makes a real AbortSignal on demand, for the rare waits that need one.

/**
 * What a holder reads and listens to: satisfied by a Notice and by an AbortSignal alike, so a
 * caller (or a test) may pass either.
 */
export interface AbortNotice {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export class Notice implements AbortNotice {
  aborted = false;
  reason: unknown = undefined;
  /** Each listener runs once, at the abort; none is kept after it (AbortSignal's `once`, always). */
  private listeners: (() => void)[] | null = null;
  private controller: AbortController | null = null;

  addEventListener(_type: 'abort', listener: () => void): void {
    if (this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.listeners?.indexOf(listener) ?? -1;
    if (index >= 0) this.listeners?.splice(index, 1);
  }

  /**
   * Marks it happened and runs every listener, in the order added. Idempotent: the first reason
   * stays. A listener that throws does not stop the others; its error is rethrown on its own, as
   * an EventTarget reports one.
   */
  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason ?? new DOMException('This operation was aborted', 'AbortError');
    const listeners = this.listeners ?? [];
    this.listeners = null;
    for (const listener of listeners) {
      try {
        listener();
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    this.controller?.abort(this.reason);
  }

  /** A real AbortSignal that aborts with this notice (already aborted if it has), for APIs that take one. Made once, on first use. */
  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
}
