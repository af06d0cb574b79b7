// A model server's log as its readers see it: a tail fetched once, then batches of live lines
// (LogAppended), each placed by its position in the model's log. One merge rule for every
// reader — the dashboard's store and `llmtray logs -f` — so they cannot disagree. Pure.
//
// Why positions and not matching text: the fetch and the live batches overlap by an unknown
// amount (a batch may arrive while the fetch is in flight, before or after the daemon read the
// tail), and log lines repeat ("srv  update_slots: all slots are idle" comes again and again),
// so deciding the overlap by comparing text either drops a new line that happens to equal the
// last fetched one or shows a fetched line twice. A position is the line's number in the
// model's log since the daemon started (the first line is 0; lines the daemon's ring no longer
// keeps still count), so overlap and gaps are arithmetic.

/** A model's log read at one moment: the lines the daemon keeps, oldest first, and where the next line will go. */
export interface LogTail {
  lines: string[];
  /** The position of the line after the last one in `lines` (the count of lines logged so far). */
  next: number;
}

/**
 * What stands in the log where lines were not sent to this reader: the daemon's rate limit for a
 * model that writes faster than a dashboard can follow, or a reconnect. The daemon's own log
 * keeps them (`llmtray logs ID`, the dashboard's copy after a refetch).
 */
export function droppedMarker(count: number): string {
  return `… ${count} ${count === 1 ? 'line' : 'lines'} dropped`;
}

/**
 * What a reader that holds every line before `next` (null: none yet) shows for a batch whose
 * first line is at `first`: lines it already holds are skipped, a gap before the batch becomes
 * one droppedMarker, the rest follow. Returns what to append and the reader's new `next`
 * (never smaller than the old one: a batch it fully holds changes nothing).
 */
export function linesAfter(next: number | null, first: number, lines: readonly string[]): { append: string[]; next: number } {
  const end = first + lines.length;
  if (next === null) return { append: [...lines], next: end };
  if (end <= next) return { append: [], next };
  const fresh = lines.slice(Math.max(0, next - first));
  const gap = first - next;
  return { append: gap > 0 ? [droppedMarker(gap), ...fresh] : fresh, next: end };
}
