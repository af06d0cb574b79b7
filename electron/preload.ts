// The dashboard window's preload: exposes DashboardBridge as `window.llmtray` and nothing else.
//
// Bundled into one CommonJS file (dist/electron/preload.cjs, see vite.preload.config.ts)
// because a sandboxed preload can require only 'electron' and a few built-ins: no relative
// files, no ES modules.
import { contextBridge, ipcRenderer } from 'electron';
import { createPreloadBridge } from './preload-bridge.js';

contextBridge.exposeInMainWorld('llmtray', createPreloadBridge(ipcRenderer));
