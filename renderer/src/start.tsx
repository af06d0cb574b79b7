// Mounts the dashboard on a bridge. Shared by main.tsx (the real transports) and the
// screenshot fixture (renderer/dev/), so both render exactly the same tree.
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import type { DashboardBridge } from '../../core/contracts/bridge.js';
import { App } from './components/app.js';
import { createDashboardStore, type DashboardStore } from './store/dashboard-store.js';
import { DashboardProvider } from './store/store-context.js';
import './styles.css';

export interface StartOptions {
  /** Epoch ms for every "ago" and countdown; default Date.now. */
  now?: () => number;
}

/** Renders into #root, subscribes the store to the bridge, and returns the store. */
export function startDashboard(bridge: DashboardBridge, container: HTMLElement, options: StartOptions = {}): DashboardStore {
  const store = createDashboardStore({ bridge, ...(options.now === undefined ? {} : { now: options.now }) });
  store.getState().connect();
  createRoot(container).render(
    <StrictMode>
      <DashboardProvider store={store} {...(options.now === undefined ? {} : { now: options.now })}>
        <App />
      </DashboardProvider>
    </StrictMode>,
  );
  return store;
}
