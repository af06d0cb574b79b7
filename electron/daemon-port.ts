// What the Electron main process needs from the daemon's composition root (core/daemon.ts).
//
// main.ts loads core/daemon.js at run time and checks it against this type, so the daemon can
// be written and changed without main importing its implementation modules (and without the
// main process loading node-llama-cpp: only the engine child processes do).
import type { DashboardBridge } from '../core/contracts/bridge.js';

export interface DesktopDaemonOptions {
  /** Generate and serve the demo models (no config needed); `--demo` on the command line. */
  demo: boolean;
  /** The data dir (desktop-settings.ts). */
  dataDir: string;
  /** The listen port instead of the config's; absent: the config's listen.port. */
  port?: number;
}

export interface DesktopDaemon {
  /**
   * The admin service itself, in process: the same calls and event stream the dashboard gets
   * over IPC (DashboardBridge), which is what lets main hand it to the IPC handlers as it is.
   */
  admin: DashboardBridge;
  /** The OpenAI-compatible base URL, e.g. http://127.0.0.1:PORT/v1. */
  endpoint: string;
  /** The dashboard over HTTP (the headless way in), for a browser. */
  dashboardUrl: string;
  /**
   * Stops every model server and the listener. Blocks until every engine process has exited
   * (SIGTERM, then SIGKILL after the supervisor's grace period). Idempotent.
   */
  stop(): Promise<void>;
}

/** Starts the daemon. Rejects with a sentence when it cannot (port taken, config unreadable). */
export type StartDaemon = (options: DesktopDaemonOptions) => Promise<DesktopDaemon>;
