// The dashboard's entry: inside Electron the preload's bridge, in a browser the HTTP + SSE
// bridge against the daemon that served this page.
import { startDashboard } from './start.js';
import { electronBridge } from './transport/electron-bridge.js';
import { browserHttpEnvironment, createHttpBridge, tokenFromHash } from './transport/http-bridge.js';
import type { DashboardStore } from './store/dashboard-store.js';

const container = document.getElementById('root');
if (container === null) throw new Error('index.html has no #root element.');

// The HTTP bridge reports a refused token from inside its first request, which runs after
// startDashboard has returned, so `store` is set by then.
let store: DashboardStore | null = null;
const inElectron = electronBridge();
const bridge = inElectron ?? createHttpBridge(browserHttpEnvironment((detail) => store?.getState().setUnauthorized(detail)));
store = startDashboard(bridge, container);

// The printed URL (…/#token=…) pasted into a tab already showing this page changes only its
// fragment, which loads nothing: the page stayed on "Open the dashboard from llmtray" until a
// reload. A new token in the fragment starts the page again, which takes it (http-bridge.ts).
if (inElectron === null) {
  window.addEventListener('hashchange', () => {
    if (tokenFromHash(window.location.hash) !== null) window.location.reload();
  });
}
