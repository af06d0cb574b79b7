// Quitting waits for every model server to stop.
//
// Electron quits as soon as 'before-quit' returns unless a handler calls preventDefault. If it
// did, the engines (child processes holding gigabytes of VRAM) would be orphaned or killed
// without their SIGTERM grace. So the first before-quit is held, the daemon is stopped, and
// only then does the app exit (app.exit, which does not emit before-quit again). Every later
// quit request (a second Quit click, the OS asking again at logout) is held too, and does not
// start a second stop. A stop that never finishes must not keep the app alive forever: after
// `graceMs` it exits anyway and says so. A quit because the app could not run (no tray) is a
// failure, and exits 1 once the engines are down, so a login item or a script sees it.
import { errorMessage } from '../core/contracts/error-message.js';

export interface QuitClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export interface QuitCoordinatorOptions {
  /** Stops the daemon and every engine; resolves when they have exited. */
  stop: () => Promise<void>;
  /** Ends the process at once (app.exit). Called exactly once. */
  exit: (code: number) => void;
  clock: QuitClock;
  /** Longest wait for `stop`, ms. */
  graceMs: number;
  log: (message: string) => void;
}

export interface QuitCoordinator {
  /** The 'before-quit' listener. Never blocks: it holds the quit and starts stopping. */
  onBeforeQuit(event: { preventDefault(): void }): void;
  /** Whether a quit has begun; windows close for real from then on instead of hiding. */
  readonly quitting: boolean;
  /** Marks the quit as a failure: after the stop the app exits 1 instead of 0. Call before app.quit(). */
  markFailed(): void;
}

export function createQuitCoordinator(options: QuitCoordinatorOptions): QuitCoordinator {
  let quitting = false;
  let exited = false;
  let failed = false;
  const exitOnce = (code: number): void => {
    if (exited) return;
    exited = true;
    options.exit(code);
  };
  return {
    get quitting() {
      return quitting;
    },
    markFailed() {
      failed = true;
    },
    onBeforeQuit(event) {
      if (exited) return;
      event.preventDefault();
      if (quitting) return;
      quitting = true;
      const timer = options.clock.setTimeout(() => {
        options.log(`llmtray: the model servers did not stop within ${options.graceMs / 1000} s; exiting anyway`);
        exitOnce(1);
      }, options.graceMs);
      options.stop().then(
        () => {
          options.clock.clearTimeout(timer);
          exitOnce(failed ? 1 : 0);
        },
        (error: unknown) => {
          options.clock.clearTimeout(timer);
          options.log(`llmtray: stopping the model servers failed: ${errorMessage(error)}`);
          exitOnce(1);
        },
      );
    },
  };
}
