// The work queue of a single key: "look again".
//
// Modelled on client-go's workqueue with its dirty and processing sets, reduced to one key
// because a pass reconciles every model at once. Why: level-triggered reconciling means a
// trigger carries no data, only "something changed"; so any number of triggers before a pass
// starts are one pass, a trigger while a pass runs is exactly one more pass after it, and a
// pass never runs concurrently with itself (two passes would both launch the same model).

export class PassLoop {
  private dirty = false;
  private draining: Promise<void> | null = null;
  private running = false;
  /** Number of passes started so far; a pass's sequence number is the count after it started. */
  private started = 0;
  private waiters: { after: number; resolve: () => void; reject: (error: Error) => void }[] = [];

  /** `pass` must not throw: the controller turns its failures into a backoff. */
  constructor(private readonly pass: () => Promise<void>) {}

  /** Passes run only between start() and stop(); triggers outside that window are dropped. */
  start(): void {
    this.running = true;
  }

  /**
   * Asks for a pass. Never blocks, idempotent until the pass starts. The pass starts on a
   * microtask, so a synchronous burst of triggers is one pass, not one plus one.
   */
  trigger(): void {
    if (!this.running) return;
    this.dirty = true;
    if (this.draining === null) this.draining = Promise.resolve().then(() => this.drain());
  }

  /**
   * Resolves when a pass that started after this call has finished (a pass already running
   * saw the world before the caller changed it, so it does not count). Rejects when the loop
   * is stopped, or stops before that pass runs.
   */
  next(): Promise<void> {
    if (!this.running) return Promise.reject(new Error('the controller is not running'));
    const after = this.started;
    const done = new Promise<void>((resolve, reject) => this.waiters.push({ after, resolve, reject }));
    this.trigger();
    return done;
  }

  /** Drops further triggers, waits for the pass in progress, and rejects the waiters it cannot satisfy. */
  async stop(): Promise<void> {
    this.running = false;
    await this.draining;
    const stranded = this.waiters;
    this.waiters = [];
    for (const w of stranded) w.reject(new Error('the controller stopped before a fresh pass ran'));
  }

  private async drain(): Promise<void> {
    try {
      while (this.dirty && this.running) {
        this.dirty = false;
        const sequence = ++this.started;
        try {
          await this.pass();
        } finally {
          const satisfied = this.waiters.filter((w) => w.after < sequence);
          this.waiters = this.waiters.filter((w) => w.after >= sequence);
          for (const w of satisfied) w.resolve();
        }
      }
    } finally {
      this.draining = null;
    }
  }
}
