// The daemon's stdout and stderr, written so that losing them never ends the daemon.
//
// Incident (issue 22): `llmtray serve | tee log` whose reader exits, or `serve >> llmtray.log`
// on a disk that fills, made the next log line end the daemon with `write EPIPE` / `ENOSPC`:
// Node emits a stream's write error as an 'error' event, and an 'error' event nobody listens
// to is an uncaught exception. Every app lost its endpoint because a terminal closed. Here
// each stream gets a listener for the whole process, a stream that failed once is written no
// more (each further write would fail the same way), and the loss is told once to whoever
// asked, so the snapshot can say that the daemon's log no longer reaches its terminal or file.
// The in-memory logs (each model's ring, the event stream) do not go through these streams
// and keep everything.

import type { LostOutput } from '../contracts/snapshot.js';
import { Emitter, type Event } from './emitter.js';

export type OutputName = LostOutput['stream'];

interface Writable {
  write(text: string): boolean;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

export class GuardedOutputs {
  private readonly lost = new Map<OutputName, LostOutput>();
  // A watcher's throw is dropped, not warned of: the warning would go to the very stream that
  // may be the one lost, and telling of a lost terminal must not lose anything else.
  private readonly losses = new Emitter<LostOutput>('the lost outputs', () => undefined);

  /** Tells each listener of each stream lost from now on, once per stream. */
  readonly onLost: Event<LostOutput> = this.losses.event;

  constructor(private readonly streams: Readonly<Record<OutputName, Writable>>) {
    for (const name of ['stdout', 'stderr'] as const) streams[name].on('error', (error) => this.fail(name, error));
  }

  /** Writes unless the stream failed before; never throws. Returns whether it was written. */
  write(name: OutputName, text: string): boolean {
    if (this.lost.has(name)) return false;
    try {
      this.streams[name].write(text);
      return true;
    } catch (error) {
      this.fail(name, error);
      return false;
    }
  }

  /** The streams lost so far, in the order they failed. */
  lostOutputs(): LostOutput[] {
    return [...this.lost.values()];
  }

  private fail(name: OutputName, error: unknown): void {
    if (this.lost.has(name)) return;
    const e = error instanceof Error ? (error as NodeJS.ErrnoException) : new Error(String(error));
    const lost: LostOutput = { stream: name, code: (e as NodeJS.ErrnoException).code ?? e.name, message: e.message, at: Date.now() };
    this.lost.set(name, lost);
    this.losses.fire(lost);
  }
}

let processOutputs: GuardedOutputs | undefined;

/** This process's stdout and stderr, guarded from the first call on (one guard per process). */
export function guardedProcessOutputs(): GuardedOutputs {
  processOutputs ??= new GuardedOutputs({ stdout: process.stdout, stderr: process.stderr });
  return processOutputs;
}
