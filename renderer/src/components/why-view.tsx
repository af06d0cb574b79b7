// The last plan: what it launched and evicted, and for each model it left out, the policy's
// own sentence, a line per clause (one per GPU). Not reworded: those sentences carry the
// numbers and the names of what holds the memory, which is the whole point of them.
import { formatAgo, formatClock } from '../format/format.js';
import { useDashboard, useNow } from '../store/store-context.js';
import { ReasonLines } from './reason-lines.js';

export function WhyView() {
  const plan = useDashboard((state) => state.snapshot?.plan);
  const now = useNow();
  if (plan === undefined) return null;
  if (plan === null) {
    return (
      <div className="placeholder">
        <h2>No plan yet</h2>
        <p className="muted">The first plan appears when a model is pinned or requested.</p>
      </div>
    );
  }
  const nothing = plan.launch.length === 0 && plan.evict.length === 0 && plan.unschedulable.length === 0;
  return (
    <section className="why" aria-labelledby="why-heading">
      <div className="section-head">
        <h2 id="why-heading">Last plan</h2>
        <span className="muted" title={formatClock(plan.at)}>
          {formatAgo(plan.at, now)} · {formatClock(plan.at)}
        </span>
      </div>
      {nothing && <p className="muted">Everything that is wanted fits; the plan changed nothing.</p>}
      <PlanList title="Launched" ids={plan.launch} tone="good" />
      <PlanList title="Evicted" ids={plan.evict} tone="warn" />
      {plan.unschedulable.length > 0 && (
        <section aria-labelledby="why-unfit">
          <h3 id="why-unfit">Did not fit</h3>
          <ul className="card-list">
            {plan.unschedulable.map(({ modelId, reason, strict }) => (
              <li key={modelId} className="card unfit-card" aria-label={modelId}>
                <div className="card-head">
                  <strong>{modelId}</strong>
                  <span className="muted">{strict ? 'refused until a pin goes or the budget grows' : 'waits for room'}</span>
                </div>
                <ReasonLines reason={reason} label={`Why ${modelId} did not fit`} />
              </li>
            ))}
          </ul>
        </section>
      )}
    </section>
  );
}

function PlanList({ title, ids, tone }: { title: string; ids: string[]; tone: 'good' | 'warn' }) {
  if (ids.length === 0) return null;
  const headingId = `why-${title.toLowerCase()}`;
  return (
    <section aria-labelledby={headingId} className="plan-list">
      <h3 id={headingId}>{title}</h3>
      <ul className="chips">
        {ids.map((id) => (
          <li key={id} className={`chip tone-${tone}`}>
            {id}
          </li>
        ))}
      </ul>
    </section>
  );
}
