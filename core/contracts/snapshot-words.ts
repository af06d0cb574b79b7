// The snapshot in words, for every surface a person reads it on: the tray menu, the dashboard
// and `llmtray status`. Why one file for all three: "loading 40 %, 1.2 s" must read the same in
// the tray as on the dashboard's card, and a placement, a GPU's holders or a plan's reason
// worded three ways would drift apart the first time one of them changes. Pure and free of
// Node, so the renderer may import it (core/contracts is the one part of core/ it may use).
import type { BudgetView, GpuView, LoadProgress, MemoryHolder, ModelLimits, ModelView } from './snapshot.js';
import { formatBytes } from './format-bytes.js';
import type { Placement } from './plan.js';
import { isResident } from './model-status.js';

/**
 * A span for a load's elapsed time: "0.4 s" and "1.2 s" under 10 s (the first seconds are the
 * ones a person watches tick), "12 s" under a minute, then "2 min 5 s", "1 h 3 min".
 * Negative spans (a clock that stepped back) count as zero.
 */
export function elapsedWords(ms: number): string {
  const clamped = Math.max(0, Number.isFinite(ms) ? ms : 0);
  if (clamped < 10_000) return `${(Math.floor(clamped / 100) / 10).toFixed(1)} s`;
  const seconds = Math.floor(clamped / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 === 0 ? `${minutes} min` : `${minutes} min ${seconds % 60} s`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
}

/** How many of `models` are resident (isResident): the one count the dashboard, the tray and the CLI show. */
export function residentCount(models: readonly ModelView[]): number {
  return models.filter((model) => isResident(model.status.state)).length;
}

/** The highest estimated fraction: an estimate never claims a load is done. */
const MAX_ESTIMATE = 0.99;

/**
 * How far a load is at `now`: the engine's own fraction where it reports one (llama.cpp's
 * loader progress), because it is the truth; otherwise the time this load has taken against the
 * time this model's last load took, marked as an estimate and held below 100 % (a load slower
 * than last time has not finished); otherwise null. One rule for the tray, the dashboard and a
 * waiting stream's comments, so they never disagree.
 */
export function loadFractionAt(loading: LoadProgress, now: number): { fraction: number; estimated: boolean } | null {
  if (loading.fraction !== null && Number.isFinite(loading.fraction)) return { fraction: Math.min(1, Math.max(0, loading.fraction)), estimated: false };
  if (loading.expectedMs === null || !(loading.expectedMs > 0)) return null;
  return { fraction: Math.min(MAX_ESTIMATE, Math.max(0, now - loading.startedAt) / loading.expectedMs), estimated: true };
}

/** "40 %", or "~40 %" for an estimate (see loadFractionAt). */
export function loadPercentWords(at: { fraction: number; estimated: boolean }): string {
  return `${at.estimated ? '~' : ''}${Math.floor(at.fraction * 100)} %`;
}

/**
 * "loading 40 %, 1.2 s", "loading ~40 %, 1.2 s" (estimated from the last load), or "loading,
 * 1.2 s" with no basis for a fraction. The tray's menu item and the dashboard's card both say
 * exactly this (issue 13: the same progress where the person looks), and a waiting stream's
 * comments say the same numbers.
 */
export function loadProgressWords(loading: LoadProgress, now: number): string {
  const elapsed = elapsedWords(now - loading.startedAt);
  const at = loadFractionAt(loading, now);
  return at === null ? `loading, ${elapsed}` : `loading ${loadPercentWords(at)}, ${elapsed}`;
}

export interface PlacementContext {
  /** The budget's mode: in 'cpu' mode the policy's one "device" is host RAM, not a GPU. */
  mode: BudgetView['mode'];
  /** The model's block count (ModelView.layerCount), for "30 of 48 layers"; null when unknown. */
  layerCount: number | null;
}

/**
 * Where a running model is, in words: "on GPU 0", "split over GPU 0 + 1, 20/12 layers",
 * "split over mixed GPUs 0 + 1, 20/12 layers", "partial: 30 of 48 layers on GPU 0, 6.2 GiB in
 * RAM", "on the CPU, 6.2 GiB in RAM". In 'cpu' mode every model is "on the CPU": the policy
 * places it on its one pool, which is host RAM there, and "GPU 0" would be a lie.
 */
export function placementWords(placement: Placement, context: PlacementContext): string {
  if (context.mode === 'cpu' || placement.kind === 'cpu' || placement.devices.length === 0) {
    return placement.hostBytes > 0 && context.mode !== 'cpu' ? `on the CPU, ${formatBytes(placement.hostBytes)} in RAM` : 'on the CPU';
  }
  const indices = placement.devices.map((d) => d.index).join(' + ');
  const layers = placement.devices.map((d) => d.layers).join('/');
  switch (placement.kind) {
    case 'gpu':
      return `on GPU ${indices}`;
    case 'split':
      return `split over GPU ${indices}, ${layers} layers`;
    case 'mixed':
      return `split over mixed GPUs ${indices}, ${layers} layers`;
    case 'partial': {
      const onDevices = placement.devices.reduce((sum, d) => sum + d.layers, 0);
      const of = context.layerCount !== null && context.layerCount >= onDevices ? ` of ${context.layerCount}` : '';
      const perDevice = placement.devices.length > 1 ? ` (${layers})` : '';
      const parts = [`partial: ${onDevices}${of} layers on GPU ${indices}${perDevice}`];
      if (placement.cpuMoeLayers > 0) parts.push(`the experts of ${placement.cpuMoeLayers} on the CPU`);
      if (placement.hostBytes > 0) parts.push(`${formatBytes(placement.hostBytes)} in RAM`);
      return parts.join(', ');
    }
  }
}

/**
 * A plan's reason as lines a person can scan: what the model needs, then each GPU's room
 * ("GPU 0 RTX 4090: 22 GiB budget, 18 GiB held by pinned qwen-32b (18 GiB), 4 GiB free"), then
 * each further note, and the verdict (": it fits only if a pinned model is unpinned") last on
 * its own. The policy joins those clauses with "; " (core/policy/reasons.ts, place.ts) and none
 * contains one, so splitting there gives back its own parts; a sentence without "; " is one line.
 */
export function reasonLines(reason: string): string[] {
  const clauses = reason.split('; ').filter((clause) => clause !== '');
  const last = clauses.pop();
  if (last === undefined) return [];
  const verdict = /^(.+): (it [^:]+)$/.exec(last);
  return verdict === null ? [...clauses, last] : [...clauses, verdict[1] as string, verdict[2] as string];
}

/** One holder of a budget as a person reads it: a model, or the draft that rides with one. */
export interface HeldPart {
  kind: 'model' | 'draft';
  modelId: string;
  bytes: number;
  /** For a draft: the model it rides with, when the catalog says so. */
  draftOf: string | null;
}

/**
 * The model and draft holders of one budget (a GPU's, or the whole one in 'cpu' mode), in the
 * order a picture or a list shows them: each model as the snapshot orders them (largest first),
 * its draft right after it; a draft whose model holds nothing here comes last. Other programs
 * and the reserve are left out: each surface words those itself.
 */
export function heldParts(holders: readonly MemoryHolder[], models: readonly ModelView[]): HeldPart[] {
  const parts: HeldPart[] = [];
  const drafts = holders.filter((holder) => holder.kind === 'draft');
  const placed = new Set<MemoryHolder>();
  for (const holder of holders) {
    if (holder.kind !== 'model') continue;
    const modelId = holder.modelId ?? 'unknown model';
    parts.push({ kind: 'model', modelId, bytes: holder.bytes, draftOf: null });
    const draftId = models.find((m) => m.id === modelId)?.draftId ?? null;
    for (const draft of drafts) {
      if (placed.has(draft) || draftId === null || draft.modelId !== draftId) continue;
      placed.add(draft);
      parts.push({ kind: 'draft', modelId: draftId, bytes: draft.bytes, draftOf: modelId });
    }
  }
  for (const draft of drafts) {
    if (placed.has(draft)) continue;
    const draftOf = models.find((m) => m.draftId !== null && m.draftId === draft.modelId)?.id ?? null;
    parts.push({ kind: 'draft', modelId: draft.modelId ?? 'draft', bytes: draft.bytes, draftOf });
  }
  return parts;
}

/** "demo-chat 5 GiB", "demo-draft 1 GiB (draft of demo-chat)". */
export function heldPartWords(part: HeldPart): string {
  const size = formatBytes(part.bytes);
  if (part.kind === 'model') return `${part.modelId} ${size}`;
  return part.draftOf === null ? `${part.modelId} ${size} (draft)` : `${part.modelId} ${size} (draft of ${part.draftOf})`;
}

/**
 * "GPU 0 NVIDIA GeForce RTX 4090: 6.9 GiB of its 12 GiB budget held, 5.1 GiB free": what our
 * models hold there by the plan's own figures (the same the bar draws and the reasons count).
 */
export function gpuSummaryWords(gpu: GpuView): string {
  const held = gpu.holders.filter((h) => h.kind === 'model' || h.kind === 'draft').reduce((sum, h) => sum + h.bytes, 0);
  const left = gpu.budgetBytes - held;
  const rest = left >= 0 ? `${formatBytes(left)} free` : `${formatBytes(-left)} over it`;
  const engine = gpu.engineDevice === undefined ? '' : ` (${gpu.engineDevice})`;
  return `GPU ${gpu.index} ${gpu.name}${engine}: ${formatBytes(held)} of its ${formatBytes(gpu.budgetBytes)} budget held, ${rest}`;
}

/**
 * How the config's `budget.limit` bears on the budget, or null when none is set: "set by the
 * config's limit" when the limit is the budget (saying the number twice tells nothing), "below
 * the config's limit of 40 GiB" when the machine gives less than the limit allows.
 */
export function limitWords(budget: Pick<BudgetView, 'budgetBytes' | 'limitBytes'>): string | null {
  const { limitBytes, budgetBytes } = budget;
  if (limitBytes === null) return null;
  if (formatBytes(limitBytes) === formatBytes(budgetBytes)) return "set by the config's limit";
  return budgetBytes < limitBytes ? `below the config's limit of ${formatBytes(limitBytes)}` : `the config's limit is ${formatBytes(limitBytes)}`;
}

/**
 * The first line of `text`, whitespace collapsed, cut at a word to at most `max` characters
 * with "…": for a llama.cpp error or a reason where a line has no room for all of it (a menu,
 * a card); the full text stays one step away there.
 */
export function shorten(text: string, max: number): string {
  const line = (text.split('\n').find((l) => l.trim() !== '') ?? '').replace(/\s+/g, ' ').trim();
  if (line.length <= max) return line;
  const cut = line.slice(0, max - 1);
  const atWord = cut.lastIndexOf(' ');
  return `${(atWord > max / 2 ? cut.slice(0, atWord) : cut).trimEnd()}…`;
}

/**
 * The resident models whose engines run `model` as their draft now; empty when none does. A
 * draft is loaded inside its target's engine (llama.cpp's speculative decoding): it has no server
 * and no state of its own, so its card and its `llmtray status` row said "idle", "last used
 * never" while it decoded every token of its target's answers (issue 35). Only while the budget
 * counts its bytes as a draft: a target launched without it (a level that drops it) does not.
 */
export function draftingFor(model: ModelView, snapshot: { models: readonly ModelView[]; budget: Pick<BudgetView, 'holders'> }): ModelView[] {
  if (isResident(model.status.state)) return [];
  if (!snapshot.budget.holders.some((holder) => holder.kind === 'draft' && holder.modelId === model.id)) return [];
  return snapshot.models.filter((target) => target.draftId === model.id && isResident(target.status.state));
}

/** The bytes `holders` count for `modelId` as `kind` (a model's own share, or a draft's in its target's engine). */
export function heldBytes(holders: readonly MemoryHolder[], modelId: string, kind: 'model' | 'draft'): number {
  return holders.filter((holder) => holder.kind === kind && holder.modelId === modelId).reduce((sum, holder) => sum + holder.bytes, 0);
}

/** "Over budget 15.4 MiB" when the budget's holders hold more than it, else null: the dashboard's words, on every surface. */
export function overBudgetWords(budget: Pick<BudgetView, 'usedBytes' | 'budgetBytes'>): string | null {
  return budget.usedBytes > budget.budgetBytes ? `Over budget ${formatBytes(budget.usedBytes - budget.budgetBytes)}` : null;
}

/** What the warm spare is, beside its bytes: the engine started ahead with no model, which the next launch adopts. */
export const SPARE_WORDS = 'an engine with no model yet; the next launch adopts it';

/**
 * A model's limits on requests in the config's own words, so a person finds the field to change:
 * "parallel 2, queueLimit 4"; null when it has none (the CLI and the dashboard then say nothing).
 */
export function requestLimitsWords(limits: ModelLimits): string | null {
  const parts = [
    ...(limits.parallel === undefined ? [] : [`parallel ${limits.parallel}`]),
    ...(limits.queueLimit === undefined ? [] : [`queueLimit ${limits.queueLimit}`]),
  ];
  return parts.length === 0 ? null : parts.join(', ');
}
