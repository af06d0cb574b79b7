// Each failing model's recovery: what failed, how often, what the ladder does next and when,
// and the last error in full. A quarantined model (and one answered by its fallback) waits for
// a person: that is what the Retry button is for.
import type { ModelView } from '../../../core/contracts/snapshot.js';
import { formatClock, formatDuration } from '../format/format.js';
import { ACTION_LABEL, FAILURE_LABEL, LEVEL_LABEL } from '../format/labels.js';
import { needsAttention } from '../../../core/contracts/model-status.js';
import { useActions, useDashboard, useNow } from '../store/store-context.js';
import { StatusBadges } from './state-badge.js';

export function RecoveryView() {
  const models = useDashboard((state) => state.snapshot?.models);
  if (models === undefined) return null;
  // The contract's one "needs attention", which the tray counts and the CLI names too.
  const failing = models.filter((model) => needsAttention(model.status));
  if (failing.length === 0) {
    return (
      <div className="placeholder">
        <h2>Nothing is failing</h2>
        <p className="muted">When a model fails to launch, its recovery shows here: the cause, each attempt, and what happens next.</p>
      </div>
    );
  }
  return (
    <ul className="card-list" aria-label="Recovery">
      {failing.map((model) => (
        <RecoveryCard key={model.id} model={model} />
      ))}
    </ul>
  );
}

function RecoveryCard({ model }: { model: ModelView }) {
  const { status } = model;
  const { recovery } = status;
  const now = useNow();
  const pending = useDashboard((state) => state.pending[model.id]);
  const { runCommand } = useActions();
  const waitsForPerson = status.state === 'quarantined' || status.state === 'fallback';
  const headingId = `recovery-${model.id}`;

  return (
    <li className={`card recovery-card state-${status.state}`} aria-labelledby={headingId}>
      <div className="card-head">
        <h3 id={headingId}>{model.id}</h3>
        <StatusBadges status={status} />
        {status.level !== null && <span className="chip">{LEVEL_LABEL[status.level]}</span>}
        {waitsForPerson && (
          <button
            type="button"
            className="button button-primary card-action"
            aria-label={`Retry ${model.id}`}
            disabled={pending !== undefined}
            onClick={() => void runCommand('retry', model.id)}
          >
            {pending === 'retry' ? 'Retrying…' : 'Retry'}
          </button>
        )}
      </div>
      <dl className="recovery-facts">
        <div>
          <dt>Failure</dt>
          <dd>{FAILURE_LABEL[recovery.kind]}</dd>
        </div>
        <div>
          <dt>Attempts</dt>
          <dd>{recovery.attempts}</dd>
        </div>
        <div>
          <dt>Next</dt>
          <dd>{recovery.nextAction === null ? 'Nothing scheduled' : ACTION_LABEL[recovery.nextAction]}</dd>
        </div>
        <div>
          <dt>When</dt>
          <dd>
            {recovery.nextAttemptAt === null ? (
              'Not scheduled'
            ) : recovery.nextAttemptAt > now ? (
              <time dateTime={new Date(recovery.nextAttemptAt).toISOString()} title={formatClock(recovery.nextAttemptAt)}>
                in {formatDuration(recovery.nextAttemptAt - now + 999)}
              </time>
            ) : (
              'Now'
            )}
          </dd>
        </div>
      </dl>
      {status.state === 'fallback' && status.servedBy !== null && (
        <p className="model-note tone-alt-text">Requests for {model.id} are answered by {status.servedBy}.</p>
      )}
      {status.next !== null && <p className="model-note">{status.next}</p>}
      {recovery.lastError !== null && (
        <div className="last-error">
          <h4>Last error</h4>
          <pre>{recovery.lastError}</pre>
        </div>
      )}
    </li>
  );
}
