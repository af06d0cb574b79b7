// Display formatting for the dashboard. Byte counts use the contract's formatter, the same
// one the policy's reason sentences use, so a number reads alike everywhere.
export { formatBytes } from '../../../core/contracts/format-bytes.js';

/** The exact count, for tooltips: "6,442,450,944 bytes". */
export function formatExactBytes(bytes: number): string {
  return `${Math.round(bytes).toLocaleString('en-US')} bytes`;
}

/** A span of time: "0 s", "4 s", "2 min 5 s", "1 h 3 min". Negative spans count as zero. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
  return `${Math.floor(hours / 24)} d`;
}

/** How long ago, for "last used": "never", "just now", "12 s ago", "3 min ago". */
export function formatAgo(at: number | null, now: number): string {
  if (at === null) return 'never';
  const ms = now - at;
  if (ms < 1000) return 'just now';
  const span = formatDuration(ms);
  // "2 min 5 s ago" is noise for a last-used stamp; the larger unit is enough.
  return `${span.split(' ').slice(0, 2).join(' ')} ago`;
}

/** A wall-clock time of day in the viewer's locale, for "plan at 14:03:41". */
export function formatClock(at: number): string {
  return new Date(at).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}
