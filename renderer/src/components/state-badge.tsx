import type { ModelStateName } from '../../../core/contracts/model-status.js';
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
