// Turns one device's memory holders into the segments of the stacked bar, in display order:
// each model followed by its draft, then free memory, then the reserve and other programs.
// Why this order: our models start at the left edge, so the budget line (drawn at
// budgetBytes from the left) falls where our memory would have to stop, and free memory sits
// right before it.
//
// Display arithmetic only: the bytes are the snapshot's; nothing here decides what fits.
import type { GpuView, MemoryHolder, ModelView, BudgetView } from '../../../core/contracts/snapshot.js';
import { heldParts, type HeldPart } from '../../../core/contracts/snapshot-words.js';
import { formatBytes } from '../format/format.js';

export type SegmentKind = MemoryHolder['kind'] | 'free';

export interface Segment {
  key: string;
  kind: SegmentKind;
  /** What the segment is, as a person reads it: "demo-chat", "Other programs". */
  label: string;
  bytes: number;
  /** Palette slot for model and draft segments (stable per catalog position), else null. */
  series: number | null;
  /** For model segments: the model's own estimate at its level, and the measured figure once known. */
  estimateBytes: number | null;
  measuredBytes: number | null;
  /** For drafts: the model the draft rides with. */
  draftOf: string | null;
}

/** One bar: a GPU, or host RAM when the budget is in 'cpu' mode. */
export interface Device {
  key: string;
  title: string;
  subtitle: string;
  /** Why the figures are not fresh (the GPU's vendor tool keeps failing); null when they are. */
  warning: string | null;
  totalBytes: number;
  budgetBytes: number;
  segments: Segment[];
}

export const SERIES_COUNT = 8;

/** A stable palette slot per model: its position in the catalog. */
export function seriesOf(modelId: string, models: readonly ModelView[]): number {
  const index = models.findIndex((model) => model.id === modelId);
  return (index === -1 ? hash(modelId) : index) % SERIES_COUNT;
}

export function gpuDevice(gpu: GpuView, models: readonly ModelView[]): Device {
  const held = heldSegments(gpu.holders, models);
  const sumOf = (kind: MemoryHolder['kind']): number =>
    gpu.holders.filter((holder) => holder.kind === kind).reduce((sum, holder) => sum + holder.bytes, 0);
  const rest = [plainSegment('reserve', 'Reserve', sumOf('reserve')), plainSegment('other-programs', 'Other programs', sumOf('other-programs'))];
  const heldBytes = [...held, ...rest].reduce((sum, segment) => sum + segment.bytes, 0);
  const free = plainSegment('free', 'Free', Math.max(0, gpu.totalBytes - heldBytes));
  return {
    key: `gpu-${gpu.index}`,
    title: `GPU ${gpu.index}`,
    // The engine's own name beside the model name: what its log and the launch's --device say.
    subtitle: gpu.engineDevice === undefined ? gpu.name : `${gpu.name} (${gpu.engineDevice})`,
    warning: gpu.warning ?? null,
    totalBytes: gpu.totalBytes,
    budgetBytes: gpu.budgetBytes,
    segments: [...held, free, ...rest].filter((segment) => segment.bytes > 0 || segment.kind === 'free'),
  };
}

/**
 * The model and draft holders as segments, each draft right after the model it rides with (the
 * tray and the CLI list them in the same order), then the warm spare.
 */
function heldSegments(holders: readonly MemoryHolder[], models: readonly ModelView[]): Segment[] {
  const held = heldParts(holders, models).map((part) => (part.kind === 'model' ? modelSegment(part, models) : draftSegment(part, models)));
  const spare = holders.filter((holder) => holder.kind === 'spare').reduce((sum, holder) => sum + holder.bytes, 0);
  if (spare > 0) held.push(plainSegment('spare', 'Warm spare', spare));
  return held;
}

/**
 * Host RAM as one bar, for 'cpu' mode where the snapshot has no GPUs: what the budget's
 * holders hold (each resident model and its draft), what else the machine uses, and what is
 * available. When a configured limit caps the budget far below the machine's RAM (the demo's
 * 210 MiB of 23 GiB), the bar is the budget itself: drawn to the whole RAM, the models would be
 * a sliver nobody can read.
 */
export function hostDevice(budget: BudgetView, models: readonly ModelView[]): Device {
  const held = heldSegments(budget.holders, models);
  const ours = held.reduce((sum, segment) => sum + segment.bytes, 0);
  const capped = budget.limitBytes !== null && budget.limitBytes < budget.hostTotalBytes;
  if (capped) {
    return {
      key: 'host',
      title: 'Host memory',
      // The limit's number is the Budget total's, right above: said once (issue 13).
      subtitle: `No GPU: models run on the CPU, within the config's limit (the machine has ${formatBytes(budget.hostTotalBytes)})`,
      warning: null,
      totalBytes: Math.max(budget.budgetBytes, ours),
      budgetBytes: budget.budgetBytes,
      segments: [...held, plainSegment('free', 'Free', Math.max(0, budget.budgetBytes - ours))].filter(
        (segment) => segment.bytes > 0 || segment.kind === 'free',
      ),
    };
  }
  const others = Math.max(0, budget.hostTotalBytes - budget.hostAvailableBytes - ours);
  return {
    key: 'host',
    title: 'Host memory',
    subtitle: 'No GPU: models run on the CPU',
    warning: null,
    totalBytes: budget.hostTotalBytes,
    budgetBytes: budget.budgetBytes,
    segments: [
      ...held,
      plainSegment('free', 'Free', Math.max(0, budget.hostTotalBytes - ours - others)),
      plainSegment('other-programs', 'Other programs', others),
    ].filter((segment) => segment.bytes > 0 || segment.kind === 'free'),
  };
}

/** The bars to draw for a snapshot's budget. */
export function deviceBarsOf(budget: BudgetView, models: readonly ModelView[]): Device[] {
  return budget.gpus.length === 0 ? [hostDevice(budget, models)] : budget.gpus.map((gpu) => gpuDevice(gpu, models));
}

function modelSegment(part: HeldPart, models: readonly ModelView[]): Segment {
  const model = models.find((m) => m.id === part.modelId);
  const level = model?.status.level ?? 'full';
  return {
    key: `model-${part.modelId}`,
    kind: 'model',
    label: part.modelId,
    bytes: part.bytes,
    series: seriesOf(part.modelId, models),
    estimateBytes: model === undefined ? null : model.estimateBytes[level],
    measuredBytes: model?.measuredBytes ?? null,
    draftOf: null,
  };
}

function draftSegment(part: HeldPart, models: readonly ModelView[]): Segment {
  return {
    key: `draft-${part.modelId}-${part.draftOf ?? ''}`,
    kind: 'draft',
    label: part.modelId,
    bytes: part.bytes,
    series: seriesOf(part.draftOf ?? part.modelId, models),
    estimateBytes: null,
    measuredBytes: null,
    draftOf: part.draftOf,
  };
}

function plainSegment(kind: 'free' | 'spare' | 'reserve' | 'other-programs', label: string, bytes: number): Segment {
  return { key: kind, kind, label, bytes, series: null, estimateBytes: null, measuredBytes: null, draftOf: null };
}

function hash(text: string): number {
  let h = 0;
  for (let i = 0; i < text.length; i++) h = (h * 31 + text.charCodeAt(i)) >>> 0;
  return h;
}
