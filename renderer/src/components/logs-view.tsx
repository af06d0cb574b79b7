// Each model server's log, live: its tail fetched when a model is chosen (and again when the
// daemon restarted), then extended by LogAppended batches as the engine writes.
//
// Two ways to stop the text moving while a person reads: scrolling up (scroll-back) stops
// following the end while new lines still arrive below, with a button to jump back; Pause
// freezes the text itself — nothing shifts, not even lines falling off the top of the kept
// window — and says how many lines came meanwhile. Resume shows them and follows the end again.
import { useEffect, useLayoutEffect, useRef, useState, type ReactNode } from 'react';
import { useActions, useDashboard } from '../store/store-context.js';
import { CopyButton } from './copy-button.js';

const NO_LINES: readonly string[] = [];
/** How close to the bottom (px) still counts as "at the end": a line's height, so a person need not hit the last pixel. */
const AT_END_PX = 24;

export function LogsView() {
  const models = useDashboard((state) => state.snapshot?.models);
  const daemonStartedAt = useDashboard((state) => state.snapshot?.startedAt);
  const chosen = useDashboard((state) => state.logModelId);
  const modelId = chosen ?? models?.[0]?.id ?? null;
  const { loadLogs, selectLogModel } = useActions();

  useEffect(() => {
    if (modelId !== null) void loadLogs(modelId);
  }, [modelId, daemonStartedAt, loadLogs]);

  if (models === undefined) return null;
  if (modelId === null) {
    return (
      <div className="placeholder">
        <h2>No logs</h2>
        <p className="muted">Each model server's log appears here once models exist.</p>
      </div>
    );
  }
  const picker = (
    <select className="field" value={modelId} onChange={(event) => selectLogModel(event.target.value)} aria-label="Model">
      {models.map((model) => (
        <option key={model.id} value={model.id}>
          {model.id}
        </option>
      ))}
    </select>
  );
  // Keyed by model: a pause or a scroll position belongs to the log it was made in.
  return <ModelLog key={modelId} modelId={modelId} picker={picker} />;
}

function ModelLog({ modelId, picker }: { modelId: string; picker: ReactNode }) {
  const lines = useDashboard((state) => state.logs[modelId] ?? NO_LINES);
  const next = useDashboard((state) => state.logNext[modelId] ?? 0);
  const error = useDashboard((state) => state.logErrors[modelId]);
  const [paused, setPaused] = useState<{ lines: readonly string[]; next: number } | null>(null);
  const [following, setFollowing] = useState(true);
  const ref = useRef<HTMLPreElement>(null);
  const shown = paused?.lines ?? lines;

  const toEnd = (): void => {
    const element = ref.current;
    if (element !== null) element.scrollTop = element.scrollHeight;
    setFollowing(true);
  };
  useLayoutEffect(() => {
    const element = ref.current;
    if (element !== null && following) element.scrollTop = element.scrollHeight;
  }, [shown, following]);

  const arrived = paused === null ? 0 : next - paused.next;
  return (
    <section className="logs" aria-labelledby="logs-heading">
      <div className="section-head">
        <h2 id="logs-heading">Logs</h2>
        {picker}
        <span className="muted">
          {paused === null ? `${lines.length} lines` : `Paused; ${arrived} new ${arrived === 1 ? 'line' : 'lines'} since`}
        </span>
        <span className="spacer" />
        <button
          type="button"
          className="button button-small"
          aria-pressed={paused !== null}
          onClick={() => {
            if (paused === null) return setPaused({ lines, next });
            setPaused(null);
            setFollowing(true);
          }}
        >
          {paused === null ? 'Pause' : 'Resume'}
        </button>
        <CopyButton text={shown.join('\n')} label={`Copy log of ${modelId}`} />
      </div>
      {error !== undefined && (
        <p className="model-note tone-bad-text" role="alert">
          {error}
        </p>
      )}
      <pre
        ref={ref}
        className="log"
        role="log"
        aria-label={`Log of ${modelId}`}
        tabIndex={0}
        onScroll={(event) => {
          const element = event.currentTarget;
          setFollowing(element.scrollHeight - element.scrollTop - element.clientHeight < AT_END_PX);
        }}
      >
        {shown.length === 0 ? <span className="muted">No output yet.</span> : shown.join('\n')}
      </pre>
      {!following && (
        <button type="button" className="button button-small log-follow" onClick={toEnd}>
          Follow new lines
        </button>
      )}
    </section>
  );
}
