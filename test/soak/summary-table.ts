// The soak's summary as text: the run in one line, the requests, one row per fault kind, one
// row per invariant, the verdict; then every lost request and every fault not seen, in full,
// because a failed soak is only useful if it says what to look at. Pure.
import { describeError } from './explain.js';
import { attribute, checkInvariants, classifiedRight, plannedFaults, type SoakRecord } from './invariants.js';
import { FAULT_KINDS, type FaultKind } from './profiles.js';

const FAULT_NAMES: Record<FaultKind, string> = {
  crash: 'engine SIGKILL mid-stream',
  hang: 'engine SIGSTOP (hang)',
  oom: 'out-of-memory launch',
  invalid: 'corrupt model file',
  'slow-load': 'slow load',
  'client-abort': 'client hangs up mid-stream',
  'daemon-kill': 'daemon kill -9 + restart',
};

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** "a ×2, b" for the values' counts, most frequent first. */
function counted(values: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).map(([v, n]) => (n > 1 ? `${v} ×${n}` : v)).join(', ') || '—';
}

export interface RunFacts {
  /** Machine and load, e.g. "node v20.19.0, 2 cores (AMD EPYC), load average 1.2 1.4 1.5". */
  machine: string;
  startedAt: number;
  endedAt: number;
  launches: number;
}

export function renderSummary(record: SoakRecord, facts: RunFacts): { text: string; pass: boolean } {
  const invariants = checkInvariants(record);
  const pass = invariants.every((r) => r.ok);
  const failures = attribute(record.outcomes, record.faults);
  const planned = plannedFaults(record.profile);
  const minutes = ((facts.endedAt - facts.startedAt) / 60_000).toFixed(1);
  const streamed = record.outcomes.filter((o) => o.stream).length;
  const traffic = record.outcomes.filter((o) => o.faultId === null).length;

  const faultRows = FAULT_KINDS.map((kind) => {
    const faults = record.faults.filter((f) => f.kind === kind);
    const explainedHere = failures.filter((f) => f.fault?.kind === kind).map((f) => (f.outcome.error === null ? '' : describeError(f.outcome.error)));
    return [
      FAULT_NAMES[kind],
      `${faults.length}/${planned[kind]}`,
      `${faults.filter((f) => f.seen).length}`,
      faults[0]?.expected ?? '—',
      counted(faults.map((f) => (f.classifiedAs === null ? 'nothing' : f.classifiedAs.replace(/ \(\d+\)$/, '')))),
      `${explainedHere.length}${explainedHere.length > 0 ? `: ${counted(explainedHere)}` : ''}`,
    ];
  });
  const lost = failures.filter((f) => f.fault === null);
  const unseen = record.faults.filter((f) => !f.seen || !classifiedRight(f));
  const lines = [
    `llmtray soak, ${record.profile.name} profile: ${record.profile.clients} clients, ${record.swaps} request-driven swaps (${facts.launches} launches), ${minutes} min`,
    facts.machine,
    `requests: ${record.outcomes.length} (${traffic} traffic, ${record.outcomes.length - traffic} by the fault injector; ${streamed} streamed), ${record.outcomes.length - failures.length} answered, ${failures.length} failed, ${failures.length - lost.length} of them explained by an injected fault`,
    '',
    table(['fault', 'injected', 'seen', 'expected', 'classified as', 'client errors it explains'], faultRows),
    '',
    table(['invariant', 'measured', 'verdict'], invariants.map((r) => [r.name, r.measured, r.ok ? 'ok' : 'BROKEN'])),
    '',
    `verdict: ${pass ? 'PASS — every invariant holds' : `FAIL — ${invariants.filter((r) => !r.ok).map((r) => r.name).join('; ')}`}`,
  ];
  if (lost.length > 0) {
    lines.push('', 'requests lost:');
    for (const f of lost) lines.push(`  #${f.outcome.id} ${f.outcome.origin} ${f.outcome.model}${f.outcome.stream ? ' (stream)' : ''}: ${f.outcome.error?.message ?? ''} — ${f.why}`);
  }
  if (unseen.length > 0) {
    lines.push('', 'faults not seen or not classified as expected:');
    for (const f of unseen) lines.push(`  ${f.kind} #${f.id} at ${new Date(f.at).toISOString()}: classified as ${f.classifiedAs ?? 'nothing'}, expected ${f.expected}; ${f.note}`);
  }
  return { text: lines.join('\n'), pass };
}
