// Human output for the CLI: aligned tables and the few words each state needs. The words for
// progress, placement, holders and reasons are the tray's and the dashboard's own
// (core/contracts/snapshot-words.ts), so `llmtray status` reads like the other two.
import type { BudgetView, GpuView, ModelView, Snapshot } from '../contracts/snapshot.js';
import {
  draftingFor,
  gpuSummaryWords,
  heldBytes,
  heldPartWords,
  heldParts,
  limitWords,
  loadProgressWords,
  overBudgetWords,
  placementWords,
  reasonLines,
  requestLimitsWords,
  residentCount,
  SPARE_WORDS,
} from '../contracts/snapshot-words.js';
import { attentionWord, isResident } from '../contracts/model-status.js';
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
  'smaller-context': 'smaller context',
  partial: 'part on CPU',
  minimal: 'CPU only',
};

function levelWords(model: ModelView): string {
  const level = model.status.level;
  return level === null ? '' : LEVEL_WORDS[level];
}

/** Requests in flight, against its slots where it has a `parallel` ("1 of 2"): how near it is to making requests wait. */
function inFlightWords(model: ModelView): string {
  const { parallel } = model.limits;
  if (parallel !== undefined) return `${model.inFlight} of ${parallel}`;
  return model.inFlight > 0 ? String(model.inFlight) : '';
}

function note(model: ModelView, now: number): string {
  const s = model.status;
  if (s.state === 'quarantined' || s.state === 'failed') return s.recovery.lastError ?? s.next ?? '';
  if (s.state === 'fallback') return `answered by ${s.servedBy ?? model.fallbackId ?? '?'}`;
  // The reason has a section of its own below, a line per GPU; a table cell would run off the screen.
  if (s.unschedulableReason !== null) return 'left out: see below';
  if (model.loading !== null) return loadProgressWords(model.loading, now);
  return s.next ?? '';
}

/**
 * The memory line, then what holds it, a line each so the numbers add up: each model, its draft,
 * and the warm spare (counted in "used" but named nowhere in the CLI, issue 35). With GPUs each
 * card lists its own holders (gpuLines) and only a spare is listed here. Over the budget, the
 * dashboard's words.
 */
function memoryLines(budget: BudgetView, models: readonly ModelView[]): string[] {
  const where = budget.mode === 'cpu' ? 'host RAM, no GPU' : budget.mode === 'unified' ? 'unified memory' : `${budget.gpus.length} GPU${budget.gpus.length === 1 ? '' : 's'}`;
  const limit = limitWords(budget);
  const lines = [`memory    ${bytes(budget.usedBytes)} of ${bytes(budget.budgetBytes)} budget (${where}${limit === null ? '' : `; ${limit}`})`];
  const over = overBudgetWords(budget);
  if (over !== null) lines.push(`          ${over}`);
  const rows: string[][] = [];
  if (budget.gpus.length === 0) {
    for (const part of heldParts(budget.holders, models)) {
      rows.push([part.modelId, bytes(part.bytes), part.kind === 'model' ? '' : part.draftOf === null ? 'draft' : `draft of ${part.draftOf}, in its engine`]);
    }
  }
  const spare = budget.holders.filter((h) => h.kind === 'spare').reduce((sum, h) => sum + h.bytes, 0);
  if (spare > 0) rows.push(['warm spare', bytes(spare), SPARE_WORDS]);
  if (rows.length > 0) lines.push(...table(['', '', ''], rows).split('\n').slice(1).map((row) => `          ${row}`));
  return lines;
}

/** Two lines per GPU: what our models hold of its budget, and who holds it (each draft after its model). */
function gpuLines(gpu: GpuView, models: readonly ModelView[]): string[] {
  const holders = heldParts(gpu.holders, models).map(heldPartWords);
  const others = gpu.holders.filter((h) => h.kind === 'other-programs').reduce((sum, h) => sum + h.bytes, 0);
  if (others > 0) holders.push(`other programs ${bytes(others)}`);
  return [
    `          ${gpuSummaryWords(gpu)}`,
    ...(gpu.warning === undefined ? [] : [`            warning: ${gpu.warning}`]),
    ...(holders.length > 0 ? [`            ${holders.join(', ')}`] : []),
  ];
}

/** Each model the last plan left out, its reason a line per GPU (as the dashboard shows it). */
function leftOutLines(snapshot: Snapshot): string[] {
  const leftOut = snapshot.models.filter((m) => m.status.unschedulableReason !== null);
  if (leftOut.length === 0) return [];
  const lines = ['', 'left out by the last plan:'];
  for (const m of leftOut) {
    const strict = snapshot.plan?.unschedulable.find((entry) => entry.modelId === m.id)?.strict === true;
    lines.push(`  - ${m.id}${strict ? ' (refused until a pin goes or the budget grows)' : ' (waits for room)'}`);
    for (const line of reasonLines(m.status.unschedulableReason ?? '')) lines.push(`    ${line}`);
  }
  return lines;
}

/**
 * Where apps connect: this machine's endpoint, each network one, and whether /v1 asks for a
 * client key (the names of the keys, never the keys: the person looks them up in the config).
 */
function endpointLines(snapshot: Snapshot): string[] {
  const lines = [`endpoint  ${snapshot.endpoint}`, ...snapshot.networkEndpoints.map((url) => `network   ${url}`)];
  if (snapshot.keysRequired) {
    const names = snapshot.clientKeyNames;
    lines.push(names.length === 0 ? 'keys      none left in listen.clientKeys: /v1 serves nobody' : `keys      apps send one of listen.clientKeys (${names.join(', ')})`);
  }
  return lines;
}

/**
 * What to do when there is no model: the same words from `llmtray serve` (which once printed only
 * "serving 0 model(s)", issue 35) and `llmtray status`.
 */
export function noModelsText(snapshot: Pick<Snapshot, 'modelDirs' | 'configPath'>): string {
  const lines =
    snapshot.modelDirs.length === 0
      ? [`No models yet. List them under models: in ${snapshot.configPath}`]
      : ['No models yet. Put GGUF files in one of these folders (picked up while llmtray runs):', ...snapshot.modelDirs.map((dir) => `  ${dir}`), `or list them in ${snapshot.configPath}`];
  return [
    ...lines,
    // The quickest way to a first model: one line, from Hugging Face into its cache, which discovery reads.
    'Or pull one from Hugging Face: llmtray pull hf.co/bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M',
    'To try llmtray with small generated models: llmtray serve --demo',
  ].join('\n');
}

/**
 * One model's row. MEMORY is what it holds of the budget now (the figures the memory lines add
 * up), or what it would need when it holds nothing. A draft running in its target's engine is
 * "drafting", in flight with its target: "idle" was said of one that decoded every answer (issue 35).
 */
function modelRow(m: ModelView, snapshot: Snapshot, placement: ((m: ModelView) => string) | null, now: number): string[] {
  const targets = draftingFor(m, snapshot);
  if (targets.length > 0) {
    const inFlight = targets.reduce((sum, t) => sum + t.inFlight, 0);
    const names = targets.map((t) => t.id).join(' and ');
    return [
      m.id,
      'drafting',
      '',
      m.pinned ? 'yes' : '',
      inFlight > 0 ? String(inFlight) : '',
      bytes(heldBytes(snapshot.budget.holders, m.id, 'draft')),
      ...(placement === null ? [] : ['']),
      `for ${names}, in ${targets.length === 1 ? 'its' : 'their'} engine${inFlight > 0 ? '; in use now' : ''}`,
    ];
  }
  const held = heldBytes(snapshot.budget.holders, m.id, 'model');
  const memory = isResident(m.status.state) && held > 0 ? bytes(held) : `needs ${bytes(m.estimateBytes[m.status.level ?? 'full'])}`;
  return [
    m.id,
    m.status.state,
    levelWords(m),
    m.pinned ? 'yes' : '',
    inFlightWords(m),
    memory,
    ...(placement === null ? [] : [placement(m)]),
    note(m, now),
  ];
}

/**
 * "needs attention: big (quarantined), chat (degraded)": the models the tray counts as problems
 * and the dashboard lists under Recovery, by the same predicate; null when none does. Its own
 * line, since a busy degraded model's STATE column says only "active".
 */
function attentionLine(models: readonly ModelView[]): string | null {
  const named = models.flatMap((m) => {
    const word = attentionWord(m.status);
    return word === null ? [] : [`${m.id} (${word})`];
  });
  return named.length === 0 ? null : `needs attention: ${named.join(', ')}`;
}

/** `llmtray status`. `now` (epoch ms) is for a load's elapsed time. */
export function statusText(snapshot: Snapshot, now = Date.now()): string {
  const b = snapshot.budget;
  const gone = (b.goneGpus ?? []).map((gpu) => `          gone: ${gpu.reason}`);
  const lines = [...endpointLines(snapshot), ...memoryLines(b, snapshot.models), ...b.gpus.flatMap((gpu) => gpuLines(gpu, snapshot.models)), ...gone, ''];
  if (snapshot.models.length === 0) {
    lines.push(noModelsText(snapshot));
  } else {
    // Without a GPU every model is on the CPU (the memory line says so): no column for that.
    const placed = b.mode !== 'cpu';
    const placement = placed ? (m: ModelView): string => (m.placement === null ? '' : placementWords(m.placement, { mode: b.mode, layerCount: m.layerCount })) : null;
    // The count the dashboard's header and the tray's tooltip show, in their words.
    lines.push(`${residentCount(snapshot.models)} of ${snapshot.models.length} resident`);
    const attention = attentionLine(snapshot.models);
    if (attention !== null) lines.push(attention);
    lines.push(table(['MODEL', 'STATE', 'LEVEL', 'PINNED', 'IN FLIGHT', 'MEMORY', ...(placed ? ['PLACEMENT'] : []), 'NOTE'], snapshot.models.map((m) => modelRow(m, snapshot, placement, now))));
    lines.push(...leftOutLines(snapshot));
  }
  for (const error of snapshot.configErrors) lines.push(`config: ${error}`);
  for (const lost of snapshot.lostOutputs) lines.push(`daemon ${lost.stream} lost (${lost.code}): its log no longer reaches there; models' logs: llmtray logs ID`);
  return lines.join('\n');
}

export function modelsText(snapshot: Snapshot): string {
  return table(
    ['MODEL', 'ALIASES', 'ENGINE', 'CONTEXT', 'LIMITS', 'ESTIMATE', 'DRAFT', 'FALLBACK', 'PATH'],
    snapshot.models.map((m) => [
      m.id,
      m.aliases.join(','),
      m.engine,
      String(m.contextTokens),
      requestLimitsWords(m.limits) ?? '',
      bytes(m.estimateBytes.full),
      m.draftId ?? '',
      m.fallbackId ?? '',
      m.path,
    ]),
  );
}
