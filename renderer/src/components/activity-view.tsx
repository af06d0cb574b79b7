// The requests llmtray served, live: a summary per model (requests, failures, p50/p95 time to
// first token, median speed) over every request the daemon holds, then the requests themselves
// in a table a person sorts by clicking a column's header (newest first until then). The list is
// fetched when the tab opens, then grows by the RequestRecorded events as requests end.
//
// The words are core/contracts/requests/request-words.ts', the summary request-summary.ts': `llmtray
// activity` prints the same, so the two never disagree on a figure.
import { useEffect, useMemo, useState } from 'react';
import type { RequestRecord } from '../../../core/contracts/requests/request-record.js';
import { summarizeRequests } from '../../../core/contracts/requests/request-summary.js';
import { bodiesWords, durationWords, modelWords, speedWords, tokenWords, waitWords } from '../../../core/contracts/requests/request-words.js';
import { useActions, useDashboard } from '../store/store-context.js';
import { formatClock } from '../format/format.js';

type Column = 'at' | 'status' | 'model' | 'route' | 'client' | 'wait' | 'firstToken' | 'tokens' | 'speed' | 'duration';

interface ColumnSpec {
  id: Column;
  label: string;
  /** The value sorted by; null sorts last whichever the direction. */
  key(record: RequestRecord): number | string | null;
}

const COLUMNS: readonly ColumnSpec[] = [
  { id: 'at', label: 'Time', key: (r) => r.at },
  { id: 'status', label: 'Status', key: (r) => r.status },
  { id: 'model', label: 'Model', key: (r) => modelWords(r) },
  { id: 'route', label: 'Route', key: (r) => r.route },
  { id: 'client', label: 'Client', key: (r) => r.client },
  { id: 'wait', label: 'Waited', key: (r) => (r.waited === null ? 0 : r.waitMs) },
  { id: 'firstToken', label: 'First token', key: (r) => r.firstTokenMs },
  { id: 'tokens', label: 'Tokens', key: (r) => r.completionTokens },
  { id: 'speed', label: 'Speed', key: (r) => r.tokensPerSecond },
  { id: 'duration', label: 'Took', key: (r) => r.durationMs },
];

interface Sort {
  column: Column;
  descending: boolean;
}

export function ActivityView() {
  const requests = useDashboard((state) => state.requests);
  const error = useDashboard((state) => state.activityError);
  const keep = useDashboard((state) => state.activityKeep);
  const keepBodiesBytes = useDashboard((state) => state.keepBodiesBytes);
  const daemonStartedAt = useDashboard((state) => state.snapshot?.startedAt);
  const { loadActivity } = useActions();
  const [sort, setSort] = useState<Sort>({ column: 'at', descending: true });

  useEffect(() => {
    void loadActivity();
  }, [daemonStartedAt, loadActivity]);

  const sorted = useMemo(() => (requests === null ? [] : sortedBy(requests, sort)), [requests, sort]);
  const summary = useMemo(() => summarizeRequests(requests ?? []), [requests]);

  if (error !== null && requests === null) return <p className="banner banner-bad" role="alert">{error}</p>;
  if (requests === null) return <p className="muted" role="status">Reading the requests…</p>;
  if (requests.length === 0) {
    return (
      <div className="placeholder">
        <h2>No requests yet</h2>
        <p className="muted">Each request an app sends to a model appears here as it ends: the model that answered, its wait, its first token, its tokens and speed.</p>
      </div>
    );
  }
  const choose = (column: Column): void => setSort((now) => ({ column, descending: now.column === column ? !now.descending : true }));
  return (
    <div className="activity">
      <table className="data-table activity-summary" aria-label="Requests per model">
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Requests</th>
            <th scope="col">Failed</th>
            <th scope="col">First token p50</th>
            <th scope="col">First token p95</th>
            <th scope="col">Speed p50</th>
          </tr>
        </thead>
        <tbody>
          {summary.map((s) => (
            <tr key={s.model}>
              <th scope="row">{s.model}</th>
              <td>{s.requests}</td>
              <td className={s.failed > 0 ? 'bad' : undefined}>{s.failed}</td>
              <td>{durationWords(s.firstTokenP50Ms)}</td>
              <td>{durationWords(s.firstTokenP95Ms)}</td>
              <td>{speedWords(s.tokensPerSecondP50)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="muted activity-note">
        The last {requests.length} of at most {keep} requests kept. {bodiesWords(keepBodiesBytes)}
      </p>
      <div className="activity-scroll">
        <table className="data-table activity-requests" aria-label="Requests">
          <thead>
            <tr>
              {COLUMNS.map((column) => (
                <th key={column.id} scope="col" aria-sort={sort.column === column.id ? (sort.descending ? 'descending' : 'ascending') : 'none'}>
                  <button type="button" className="sort-button" onClick={() => choose(column.id)}>
                    {column.label}
                    <span aria-hidden="true">{sort.column === column.id ? (sort.descending ? ' ▾' : ' ▴') : ''}</span>
                  </button>
                </th>
              ))}
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {sorted.map((record) => (
              <RequestRow key={record.id} record={record} />
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function RequestRow({ record }: { record: RequestRecord }) {
  const failed = record.status >= 400;
  return (
    <tr className={failed ? 'is-failed' : undefined} data-request-id={record.id}>
      <td>{formatClock(record.at)}</td>
      <td className={failed ? 'bad' : undefined}>{record.status}</td>
      <td>{modelWords(record)}</td>
      <td>
        <code>{record.route}</code>
        {record.stream ? <span className="muted"> stream</span> : null}
      </td>
      <td>{record.client}</td>
      <td>{waitWords(record)}</td>
      <td>{durationWords(record.firstTokenMs)}</td>
      <td>{tokenWords(record)}</td>
      <td>{speedWords(record.tokensPerSecond)}</td>
      <td>{durationWords(record.durationMs)}</td>
      <td className="activity-error">
        {record.error}
        {record.bodies !== undefined && <Bodies bodies={record.bodies} />}
      </td>
    </tr>
  );
}

function Bodies({ bodies }: { bodies: NonNullable<RequestRecord['bodies']> }) {
  return (
    <details>
      <summary>Bodies{bodies.truncated ? ' (cut)' : ''}</summary>
      <h4>Request</h4>
      <pre>{bodies.request}</pre>
      <h4>Answer</h4>
      <pre>{bodies.answer}</pre>
    </details>
  );
}

/** A sorted copy; unknown values (null) last in either direction, ties newest first. */
function sortedBy(records: readonly RequestRecord[], sort: Sort): RequestRecord[] {
  const spec = COLUMNS.find((column) => column.id === sort.column) ?? COLUMNS[0]!;
  const sign = sort.descending ? -1 : 1;
  return [...records].sort((a, b) => {
    const x = spec.key(a);
    const y = spec.key(b);
    if (x === null || y === null) return x === y ? b.at - a.at : x === null ? 1 : -1;
    if (x < y) return -sign;
    if (x > y) return sign;
    return b.at - a.at;
  });
}
