// The one interface the dashboard talks through: every call of the admin API (derived from the
// route table, admin-routes.ts) plus the event stream. Three things carry it: the daemon's
// AdminService itself (what Electron's main process holds), the Electron preload (IPC, whose
// channels are derived from the same table), and HTTP + SSE against the daemon in a browser.
// The renderer's store is fed by either of the last two and cannot tell them apart, which is
// what lets the same dashboard run in the tray window and in a browser.
import type { AdminEvent } from './admin-events.js';
import type { AdminApi } from './admin-routes.js';

export interface AdminEventSource {
  /**
   * Delivers a SnapshotUpdated first, then every event, until the returned function is called
   * (idempotent). `onConnection` says when the stream is lost and back (the HTTP transport
   * reconnects by itself after a daemon restart). Never throws; a listener must not block.
   */
  subscribe(listener: (event: AdminEvent) => void, onConnection?: (connected: boolean) => void): () => void;
}

export type DashboardBridge = AdminApi & AdminEventSource;
