// Every catalog model: its state, level, pin, draft, fallback, load progress, placement,
// traffic and footprint, with the commands a person gives it. A failing model's card carries
// llama.cpp's reason and Retry, and a left-out model's card the plan's reason, so the card alone
// says why and offers the fix (issue 13: both were a tab away). The row shows the snapshot's
// words (status.next, unschedulableReason, lastError) as they are; it decides nothing.
import { memo, type ReactNode } from 'react';
import type { BudgetView, ModelView, Snapshot } from '../../../core/contracts/snapshot.js';
import { draftingFor, heldBytes, loadFractionAt, loadProgressWords, placementWords, requestLimitsWords } from '../../../core/contracts/snapshot-words.js';
import { formatAgo, formatBytes } from '../format/format.js';
import { FAILURE_LABEL, LEVEL_LABEL } from '../format/labels.js';
import { isResident, needsAttention } from '../../../core/contracts/model-status.js';
import { seriesOf } from '../memory/device-segments.js';
import { useActions, useDashboard, useNow } from '../store/store-context.js';
import { EmptyCatalog } from './empty-catalog.js';
import { ExpandableText } from './expandable-text.js';
import { ReasonLines } from './reason-lines.js';
import { StatusBadges } from './state-badge.js';

/** How much of llama.cpp's reason a card shows before "More": about two lines of the card. */
const CARD_REASON_CHARS = 160;

export function ModelsView() {
  const snapshot = useDashboard((state) => state.snapshot);
  if (snapshot === null || snapshot === undefined) return null;
  const { models } = snapshot;
  if (models.length === 0) return <EmptyCatalog />;
  return (
    <ul className="model-list" aria-label="Models">
      {models.map((model) => (
        <ModelRow
          key={model.id}
          model={model}
          series={seriesOf(model.id, models)}
          mode={snapshot.budget.mode}
          answersFor={answersFor(model, models)}
          drafting={draftingOf(model, snapshot)}
        />
      ))}
    </ul>
  );
}

/**
 * A draft running inside its target's engine, as its card shows it: for whom, the bytes it holds
 * there, and its target's traffic (it decodes with every answer of its target); null when it is not.
 * Compared field by field by the memoised row (sameDrafting), since each snapshot makes a new one.
 */
interface Drafting {
  targets: string;
  bytes: number;
  inFlight: number;
  lastUsed: number | null;
}

function draftingOf(model: ModelView, snapshot: Snapshot): Drafting | null {
  const targets = draftingFor(model, snapshot);
  if (targets.length === 0) return null;
  const used = targets.map((t) => t.lastUsed).filter((at): at is number => at !== null);
  return {
    targets: targets.map((t) => t.id).join(' and '),
    bytes: heldBytes(snapshot.budget.holders, model.id, 'draft'),
    inFlight: targets.reduce((sum, t) => sum + t.inFlight, 0),
    lastUsed: used.length === 0 ? null : Math.max(...used),
  };
}

/** The models in fallback this one answers for, joined for display ("" when none): a string, so the memoised row compares it by value. */
function answersFor(model: ModelView, models: readonly ModelView[]): string {
  return models
    .filter((other) => other.id !== model.id && other.status.state === 'fallback' && other.status.servedBy === model.id)
    .map((other) => other.id)
    .join(' and ');
}

interface ModelRowProps {
  model: ModelView;
  series: number;
  mode: BudgetView['mode'];
  answersFor: string;
  drafting: Drafting | null;
}

function sameDrafting(a: Drafting | null, b: Drafting | null): boolean {
  if (a === null || b === null) return a === b;
  return a.targets === b.targets && a.bytes === b.bytes && a.inFlight === b.inFlight && a.lastUsed === b.lastUsed;
}

const ModelRow = memo(function ModelRow({ model, series, mode, answersFor, drafting }: ModelRowProps) {
  const { status } = model;
  const pending = useDashboard((state) => state.pending[model.id]);
  const now = useNow();
  const { runCommand, selectTab } = useActions();
  const busy = pending !== undefined;
  const resident = isResident(status.state);
  const level = status.level;
  const headingId = `model-${model.id}`;
  const quarantined = status.state === 'quarantined';
  const limits = requestLimitsWords(model.limits);
  // llama.cpp's own words where the failure has them; the catalog's when the file could not be read.
  const failure = status.recovery.lastError ?? (quarantined ? model.catalogError : null);

  return (
    <li className={`model-row state-${status.state}`} aria-labelledby={headingId} aria-busy={busy || undefined}>
      <div className="model-main">
        <div className="model-title">
          <span className={`model-swatch series-${series}`} aria-hidden="true" />
          <h3 id={headingId}>{model.id}</h3>
          {drafting === null ? (
            <StatusBadges status={status} />
          ) : (
            // Not a state of its own: its target's engine runs it, so it is as busy as its target.
            <span className={`badge tone-${drafting.inFlight > 0 ? 'live' : 'good'}`} data-state="drafting">
              <span className="badge-dot" aria-hidden="true" />
              Drafting
            </span>
          )}
          {level !== null && <span className={`chip level-${level}`}>{LEVEL_LABEL[level]}</span>}
          {model.pinned && <span className="chip chip-pinned">Pinned</span>}
        </div>

        {status.state === 'loading' && model.loading !== null && (
          <div className="loading">
            <progress
              aria-label={`Loading ${model.id}`}
              {...progressValue(loadFractionAt(model.loading, now))}
            />
            <span className="loading-text">
              {loadProgressWords(model.loading, now)}
              {status.next !== null && ` · ${status.next}`}
            </span>
          </div>
        )}

        {failure !== null && needsAttention(status) && (
          <div className="model-reason tone-bad-text" role="group" aria-label={`Why ${model.id} ${quarantined ? 'is quarantined' : 'failed'}`}>
            <strong>{FAILURE_LABEL[status.recovery.kind === 'none' ? 'invalid' : status.recovery.kind]}:</strong>{' '}
            <ExpandableText text={failure} max={CARD_REASON_CHARS} what={`reason for ${model.id}`} />
          </div>
        )}
        {status.state === 'fallback' && status.servedBy !== null && (
          <p className="model-note tone-alt-text">Answered by {status.servedBy}</p>
        )}
        {answersFor !== '' && (
          <p className="model-note tone-alt-text">Answers for {answersFor}, in fallback: it stays loaded while {answersFor} is wanted</p>
        )}
        {drafting !== null && (
          <p className="model-note">
            Drafting for {drafting.targets}, inside {drafting.targets.includes(' and ') ? 'their engines' : 'its engine'}: in use whenever {drafting.targets} is
          </p>
        )}
        {status.state !== 'loading' && status.next !== null && <p className="model-note">{status.next}</p>}
        {status.unschedulableReason !== null && (
          <div className="model-note tone-warn-text">
            <span className="reason-title">Left out by the plan:</span>
            <ReasonLines reason={status.unschedulableReason} label={`Why ${model.id} was left out`} />
          </div>
        )}
        {model.catalogError !== null && failure !== model.catalogError && <p className="model-note tone-bad-text">{model.catalogError}</p>}

        <dl className="model-facts">
          <Fact term="Footprint">
            {drafting !== null ? `${formatBytes(drafting.bytes)} in the engine of ${drafting.targets}` : <OwnFootprint model={model} />}
          </Fact>
          {/* Without a GPU every model is on the CPU, which the memory panel already says. */}
          {mode !== 'cpu' && model.placement !== null && resident && (
            <Fact term="Placement">{placementWords(model.placement, { mode, layerCount: model.layerCount })}</Fact>
          )}
          <Fact term="Context">{model.contextTokens.toLocaleString('en-US')} tokens</Fact>
          {model.draftId !== null && <Fact term="Draft">{model.draftId}</Fact>}
          {model.fallbackId !== null && status.state !== 'fallback' && <Fact term="Fallback">{model.fallbackId}</Fact>}
          {/* A draft decodes with its target's every answer: its target's traffic is its own. */}
          <Fact term="In flight">{drafting?.inFlight ?? model.inFlight}</Fact>
          {/* Only where set: how many it serves at once and how many more may wait (config.yaml's parallel and queueLimit). */}
          {limits !== null && <Fact term="Limits">{limits}</Fact>}
          {/* Only while some wait (for its load, for room, for its turn): the tray's "2 in flight, 1 waiting". */}
          {model.waiting > 0 && <Fact term="Waiting">{model.waiting}</Fact>}
          <Fact term="Last used">{formatAgo(drafting === null ? model.lastUsed : drafting.lastUsed, now)}</Fact>
          {/* Only where there are some: kept on disk across evictions, restored when a prompt shares their start. */}
          {model.savedConversations.count > 0 && (
            <Fact term="Saved conversations">
              {savedWords(model.savedConversations.count)}
              <span className="muted"> · {formatBytes(model.savedConversations.bytes)} on disk</span>
            </Fact>
          )}
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
        {quarantined ? null : resident ? (
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
          <button type="button" className="button" aria-label={`Load ${model.id}`} disabled={busy} onClick={() => void runCommand('load', model.id)}>
            Load
          </button>
        )}
        {needsAttention(status) && (
          // A retry forgets the failures: a quarantined or fallen-back model launches again, a
          // degraded one tries its full level, a backing-off one does not wait out its timer.
          <button
            type="button"
            className={`button${quarantined ? ' button-primary' : ''}`}
            aria-label={`Retry ${model.id}`}
            disabled={busy}
            onClick={() => void runCommand('retry', model.id)}
          >
            {pending === 'retry' ? 'Retrying…' : 'Retry'}
          </button>
        )}
        {needsAttention(status) && (
          <button type="button" className="button button-link" aria-label={`Recovery details for ${model.id}`} onClick={() => selectTab('recovery')}>
            Details
          </button>
        )}
      </div>
    </li>
  );
}, (a, b) => a.model === b.model && a.series === b.series && a.mode === b.mode && a.answersFor === b.answersFor && sameDrafting(a.drafting, b.drafting));

/** A model's own footprint: the estimate at its level, and what its server measured. */
function OwnFootprint({ model }: { model: ModelView }) {
  const level = model.status.level;
  return (
    <>
      {/* The estimate is device bytes: 0 at 'minimal' by definition, only the GPU's share at 'partial'. */}
      {level === 'minimal'
        ? 'in RAM, not on the GPU'
        : level === 'partial'
          ? `${formatBytes(model.estimateBytes.partial)} on the GPU, the rest in RAM`
          : formatBytes(model.estimateBytes[level ?? 'full'])}
      {model.measuredBytes !== null && <span className="muted"> · measured {formatBytes(model.measuredBytes)}</span>}
    </>
  );
}

function Fact({ term, children }: { term: string; children: ReactNode }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

function savedWords(count: number): string {
  return count === 1 ? '1 conversation' : `${count} conversations`;
}

/** The bar's value: the fraction the words say (the engine's, or the estimate); none (indeterminate) without one. */
function progressValue(at: { fraction: number } | null): { value?: number; max?: number } {
  return at === null ? {} : { value: at.fraction, max: 1 };
}
