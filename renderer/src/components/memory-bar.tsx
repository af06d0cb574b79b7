// One device's memory as a stacked bar with the budget line.
//
// Accessibility: each segment is focusable and named with its exact numbers, so hovering
// and tabbing through the bar say the same thing; the tooltip is the visible form of that
// name. The legend below repeats every figure as text, which is what a screen reader user
// reads first, and it is what keeps the picture from being the only source of a number.
import { useId, useState } from 'react';
import { formatBytes, formatExactBytes } from '../format/format.js';
import type { Device, Segment } from '../memory/device-segments.js';

const WIDTH = 1000;
const HEIGHT = 28;
/** A segment narrower than this (in viewBox units of 1000) is widened so it can still be seen and hovered. */
const MIN_VISIBLE = 6;

/** The one-line description a segment is named by, with the numbers in it. */
export function describeSegment(segment: Segment, totalBytes: number): string {
  const share = totalBytes > 0 ? ` (${Math.round((segment.bytes / totalBytes) * 100)}% of the device)` : '';
  switch (segment.kind) {
    case 'model': {
      const parts = [`${segment.label}: ${formatBytes(segment.bytes)}${share}`];
      if (segment.estimateBytes !== null) parts.push(`estimate ${formatBytes(segment.estimateBytes)}`);
      parts.push(segment.measuredBytes === null ? 'not measured yet' : `measured ${formatBytes(segment.measuredBytes)}`);
      return parts.join(', ');
    }
    case 'draft':
      return `${segment.label}${segment.draftOf === null ? ' (draft)' : `, draft of ${segment.draftOf}`}: ${formatBytes(segment.bytes)}${share}`;
    case 'free':
      return `Free: ${formatBytes(segment.bytes)}${share}`;
    case 'spare':
      return `Warm spare engine, no model yet (the next launch adopts it; given back first when memory is needed): ${formatBytes(segment.bytes)}${share}`;
    case 'reserve':
      return `Reserve kept free for the driver and other programs: ${formatBytes(segment.bytes)}`;
    case 'other-programs':
      return `Other programs: ${formatBytes(segment.bytes)}${share}`;
  }
}

export function MemoryBar({ device }: { device: Device }) {
  const id = useId();
  const [active, setActive] = useState<string | null>(null);
  const scale = device.totalBytes > 0 ? WIDTH / device.totalBytes : 0;

  let x = 0;
  const laidOut = device.segments.map((segment) => {
    const width = segment.bytes > 0 ? Math.max(MIN_VISIBLE, segment.bytes * scale) : 0;
    const placed = { segment, x, width };
    x += width;
    return placed;
  });
  // Widened slivers can push the sum past the edge; squeeze everything back in proportionally.
  const squeeze = x > WIDTH ? WIDTH / x : 1;
  const budgetX = Math.min(WIDTH, device.budgetBytes * scale);
  const activeSegment = laidOut.find((placed) => placed.segment.key === active);

  return (
    <div className="memory-bar">
      <div className="memory-bar-track">
        <svg
          viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
          preserveAspectRatio="none"
          role="group"
          aria-label={`${device.title} memory, ${formatBytes(device.totalBytes)} total, ${formatBytes(device.budgetBytes)} budget`}
          className="memory-bar-svg"
        >
          <defs>
            <pattern id={`${id}-hatch`} width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">
              <rect width="6" height="6" className="hatch-bg" />
              <line x1="0" y1="0" x2="0" y2="6" className="hatch-line" strokeWidth="3" />
            </pattern>
          </defs>
          {laidOut.map(({ segment, x: sx, width }) => {
            const description = describeSegment(segment, device.totalBytes);
            const className = `segment segment-${segment.kind}${segment.series === null ? '' : ` series-${segment.series}`}${
              active === segment.key ? ' is-active' : ''
            }`;
            return (
              <rect
                key={segment.key}
                x={sx * squeeze}
                y={0}
                width={Math.max(0, width * squeeze - 1)}
                height={HEIGHT}
                className={className}
                fill={segment.kind === 'other-programs' ? `url(#${id}-hatch)` : undefined}
                tabIndex={0}
                role="img"
                aria-label={description}
                aria-describedby={active === segment.key ? `${id}-tip` : undefined}
                onMouseEnter={() => setActive(segment.key)}
                onMouseLeave={() => setActive(null)}
                onFocus={() => setActive(segment.key)}
                onBlur={() => setActive(null)}
              >
                <title>{description}</title>
              </rect>
            );
          })}
          <line
            x1={budgetX}
            x2={budgetX}
            y1={0}
            y2={HEIGHT}
            className="budget-line"
            vectorEffect="non-scaling-stroke"
            aria-hidden="true"
          />
        </svg>
        <span
          className={`budget-marker${budgetX > WIDTH * 0.7 ? ' is-end' : budgetX < WIDTH * 0.3 ? ' is-start' : ''}`}
          style={{ left: `${(budgetX / WIDTH) * 100}%` }}
        >
          budget {formatBytes(device.budgetBytes)}
        </span>
        {activeSegment !== undefined && (
          <div id={`${id}-tip`} role="tooltip" className="tooltip">
            <strong>
              {activeSegment.segment.label}
              {activeSegment.segment.draftOf !== null && ` · draft of ${activeSegment.segment.draftOf}`}
            </strong>
            <span>{describeSegment(activeSegment.segment, device.totalBytes).replace(/^[^:]*: /, '')}</span>
            <span className="tooltip-exact">{formatExactBytes(activeSegment.segment.bytes)}</span>
          </div>
        )}
      </div>
    </div>
  );
}
