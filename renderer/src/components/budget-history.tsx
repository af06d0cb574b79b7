// The last minutes of used-versus-budget as a plain SVG sparkline.
//
// Why a step line: the daemon sends a snapshot only when something changed, so between two
// samples the value really was the earlier one; a sloped line would invent a gradual change.
// The last value is carried to "now" for the same reason.
import { formatBytes, formatDuration } from '../format/format.js';
import { useDashboard, useNow } from '../store/store-context.js';
import type { BudgetHistoryPoint } from '../store/dashboard-store.js';

const WIDTH = 300;
const HEIGHT = 56;

export interface BudgetHistoryProps {
  /** How far back the chart reaches, ms. */
  windowMs: number;
}

export function BudgetHistory({ windowMs }: BudgetHistoryProps) {
  const history = useDashboard((state) => state.history);
  const now = useNow(5000);
  const last = history[history.length - 1];
  if (last === undefined) return null;

  const end = Math.max(now, last.at);
  const start = end - windowMs;
  const top = Math.max(...history.map((s) => Math.max(s.usedBytes, s.budgetBytes)), 1) * 1.08;
  const xOf = (at: number): number => Math.max(0, ((at - start) / windowMs) * WIDTH);
  const yOf = (bytes: number): number => HEIGHT - (bytes / top) * HEIGHT;
  const peak = Math.max(...history.map((s) => s.usedBytes));
  const summary =
    `Memory over the last ${formatDuration(windowMs)}: ${formatBytes(last.usedBytes)} used of a ` +
    `${formatBytes(last.budgetBytes)} budget now; peak ${formatBytes(peak)}.`;

  return (
    <figure className="history">
      <figcaption className="history-caption">
        <span>Last {formatDuration(windowMs)}</span>
        <span className="legend-inline">
          <span className="key key-used" aria-hidden="true" /> used
          <span className="key key-budget" aria-hidden="true" /> budget
        </span>
      </figcaption>
      {/* The daemon sends a sample only on change, so a fresh page has a line too short to see. */}
      {xOf(end) - xOf(history[0]!.at) < WIDTH * 0.04 && <span className="history-empty">Recording from now on</span>}
      <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="none" role="img" aria-label={summary} className="history-svg">
        <path d={`${stepPath(history, (s) => s.usedBytes, xOf, yOf, end)} L ${WIDTH} ${HEIGHT} L ${xOf(history[0]!.at)} ${HEIGHT} Z`} className="history-used-area" />
        <path d={stepPath(history, (s) => s.usedBytes, xOf, yOf, end)} className="history-used" vectorEffect="non-scaling-stroke" fill="none" />
        <path d={stepPath(history, (s) => s.budgetBytes, xOf, yOf, end)} className="history-budget" vectorEffect="non-scaling-stroke" fill="none" />
      </svg>
    </figure>
  );
}

function stepPath(
  samples: readonly BudgetHistoryPoint[],
  value: (sample: BudgetHistoryPoint) => number,
  xOf: (at: number) => number,
  yOf: (bytes: number) => number,
  end: number,
): string {
  let d = '';
  samples.forEach((sample, i) => {
    const x = xOf(sample.at).toFixed(1);
    const y = yOf(value(sample)).toFixed(1);
    d += i === 0 ? `M ${x} ${y}` : ` H ${x} V ${y}`;
  });
  return `${d} H ${xOf(end).toFixed(1)}`;
}
