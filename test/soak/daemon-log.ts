// The daemon's log as the soak reads it: each line the controller and the daemon write about a
// server's life, parsed into an event and stamped with the moment it arrived.
//
// Why the log and not only /api/events: snapshots are throttled and a server that lived 1.5 s
// (a launch that ran out of memory) can fall between two of them, while the log has one line
// per launch, eviction and failure, with the failure's kind as the ladder counted it.
import type { ChildProcess } from 'node:child_process';
import type { FailureKind } from '../../core/contracts/recovery.js';
import { LineSplitter } from '../../core/engine/supervisor/log-ring.js';

/** How the controller's log line words a failure. */
export type FailureWhat = 'failed to launch' | 'died while serving' | 'died after it was ready, before it answered anything' | 'quarantined';

export type LogEvent =
  | { type: 'launching'; modelId: string; level: string }
  | { type: 'ready'; modelId: string; level: string }
  | { type: 'evicting'; modelId: string }
  | { type: 'claimed-not-evicted'; modelId: string }
  /** One rung of the recovery ladder: a launch that failed, a server that died, or the quarantine that ended it. */
  | { type: 'failure'; modelId: string; what: FailureWhat; kind: FailureKind; attempts: number; level: string; error: string }
  | { type: 'ended-on-its-own'; modelId: string; kind: FailureKind }
  | { type: 'orphans-ended'; count: number };

const LINE = /^\d\d:\d\d:\d\d\.\d{3} [IWE] (\w+): (.*)$/;

/** The JSON fields the controller appends to a failure line: `… {"level":"full","kind":"oom",…}`. */
function failureFields(message: string): { kind: FailureKind; attempts: number; level: string; error: string } | null {
  const start = message.lastIndexOf(' {"level":');
  if (start === -1) return null;
  try {
    const fields = JSON.parse(message.slice(start + 1)) as { kind?: unknown; attempts?: unknown; level?: unknown; error?: unknown };
    if (typeof fields.kind !== 'string' || typeof fields.attempts !== 'number') return null;
    return { kind: fields.kind as FailureKind, attempts: fields.attempts, level: String(fields.level), error: String(fields.error ?? '') };
  } catch {
    return null;
  }
}

/** The event one log line reports, or null for every other line. Pure. */
export function parseLogLine(line: string): LogEvent | null {
  const m = LINE.exec(line);
  if (m === null) return null;
  const [, subsystem, message = ''] = m;
  let p: RegExpExecArray | null;
  if (subsystem === 'controller') {
    if ((p = /^launching (\S+) at the ([\w-]+) level$/.exec(message))) return { type: 'launching', modelId: p[1] as string, level: p[2] as string };
    if ((p = /^(\S+) is ready at the ([\w-]+) level$/.exec(message))) return { type: 'ready', modelId: p[1] as string, level: p[2] as string };
    if ((p = /^evicting (\S+)$/.exec(message))) return { type: 'evicting', modelId: p[1] as string };
    if ((p = /^(\S+) was not evicted: a request claimed it/.exec(message))) return { type: 'claimed-not-evicted', modelId: p[1] as string };
    // The controller's three words for a death (controller.ts launchFailed): a server that had
    // answered, one that died once ready before answering anything (a hang frozen at its first
    // request is one), and a launch that never got to ready.
    if ((p = /^(\S+) (failed to launch|died while serving|died after it was ready, before it answered anything); /.exec(message)) || (p = /^(\S+) (is quarantined): /.exec(message))) {
      const fields = failureFields(message);
      if (fields === null) return null;
      const what = p[2] === 'is quarantined' ? 'quarantined' : (p[2] as Exclude<FailureWhat, 'quarantined'>);
      return { type: 'failure', modelId: p[1] as string, what, ...fields };
    }
    return null;
  }
  if (subsystem === 'events' && (p = /^(\S+)'s server ended on its own \((\w+)\)/.exec(message))) {
    return { type: 'ended-on-its-own', modelId: p[1] as string, kind: p[2] as FailureKind };
  }
  if (subsystem === 'daemon' && (p = /^ended (\d+) model server\(s\) left by an earlier run/.exec(message))) {
    return { type: 'orphans-ended', count: Number(p[1]) };
  }
  return null;
}

export interface LoggedEvent {
  /** Epoch ms the line arrived. */
  at: number;
  /** Which daemon wrote it: 0 for the first, 1 after the first restart, … */
  life: number;
  event: LogEvent;
}

/** Every line of every daemon of the run, and the events among them, in arrival order. */
export class DaemonLogRecorder {
  readonly lines: { at: number; life: number; text: string }[] = [];
  readonly events: LoggedEvent[] = [];
  private readonly listeners = new Set<(logged: LoggedEvent) => void>();

  /**
   * Records `child`'s stderr as daemon number `life`: `earlier` (what it wrote before this call,
   * stamped now) and every line from here on. Call it in the same tick as reading `earlier`, so
   * no chunk falls between the two.
   */
  attach(child: ChildProcess, life: number, earlier: string): void {
    const splitter = new LineSplitter((text) => {
      const at = Date.now();
      this.lines.push({ at, life, text });
      const event = parseLogLine(text);
      if (event === null) return;
      const logged = { at, life, event };
      this.events.push(logged);
      for (const listener of [...this.listeners]) listener(logged);
    }, 1 << 20);
    splitter.write(earlier);
    child.stderr?.on('data', (chunk: string | Buffer) => splitter.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8')));
    child.stderr?.on('end', () => splitter.end());
  }

  /** Calls `listener` for each event from now on; returns the unsubscribe. */
  onEvent(listener: (logged: LoggedEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The events after `since` (epoch ms) that match. */
  after<T extends LogEvent['type']>(since: number, type: T, modelId?: string): (LoggedEvent & { event: Extract<LogEvent, { type: T }> })[] {
    return this.events.filter(
      (e): e is LoggedEvent & { event: Extract<LogEvent, { type: T }> } =>
        e.at >= since && e.event.type === type && (modelId === undefined || ('modelId' in e.event && e.event.modelId === modelId)),
    );
  }

  /** Resolves with the first event after `since` that matches `predicate` (already logged or to come); null after `timeoutMs`. */
  async waitFor(since: number, predicate: (event: LogEvent) => boolean, timeoutMs: number): Promise<LoggedEvent | null> {
    const found = this.events.find((e) => e.at >= since && predicate(e.event));
    if (found !== undefined) return found;
    return new Promise((done) => {
      const timer = setTimeout(() => {
        stop();
        done(null);
      }, timeoutMs);
      const stop = this.onEvent((logged) => {
        if (logged.at < since || !predicate(logged.event)) return;
        clearTimeout(timer);
        stop();
        done(logged);
      });
    });
  }
}
