// Summaries and tables for the benchmarks: the few statistics they report, one way of printing.
//
// Why medians and nearest-rank percentiles rather than means: on a shared 2-core machine a
// single stall (another helper's test run, a GC) drags a mean by tens of milliseconds, and a
// benchmark that reports the stall instead of the code is read wrongly.

/** The nearest-rank percentile `p` (0…100) of `values`; NaN when empty. Does not modify `values`. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1] ?? Number.NaN;
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] ?? Number.NaN) : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
}

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

/** A signed number ("+0.31", "-2.0"), for differences. */
export function signed(value: number, digits: number): string {
  if (!Number.isFinite(value)) return '–';
  return `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;
}

export const MIB = 1024 * 1024;

export function mib(bytes: number): string {
  return fixed(bytes / MIB, 1);
}

/** "met" / "MISSED" for a target, so the reader does not have to compare numbers by eye. */
export function verdict(met: boolean): string {
  return met ? 'met' : 'MISSED';
}

/** A cell that reads as a figure: a signed number, optionally with a unit, or a dash. */
const FIGURE = /^([+-]?\d[\d.,]*( ?(%|ms|MiB|×))?|–)$/;

/**
 * Prints a table, markdown-compatible so that BENCHMARKS.md can quote the output verbatim:
 * columns of figures right-aligned, columns of words left-aligned.
 */
export function printTable(headers: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const numeric = headers.map((_, column) => column > 0 && rows.every((row) => (row[column] ?? '') === '' || FIGURE.test(row[column] ?? '')));
  const cell = (text: string, column: number): string => (numeric[column] ? text.padStart(widths[column] ?? 0) : text.padEnd(widths[column] ?? 0));
  const line = (cells: readonly string[]): string => `| ${headers.map((_, column) => cell(cells[column] ?? '', column)).join(' | ')} |`;
  console.log(line(headers));
  console.log(`|${widths.map((width, column) => (numeric[column] ? `${'-'.repeat(width + 1)}:` : `:${'-'.repeat(width + 1)}`)).join('|')}|`);
  for (const row of rows) console.log(line(row));
}
