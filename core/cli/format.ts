// Human output for the CLI: aligned tables and the few words each state needs.
import type { ModelView, Snapshot } from '../contracts/snapshot.js';
import { formatBytes as bytes } from '../contracts/format-bytes.js';
import type { LaunchLevel } from '../contracts/launch-level.js';

export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** A record, not a chain of ternaries, so a new level is a compile error here rather than a wrong word. */
const LEVEL_WORDS: Readonly<Record<LaunchLevel, string>> = {
  full: 'full',
  degraded: 'smaller context',
  partial: 'part on CPU',
  minimal: 'CPU only',
};

function levelWords(model: ModelView): string {
  const level = model.status.level;
  return level === null ? '' : LEVEL_WORDS[level];
}

function note(model: ModelView): string {
  const s = model.status;
  if (s.state === 'quarantined' || s.state === 'failed') return s.recovery.lastError ?? s.next ?? '';
  if (s.state === 'fallback') return `answered by ${s.servedBy ?? model.fallbackId ?? '?'}`;
  if (s.unschedulableReason !== null) return s.unschedulableReason;
  if (model.loading !== null) return model.loading.fraction === null ? 'loading' : `loading ${Math.round(model.loading.fraction * 100)} %`;
  return s.next ?? '';
}

export function statusText(snapshot: Snapshot): string {
  const b = snapshot.budget;
  const lines = [
    `endpoint  ${snapshot.endpoint}`,
    `memory    ${bytes(b.usedBytes)} of ${bytes(b.budgetBytes)} budget (${b.mode === 'cpu' ? 'host RAM, no GPU' : b.mode === 'unified' ? 'unified memory' : `${b.gpus.length} GPU${b.gpus.length === 1 ? '' : 's'}`})${b.limitBytes === null ? '' : `, capped at ${bytes(b.limitBytes)}`}`,
    '',
  ];
  if (snapshot.models.length === 0) {
    lines.push(`No models yet. Put GGUF files in ${snapshot.modelDirs.join(', ') || 'a model folder'} or list them in ${snapshot.configPath}.`);
  } else {
    lines.push(
      table(
        ['MODEL', 'STATE', 'LEVEL', 'PINNED', 'IN FLIGHT', 'MEMORY', 'NOTE'],
        snapshot.models.map((m) => [
          m.id,
          m.status.state,
          levelWords(m),
          m.pinned ? 'yes' : '',
          m.inFlight > 0 ? String(m.inFlight) : '',
          bytes(m.measuredBytes ?? m.estimateBytes[m.status.level ?? 'full']),
          note(m),
        ]),
      ),
    );
  }
  for (const error of snapshot.configErrors) lines.push(`config: ${error}`);
  return lines.join('\n');
}

export function modelsText(snapshot: Snapshot): string {
  return table(
    ['MODEL', 'ALIASES', 'ENGINE', 'CONTEXT', 'ESTIMATE', 'DRAFT', 'FALLBACK', 'PATH'],
    snapshot.models.map((m) => [
      m.id,
      m.aliases.join(','),
      m.engine,
      String(m.contextTokens),
      bytes(m.estimateBytes.full),
      m.draftId ?? '',
      m.fallbackId ?? '',
      m.path,
    ]),
  );
}
