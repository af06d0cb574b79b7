import { isDegraded, type ModelStateName, type ModelStatus } from '../../../core/contracts/model-status.js';
import { STATE_LABEL } from '../format/labels.js';

/** The model's state as a coloured pill; loading and decoding animate (unless reduced motion is asked for). */
export function StateBadge({ state }: { state: ModelStateName }) {
  const { label, tone } = STATE_LABEL[state];
  return (
    <span className={`badge tone-${tone}`} data-state={state}>
      <span className="badge-dot" aria-hidden="true" />
      {label}
    </span>
  );
}

/**
 * A model's state word, and "Degraded" beside "Decoding" while a degraded model answers: the one
 * word says only the first, and the person should see both.
 */
export function StatusBadges({ status }: { status: Pick<ModelStatus, 'state' | 'phase' | 'level' | 'busy'> }) {
  return (
    <>
      <StateBadge state={status.state} />
      {status.busy && isDegraded(status) && <StateBadge state="degraded" />}
    </>
  );
}
