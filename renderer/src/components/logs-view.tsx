// Each model server's log tail, live: fetched once when a model is chosen, then extended by
// LogAppended events. It follows the end unless the person has scrolled up to read.
import { useEffect, useLayoutEffect, useRef } from 'react';
import { useActions, useDashboard } from '../store/store-context.js';
import { CopyButton } from './copy-button.js';

const NO_LINES: readonly string[] = [];

export function LogsView() {
  const models = useDashboard((state) => state.snapshot?.models);
  const chosen = useDashboard((state) => state.logModelId);
  const modelId = chosen ?? models?.[0]?.id ?? null;
  const lines = useDashboard((state) => (modelId === null ? NO_LINES : (state.logs[modelId] ?? NO_LINES)));
  const error = useDashboard((state) => (modelId === null ? undefined : state.logErrors[modelId]));
  const { loadLogs, selectLogModel } = useActions();

  useEffect(() => {
    if (modelId !== null) void loadLogs(modelId);
  }, [modelId, loadLogs]);

  if (models === undefined) return null;
  if (modelId === null) {
    return (
      <div className="placeholder">
        <h2>No logs</h2>
        <p className="muted">Each model server's log appears here once models exist.</p>
      </div>
    );
  }
  const text = lines.join('\n');
  return (
    <section className="logs" aria-labelledby="logs-heading">
      <div className="section-head">
        <h2 id="logs-heading">Logs</h2>
        <select className="field" value={modelId} onChange={(event) => selectLogModel(event.target.value)} aria-label="Model">
          {models.map((model) => (
            <option key={model.id} value={model.id}>
              {model.id}
            </option>
          ))}
        </select>
        <span className="muted">{lines.length} lines</span>
        <span className="spacer" />
        <CopyButton text={text} label={`Copy log of ${modelId}`} />
      </div>
      {error !== undefined && (
        <p className="model-note tone-bad-text" role="alert">
          {error}
        </p>
      )}
      <LogText modelId={modelId} lines={lines} />
    </section>
  );
}

function LogText({ modelId, lines }: { modelId: string; lines: readonly string[] }) {
  const ref = useRef<HTMLPreElement>(null);
  const following = useRef(true);
  useLayoutEffect(() => {
    const element = ref.current;
    if (element !== null && following.current) element.scrollTop = element.scrollHeight;
  }, [lines]);
  return (
    <pre
      ref={ref}
      className="log"
      role="log"
      aria-label={`Log of ${modelId}`}
      tabIndex={0}
      onScroll={(event) => {
        const element = event.currentTarget;
        following.current = element.scrollHeight - element.scrollTop - element.clientHeight < 24;
      }}
    >
      {lines.length === 0 ? <span className="muted">No output yet.</span> : lines.join('\n')}
    </pre>
  );
}
