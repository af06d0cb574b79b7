// One task at a time, in the order they were queued, where one failure stays that task's own.
//
// Why this file: the catalog's and the config's reloads chained each call onto the previous
// one's promise with `.then(task)`. The first reload that rejected (a YAML alias bomb makes the
// parser throw) left that rejected promise as the tail, and `.then` skips its callback on a
// rejection, so every later reload rejected too without ever running: the daemon stopped
// seeing config edits and new models for good. Here the tail is the task's outcome with its
// failure swallowed, so the next task runs whatever the last one did; the caller still gets
// the rejection from `run`.

export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  /**
   * Runs `task` once every task queued before it has settled (resolved or rejected) and
   * returns its outcome, rejection included. Never blocks the caller.
   */
  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch(() => undefined);
    return result;
  }
}
