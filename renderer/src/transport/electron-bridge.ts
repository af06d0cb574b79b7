// The dashboard bridge inside Electron: the preload exposes a DashboardBridge as
// `window.llmtray` through contextBridge (electron/), so the renderer has no IPC of its own to
// type or validate here. The preload's object is used as it is: contextBridge already proxies
// its functions, and wrapping them would only add a second place for the contract to drift.
import type { DashboardBridge } from '../../../core/contracts/bridge.js';

declare global {
  interface Window {
    /** Present only in the Electron window, set by the preload. */
    llmtray?: DashboardBridge;
  }
}

/** The preload's bridge, or null outside Electron (a browser against `llmtray serve`). */
export function electronBridge(target: Pick<Window, 'llmtray'> = window): DashboardBridge | null {
  return target.llmtray ?? null;
}
