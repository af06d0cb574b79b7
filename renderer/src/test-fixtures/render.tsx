// Renders a view the way the app does: a fresh store on a recording bridge, a fixed clock.
// A fresh store per call is the "reset between tests".
import { render, type RenderResult } from '@testing-library/react';
import type { ReactElement } from 'react';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { createDashboardStore, type DashboardStore } from '../store/dashboard-store.js';
import { DashboardProvider } from '../store/store-context.js';
import { RecordingBridge } from './recording-bridge.js';
import { NOW } from './snapshot-builder.js';

export interface Rendered extends RenderResult {
  store: DashboardStore;
  bridge: RecordingBridge;
}

export interface RenderOptions {
  now?: () => number;
  /** Prepares the bridge (log tails, command answers) before anything is rendered. */
  setUp?: (bridge: RecordingBridge) => void;
}

export function renderWithSnapshot(ui: ReactElement, snapshot: Snapshot | null, options: RenderOptions = {}): Rendered {
  const bridge = new RecordingBridge(snapshot);
  options.setUp?.(bridge);
  const now = options.now ?? (() => NOW);
  const store = createDashboardStore({ bridge, now });
  store.getState().connect();
  const result = render(
    <DashboardProvider store={store} now={now}>
      {ui}
    </DashboardProvider>,
  );
  return { ...result, store, bridge };
}
