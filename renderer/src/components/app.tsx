// The dashboard window: a header (what is running, the endpoint, the connection), banners for
// config errors and notices, the memory picture on the left and the tabbed views on the right.
// Sized for the 900×600 tray window; below 760 px wide the memory panel moves above the tabs.
import { useEffect, type ReactNode } from 'react';
import { formatBytes, formatClock } from '../format/format.js';
import { residentCount } from '../../../core/contracts/snapshot-words.js';
import { needsAttention } from '../../../core/contracts/model-status.js';
import { DEFAULT_HISTORY_WINDOW_MS, type Tab } from '../store/dashboard-store.js';
import { useActions, useDashboard } from '../store/store-context.js';
import { AddModelView } from './add-model-view.js';
import { ActivityView } from './activity-view.js';
import { ConnectView } from './connect-view.js';
import { CopyButton } from './copy-button.js';
import { LogsView } from './logs-view.js';
import { MemoryPanel } from './memory-panel.js';
import { ModelsView } from './models-view.js';
import { RecoveryView } from './recovery-view.js';
import { Tabs, type TabSpec } from './tabs.js';
import { WhyView } from './why-view.js';

export interface AppProps {
  historyWindowMs?: number;
}

export function App({ historyWindowMs = DEFAULT_HISTORY_WINDOW_MS }: AppProps) {
  const hasSnapshot = useDashboard((state) => state.snapshot !== null);
  const connection = useDashboard((state) => state.connection);
  const detail = useDashboard((state) => state.connectionDetail);

  if (connection === 'unauthorized') return <SignInNeeded detail={detail} />;
  if (!hasSnapshot) return <Connecting lost={connection === 'lost'} />;
  const stale = connection === 'lost';
  return (
    <div className="app">
      <Header />
      <ConnectionBanner />
      <ConfigErrors />
      <Notices />
      <div className={`layout${stale ? ' is-stale' : ''}`} aria-busy={stale || undefined}>
        <aside className="sidebar">
          <MemoryPanel historyWindowMs={historyWindowMs} />
        </aside>
        <main className="content">
          <MainTabs />
        </main>
      </div>
    </div>
  );
}

function Header() {
  const models = useDashboard((state) => state.snapshot?.models);
  const endpoint = useDashboard((state) => state.snapshot?.endpoint);
  const used = useDashboard((state) => state.snapshot?.budget.usedBytes ?? 0);
  const budget = useDashboard((state) => state.snapshot?.budget.budgetBytes ?? 0);
  const resident = residentCount(models ?? []);
  return (
    <header className="header">
      <div className="brand">
        <span className="brand-mark" aria-hidden="true" />
        <h1>llmtray</h1>
      </div>
      <p className="header-summary">
        {resident} of {models?.length ?? 0} resident · {formatBytes(used)} of {formatBytes(budget)}
      </p>
      <span className="spacer" />
      {endpoint !== undefined && (
        <div className="endpoint">
          <code title="OpenAI-compatible endpoint">{endpoint}</code>
          <CopyButton text={endpoint} label="Copy endpoint URL" />
        </div>
      )}
      <ConnectionIndicator />
    </header>
  );
}

function ConnectionIndicator() {
  const connection = useDashboard((state) => state.connection);
  const text = connection === 'open' ? 'Live' : connection === 'lost' ? 'Reconnecting…' : 'Connecting…';
  return (
    <span className={`connection connection-${connection}`} role="status" aria-label={`Connection: ${text}`}>
      <span className="connection-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

function ConnectionBanner() {
  const lost = useDashboard((state) => state.connection === 'lost');
  const sampledAt = useDashboard((state) => state.snapshot?.budget.sampledAt);
  if (!lost) return null;
  return (
    <div className="banner banner-warn" role="alert">
      Lost the connection to llmtray. Showing the state from {sampledAt === undefined ? 'before' : formatClock(sampledAt)}; reconnecting…
    </div>
  );
}

function ConfigErrors() {
  const errors = useDashboard((state) => state.snapshot?.configErrors);
  const configPath = useDashboard((state) => state.snapshot?.configPath);
  const inForce = useDashboard((state) => state.snapshot?.configInForce);
  if (errors === undefined || errors.length === 0) return null;
  // "The last good config" only where one was read from the file: after no file, or a deleted
  // one, what keeps running is the defaults, and the models the file defines are not served.
  const running = inForce === 'defaults' ? 'llmtray runs on the defaults (only the models found in the model folders) until it is fixed' : 'the last good config keeps running';
  return (
    <div className="banner banner-bad" role="alert" aria-labelledby="config-errors-heading">
      <strong id="config-errors-heading">
        The config file has {errors.length === 1 ? 'an error' : `${errors.length} errors`}; {running}.
      </strong>
      <ul>
        {errors.map((error) => (
          <li key={error}>{error}</li>
        ))}
      </ul>
      {configPath !== undefined && <span className="muted">File: {configPath}</span>}
    </div>
  );
}

function Notices() {
  const notices = useDashboard((state) => state.notices);
  const { dismissNotice } = useActions();
  // A notice is a moment's news: it goes by itself after a while, errors a little later.
  useEffect(() => {
    const timers = notices.map((notice) => setTimeout(() => dismissNotice(notice.id), notice.tone === 'ok' ? 4000 : 12000));
    return () => timers.forEach(clearTimeout);
  }, [notices, dismissNotice]);
  return (
    <div className="notices" aria-live="polite">
      {notices.map((notice) => (
        <div key={notice.id} className={`notice notice-${notice.tone}`}>
          <span>{notice.message}</span>
          <button type="button" className="button button-link" aria-label="Dismiss" onClick={() => dismissNotice(notice.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  );
}

function MainTabs() {
  const tab = useDashboard((state) => state.tab);
  const failing = useDashboard((state) => state.snapshot?.models.filter((model) => needsAttention(model.status)).length ?? 0);
  const unfit = useDashboard((state) => state.snapshot?.plan?.unschedulable.length ?? 0);
  const { selectTab } = useActions();
  const tabs: TabSpec<Tab>[] = [
    { id: 'models', label: 'Models' },
    { id: 'recovery', label: 'Recovery', count: failing, countLabel: 'failing' },
    { id: 'why', label: 'Why', count: unfit, countLabel: 'did not fit' },
    { id: 'logs', label: 'Logs' },
    { id: 'activity', label: 'Activity' },
    { id: 'connect', label: 'Connect' },
    { id: 'add', label: 'Add model' },
  ];
  return (
    <Tabs tabs={tabs} selected={tab} onSelect={selectTab} label="Views">
      {tab === 'models' && <ModelsView />}
      {tab === 'recovery' && <RecoveryView />}
      {tab === 'why' && <WhyView />}
      {tab === 'logs' && <LogsView />}
      {tab === 'activity' && <ActivityView />}
      {tab === 'connect' && <ConnectView />}
      {tab === 'add' && <AddModelView />}
    </Tabs>
  );
}

function Connecting({ lost }: { lost: boolean }) {
  return (
    <div className="fullscreen" role="status">
      <span className="brand-mark large" aria-hidden="true" />
      <h1>{lost ? 'Cannot reach llmtray' : 'Connecting to llmtray…'}</h1>
      {lost && <p className="muted">Is it running? Start it with <code>llmtray serve</code>. Trying again…</p>}
    </div>
  );
}

/**
 * The page for a refused token. It says the transport's one sentence (what is wrong and what
 * to do) and adds only what that sentence does not: it once repeated the same advice twice in
 * other words (issue 13). The sentence's `backticked` commands show as code.
 */
function SignInNeeded({ detail }: { detail: string | null }) {
  return (
    <div className="fullscreen" role="alert">
      <span className="brand-mark large" aria-hidden="true" />
      <h1>Open the dashboard from llmtray</h1>
      <p>{withCode(detail ?? "This page does not have llmtray's admin token. Run `llmtray dashboard`.")}</p>
      <p className="muted">
        The printed URL ends in <code>#token=…</code>; this tab keeps the token until it closes.
      </p>
    </div>
  );
}

function withCode(text: string): ReactNode[] {
  return text.split('`').map((part, i) => (i % 2 === 1 ? <code key={i}>{part}</code> : part));
}
