// The one interface the dashboard talks through. Two implementations carry it: the Electron
// preload (contextBridge over IPC) and HTTP + SSE against the daemon in headless mode. The
// renderer's store is fed by either and cannot tell them apart, which is what lets the same
// dashboard run in the tray window and in a browser.
import type { AdminEvent } from './admin-events.js';
import type { CommandResult, ModelCommand } from './commands.js';
import type { LogTail } from './log-lines.js';
import type { Snapshot } from './snapshot.js';

export interface DashboardBridge {
  /** The current snapshot. Blocks for one round trip; rejects when the daemon is unreachable. */
  getSnapshot(): Promise<Snapshot>;
  /** Runs a command; resolves with what happened (ok: false names why). Rejects only on transport failure. */
  runCommand(command: ModelCommand, modelId: string): Promise<CommandResult>;
  /** The model server's log tail, oldest first, with the position after it (where LogAppended batches continue). */
  getLogs(modelId: string): Promise<LogTail>;
  /**
   * Delivers a SnapshotUpdated first, then every event, until the returned function is called.
   * `onConnection` says when the stream is lost and back (the HTTP transport reconnects by
   * itself after a daemon restart). Never throws.
   */
  subscribe(listener: (event: AdminEvent) => void, onConnection?: (connected: boolean) => void): () => void;
}
