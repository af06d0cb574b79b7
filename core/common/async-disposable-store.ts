// Teardowns that take time, as VS Code's DisposableStore runs its own: the daemon's parts stop in
// the reverse order of their making, each awaited before the next (the engines are gone before
// the port is released, the port before the instance lock), and a throwing one is reported and
// does not stop the others. Asynchronous, because awaiting is the point: a synchronous store
// would release the lock while the engines still run.

/** What a step of start-up hands back: undoes it. May take time; should not throw. */
export type AsyncTeardown = () => Promise<void> | void;

export class AsyncDisposableStore {
  private readonly teardowns: AsyncTeardown[] = [];
  private disposing: Promise<void> | null = null;

  /** `report` hears a teardown's throw (the others still run). */
  constructor(private readonly report: (error: unknown) => void) {}

  /** Adds a teardown, run last-added first; once disposing has begun it runs at once, after those. Returns it. */
  add<T extends AsyncTeardown>(teardown: T): T {
    if (this.disposing !== null) this.disposing = this.disposing.then(() => this.run(teardown));
    else this.teardowns.push(teardown);
    return teardown;
  }

  /** Runs every teardown once, in turn, last first. Idempotent: a second call waits for the first. Never rejects. */
  dispose(): Promise<void> {
    this.disposing ??= (async () => {
      for (const teardown of this.teardowns.splice(0).reverse()) await this.run(teardown);
    })();
    return this.disposing;
  }

  private async run(teardown: AsyncTeardown): Promise<void> {
    try {
      await teardown();
    } catch (error) {
      this.report(error);
    }
  }
}
