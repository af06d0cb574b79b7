// One stop request, however many times it is delivered: `llmtray serve`'s signal handling.
//
// Why copies arrive: under `npm start` (npm → launcher → daemon) one Ctrl-C reaches the daemon
// two or three times within milliseconds. The terminal sends SIGINT to its whole foreground
// process group, the launcher forwards what it gets (a `kill` aimed at the launcher alone must
// reach the daemon too), and npm forwards to its child as well. SIGTERM has the same shape under
// systemd, which signals every process of the unit, and so has SIGHUP when a terminal closes.
// Taking the second copy as "again: force it" killed the model servers on every single Ctrl-C
// instead of stopping them.
//
// So a repeat within SAME_REQUEST_WINDOW_MS of the first stop signal is the same request: copies
// travel in milliseconds, while a person's second press comes after reading "Ctrl-C again to
// force", well over half a second later. The error this window can make is the safe one: a
// very fast double press stops gracefully and needs a third to force. Rejected: a launcher that
// forwards only what its child cannot have received. Nothing tells a process who sent a signal
// (Node has no siginfo), guessing from the terminal's foreground group would drop a `kill -INT`
// aimed at the launcher alone, and npm's copy would still come.
import { errorMessage } from '../contracts/error-message.js';

export const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type StopSignal = (typeof STOP_SIGNALS)[number];

/** How long after the first stop signal a repeat is a copy of it, ms. */
export const SAME_REQUEST_WINDOW_MS = 500;

/** What a stop signal asks for: the graceful stop, nothing (a copy of the first), or an exit now. */
export type StopVerdict = 'graceful' | 'same-request' | 'force';

/**
 * Pure. `firstAt` is when this process's first stop signal arrived (null: none yet), `now` when
 * this one did, both on one monotonic clock; any repeat outside the window forces, whichever
 * signal it is.
 */
export function judgeStopSignal(firstAt: number | null, now: number, windowMs = SAME_REQUEST_WINDOW_MS): StopVerdict {
  if (firstAt === null) return 'graceful';
  return now - firstAt < windowMs ? 'same-request' : 'force';
}

export interface StopOnSignalsOptions {
  /** The graceful stop (every model server stopped); called at most once. */
  stop(): Promise<void>;
  /** Where signals are heard: `process` in production. */
  signals: { on(signal: StopSignal, listener: (signal: StopSignal) => void): unknown };
  /**
   * Monotonic ms: `performance.now` in production, because a wall-clock step (NTP) between two
   * copies of one press could otherwise turn them into a force.
   */
  now(): number;
  /** One line for the person at the terminal. */
  say(line: string): void;
  /** Ends the process: 0 once stopped, 1 when the stop failed, 130 when forced. */
  exit(code: number): void;
}

/**
 * Listens for SIGINT, SIGTERM and SIGHUP: the first stops gracefully, a later press forces. Never
 * blocks. Returns a function that starts the same graceful stop for another reason (the process
 * that started the daemon has ended), saying `why`; it does nothing once a stop has begun, and a
 * signal after it is a press that forces.
 */
export function stopOnSignals(options: StopOnSignalsOptions): (why: string) => void {
  let firstAt: number | null = null;
  const beginStop = (line: string): void => {
    firstAt = options.now();
    options.say(line);
    void options.stop().then(
      () => options.exit(0),
      (error: unknown) => {
        options.say(`stopping failed: ${errorMessage(error)}`);
        options.exit(1);
      },
    );
  };
  const onSignal = (signal: StopSignal): void => {
    const verdict = judgeStopSignal(firstAt, options.now());
    if (verdict === 'same-request') return;
    if (verdict === 'force') {
      options.say(`${signal} again: exiting now; model servers are killed with the process`);
      options.exit(130);
      return;
    }
    beginStop(`${signal}: stopping every model server (${signal === 'SIGINT' ? 'Ctrl-C' : signal} again to force)`);
  };
  for (const signal of STOP_SIGNALS) options.signals.on(signal, onSignal);
  return (why) => {
    if (firstAt === null) beginStop(`${why}: stopping every model server`);
  };
}
