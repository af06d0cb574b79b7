// The memory budget as a picture: one stacked bar per GPU (or host RAM in CPU mode), a legend
// with every figure, and the recent history of used versus budget.
import { useMemo } from 'react';
import type { BudgetView, ModelView } from '../../../core/contracts/snapshot.js';
import { limitWords } from '../../../core/contracts/snapshot-words.js';
import { formatBytes } from '../format/format.js';
import { deviceBarsOf, type Device } from '../memory/device-segments.js';
import { useDashboard } from '../store/store-context.js';
import { BudgetHistory } from './budget-history.js';
import { MemoryBar, describeSegment } from './memory-bar.js';

export interface MemoryPanelProps {
  historyWindowMs: number;
}

export function MemoryPanel({ historyWindowMs }: MemoryPanelProps) {
  const budget = useDashboard((state) => state.snapshot?.budget);
  const models = useDashboard((state) => state.snapshot?.models);
  if (budget === undefined || models === undefined) return null;
  return (
    <section className="memory-panel" aria-labelledby="memory-heading">
      <div className="section-head">
        <h2 id="memory-heading">Memory</h2>
        <span className="muted">{modeLabel(budget)}</span>
      </div>
      <Totals budget={budget} />
      <Devices budget={budget} models={models} />
      {(budget.goneGpus ?? []).map((gpu) => (
        // No bar for a GPU that is gone: only why, by name, where its bar was.
        <p key={gpu.busAddress} className="device-warning" role="alert">
          {gpu.reason}
        </p>
      ))}
      {budget.displays !== undefined && budget.displays.length > 0 && (
        // Shown as such, so that a person who sees lspci's list knows why a card is missing from the bars and the numbering.
        <p className="device-displays muted">
          Display controllers no engine computes on, not numbered or counted:{' '}
          {budget.displays.map((d) => `${d.name}${d.busAddress === null ? '' : ` (${d.busAddress})`}`).join(', ')}
        </p>
      )}
      <BudgetHistory windowMs={historyWindowMs} />
    </section>
  );
}

function Totals({ budget }: { budget: BudgetView }) {
  const free = Math.max(0, budget.budgetBytes - budget.usedBytes);
  const over = budget.usedBytes > budget.budgetBytes;
  // What the config's limit does, not its number again ("110 MiB (limit 110 MiB)", issue 13).
  const limit = limitWords(budget);
  return (
    <dl className="totals">
      <div>
        <dt>Used</dt>
        <dd>{formatBytes(budget.usedBytes)}</dd>
      </div>
      <div>
        <dt>Budget</dt>
        <dd>{formatBytes(budget.budgetBytes)}</dd>
        {limit !== null && <dd className="totals-note">{limit}</dd>}
      </div>
      <div className={over ? 'is-over' : undefined}>
        <dt>{over ? 'Over budget' : 'Left'}</dt>
        <dd>{formatBytes(over ? budget.usedBytes - budget.budgetBytes : free)}</dd>
      </div>
      {budget.savedConversationsBytes > 0 && (
        // On disk, not in memory: beside the budget, never in it, so that what was kept on an eviction is seen to be kept.
        <div>
          <dt>Saved conversations</dt>
          <dd>{formatBytes(budget.savedConversationsBytes)}</dd>
          <dd className="totals-note">on disk</dd>
        </div>
      )}
    </dl>
  );
}

function Devices({ budget, models }: { budget: BudgetView; models: readonly ModelView[] }) {
  const devices = useMemo(() => deviceBarsOf(budget, models), [budget, models]);
  return (
    <ul className="devices">
      {devices.map((device) => (
        <li key={device.key} className="device">
          <div className="device-head">
            <span className="device-title">{device.title}</span>
            <span className="device-total">{formatBytes(device.totalBytes)}</span>
          </div>
          {/* Its own line, wrapped: on one line with the title it was cut to "No GPU: models ru…" (issue 13). */}
          <p className="device-subtitle muted">{device.subtitle}</p>
          {device.warning !== null && (
            <p className="device-warning" role="alert">
              {device.warning}
            </p>
          )}
          <MemoryBar device={device} />
          <Legend device={device} />
        </li>
      ))}
    </ul>
  );
}

function Legend({ device }: { device: Device }) {
  return (
    <ul className="legend" aria-label={`${device.title} memory holders`}>
      {device.segments.map((segment) => (
        <li key={segment.key} title={describeSegment(segment, device.totalBytes)}>
          <span
            className={`swatch swatch-${segment.kind}${segment.series === null ? '' : ` series-${segment.series}`}`}
            aria-hidden="true"
          />
          <span className="legend-label">
            {segment.label}
            {segment.kind === 'draft' && <span className="muted"> draft</span>}
          </span>
          <span className="legend-value">{formatBytes(segment.bytes)}</span>
        </li>
      ))}
    </ul>
  );
}

function modeLabel(budget: BudgetView): string {
  switch (budget.mode) {
    case 'gpu':
      return budget.gpus.length === 1 ? '1 GPU' : `${budget.gpus.length} GPUs`;
    case 'cpu':
      return 'CPU only';
    case 'unified':
      return 'Unified memory';
  }
}
