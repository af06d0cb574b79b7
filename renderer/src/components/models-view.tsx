// Every catalog model: its state, level, pin, draft, fallback, load progress, traffic and
// footprint, with the commands a person gives it. The row shows the snapshot's words
// (status.next, unschedulableReason) as they are; it decides nothing.
import { memo, type ReactNode } from 'react';
import type { ModelView } from '../../../core/contracts/snapshot.js';
import { formatAgo, formatBytes, formatDuration } from '../format/format.js';
import { LEVEL_LABEL, RECOVERY_STATES, RESIDENT_STATES } from '../format/labels.js';
import { seriesOf } from '../memory/device-segments.js';
import { useActions, useDashboard, useNow } from '../store/store-context.js';
import { EmptyCatalog } from './empty-catalog.js';
import { StateBadge } from './state-badge.js';

export function ModelsView() {
  const models = useDashboard((state) => state.snapshot?.models);
  if (models === undefined) return null;
  if (models.length === 0) return <EmptyCatalog />;
  return (
    <ul className="model-list" aria-label="Models">
      {models.map((model) => (
        <ModelRow key={model.id} model={model} series={seriesOf(model.id, models)} />
      ))}
    </ul>
  );
}

const ModelRow = memo(function ModelRow({ model, series }: { model: ModelView; series: number }) {
  const { status } = model;
  const pending = useDashboard((state) => state.pending[model.id]);
  const now = useNow();
  const { runCommand, selectTab } = useActions();
  const busy = pending !== undefined;
  const resident = RESIDENT_STATES.has(status.state);
  const level = status.level;
  const headingId = `model-${model.id}`;

  return (
    <li className={`model-row state-${status.state}`} aria-labelledby={headingId} aria-busy={busy || undefined}>
      <div className="model-main">
        <div className="model-title">
          <span className={`model-swatch series-${series}`} aria-hidden="true" />
          <h3 id={headingId}>{model.id}</h3>
          <StateBadge state={status.state} />
          {level !== null && <span className={`chip level-${level}`}>{LEVEL_LABEL[level]}</span>}
          {model.pinned && <span className="chip chip-pinned">Pinned</span>}
        </div>

        {status.state === 'loading' && model.loading !== null && (
          <div className="loading">
            <progress
              aria-label={`Loading ${model.id}`}
              {...(model.loading.fraction === null ? {} : { value: model.loading.fraction, max: 1 })}
            />
            <span className="loading-text">
              {model.loading.fraction === null ? '' : `${Math.round(model.loading.fraction * 100)}% · `}
              {formatDuration(now - model.loading.startedAt)} elapsed
              {status.next !== null && ` · ${status.next}`}
            </span>
          </div>
        )}

        {status.state === 'fallback' && status.servedBy !== null && (
          <p className="model-note tone-alt-text">Answered by {status.servedBy}</p>
        )}
        {status.state !== 'loading' && status.next !== null && <p className="model-note">{status.next}</p>}
        {status.unschedulableReason !== null && <p className="model-note tone-warn-text">{status.unschedulableReason}</p>}
        {model.catalogError !== null && <p className="model-note tone-bad-text">{model.catalogError}</p>}

        <dl className="model-facts">
          <Fact term="Footprint">
            {/* The estimate is device bytes: 0 at 'minimal' by definition, only the GPU's share at 'partial'. */}
            {level === 'minimal'
              ? 'in RAM, not on the GPU'
              : level === 'partial'
                ? `${formatBytes(model.estimateBytes.partial)} on the GPU, the rest in RAM`
                : formatBytes(model.estimateBytes[level ?? 'full'])}
            {model.measuredBytes !== null && <span className="muted"> · measured {formatBytes(model.measuredBytes)}</span>}
          </Fact>
          <Fact term="Context">{model.contextTokens.toLocaleString('en-US')} tokens</Fact>
          {model.draftId !== null && <Fact term="Draft">{model.draftId}</Fact>}
          {model.fallbackId !== null && status.state !== 'fallback' && <Fact term="Fallback">{model.fallbackId}</Fact>}
          <Fact term="In flight">{model.inFlight}</Fact>
          <Fact term="Last used">{formatAgo(model.lastUsed, now)}</Fact>
        </dl>
      </div>

      <div className="model-actions">
        <label className="switch">
          <input
            type="checkbox"
            role="switch"
            aria-label={`Pin ${model.id}`}
            checked={model.pinned}
            disabled={busy}
            onChange={() => void runCommand(model.pinned ? 'unpin' : 'pin', model.id)}
          />
          <span className="switch-track" aria-hidden="true" />
          <span className="switch-text" aria-hidden="true">
            Pin
          </span>
        </label>
        {resident ? (
          <button
            type="button"
            className="button"
            aria-label={`Unload ${model.id}`}
            disabled={busy || status.state === 'evicting'}
            onClick={() => void runCommand('unload', model.id)}
          >
            Unload
          </button>
        ) : (
          <button
            type="button"
            className="button"
            aria-label={`Load ${model.id}`}
            disabled={busy || status.state === 'quarantined'}
            onClick={() => void runCommand('load', model.id)}
          >
            Load
          </button>
        )}
        {RECOVERY_STATES.has(status.state) && (
          <button type="button" className="button button-link" aria-label={`Recovery details for ${model.id}`} onClick={() => selectTab('recovery')}>
            Details
          </button>
        )}
      </div>
    </li>
  );
});

function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}
