// AMD GPUs through amd-smi, the tool ROCm ships from 6.x on (rocm-smi is its deprecated
// predecessor, read by rocm-smi.ts when amd-smi is missing).
//
// Two calls, because no single one gives both halves:
// - `amd-smi static --json` names each GPU and gives its PCI address (asic.market_name,
//   bus.bdf). It does not change while the machine runs, so the reader asks once.
// - `amd-smi metric --mem-usage --json` gives total, used and free VRAM per GPU, keyed by
//   amd-smi's GPU index (newer versions add bus.bdf, which wins when present).
// The PCI address is the key that matches these cards to lspci's and to our engines' DRM
// clients (drm-fdinfo.ts), as nvidia-smi's bus id does for NVIDIA.
//
// Why not `amd-smi process` for what our engines hold: it lists every process under every
// GPU with one process-wide figure (AMD's own note: "amd-smi displays processes as running for
// all GPUs", ROCm/legacy-rocm-build#2292; a captured 4-GPU vLLM box shows each worker's 29 GB
// under all four cards). Per-GPU attribution comes from the kernel's DRM fdinfo instead.
//
// Output shapes differ by version: 24.x prints a bare array, 25.x and later wrap it in
// {"gpu_data": [...]}; fields are {"value", "unit"} objects or "N/A". Both are read.
import { canonicalBusAddress } from './normalize-si.js';
import { bytesOf, jsonDocumentIn } from './tool-json.js';
import type { MeasuredCard } from './merge-devices.js';

export const AMD_SMI_STATIC_ARGS = ['static', '--json'] as const;
export const AMD_SMI_METRIC_ARGS = ['metric', '--mem-usage', '--json'] as const;

/** One GPU as `amd-smi static` describes it. */
export interface AmdSmiStatic {
  /** amd-smi's own index, which `metric` uses too. */
  gpu: number;
  busAddress: string | null;
  name: string;
  /** vram.size; null when "N/A". */
  totalBytes: number | null;
}

/** One GPU's memory as `amd-smi metric --mem-usage` reports it. */
export interface AmdSmiMemory {
  gpu: number;
  /** Present in newer versions' metric output; when present it is the key, not `gpu`. */
  busAddress: string | null;
  totalBytes: number | null;
  /** total − free (so reserved memory counts), else used_vram; null when neither is given. */
  usedBytes: number | null;
}

/** Parses `amd-smi static --json`. Throws when the output holds no JSON. */
export function parseAmdSmiStatic(stdout: string): AmdSmiStatic[] {
  return entries(stdout, 'amd-smi static').map((entry, i) => {
    const asic = record(entry['asic']);
    const bus = record(entry['bus']);
    const vram = record(entry['vram']);
    const gpu = indexOf(entry, i);
    const marketName = text(asic['market_name']);
    return {
      gpu,
      busAddress: canonicalBusAddress(text(bus['bdf'])),
      name: marketName === '' ? `AMD GPU ${gpu}` : marketName,
      totalBytes: bytesOf(vram['size'], 'MB'),
    };
  });
}

/** Parses `amd-smi metric --mem-usage --json` (or a full `amd-smi metric --json`). Throws when the output holds no JSON. */
export function parseAmdSmiMetric(stdout: string): AmdSmiMemory[] {
  return entries(stdout, 'amd-smi metric').map((entry, i) => {
    const mem = record(entry['mem_usage']);
    const totalBytes = bytesOf(mem['total_vram'], 'MB');
    const freeBytes = bytesOf(mem['free_vram'], 'MB');
    const reportedUsed = bytesOf(mem['used_vram'], 'MB');
    let usedBytes: number | null = null;
    if (totalBytes !== null && freeBytes !== null) usedBytes = Math.max(0, totalBytes - freeBytes);
    else if (totalBytes !== null && reportedUsed !== null) usedBytes = Math.min(reportedUsed, totalBytes);
    return { gpu: indexOf(entry, i), busAddress: canonicalBusAddress(text(record(entry['bus'])['bdf'])), totalBytes, usedBytes };
  });
}

/**
 * Each static card with its memory: matched by PCI address when the metric output has one,
 * else by amd-smi's index. A card with no memory entry is listed unmeasured (used null), so
 * the budget says it cannot be measured rather than dropping it silently.
 */
export function joinAmdSmi(cards: readonly AmdSmiStatic[], memory: readonly AmdSmiMemory[]): MeasuredCard[] {
  return cards.map((card) => {
    const mem =
      memory.find((m) => m.busAddress !== null && m.busAddress === card.busAddress) ??
      memory.find((m) => m.busAddress === null && m.gpu === card.gpu);
    const totalBytes = mem?.totalBytes ?? card.totalBytes;
    return { busAddress: card.busAddress, name: card.name, totalBytes, usedBytes: totalBytes === null ? null : (mem?.usedBytes ?? null) };
  });
}

function entries(stdout: string, tool: string): Record<string, unknown>[] {
  const doc = jsonDocumentIn(stdout, tool);
  const list = Array.isArray(doc) ? doc : record(doc)['gpu_data'];
  if (!Array.isArray(list)) throw new Error(`${tool} printed JSON without a GPU list`);
  return list.map(record);
}

function indexOf(entry: Record<string, unknown>, position: number): number {
  const gpu = entry['gpu'];
  return typeof gpu === 'number' && Number.isInteger(gpu) && gpu >= 0 ? gpu : position;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}

function text(value: unknown): string {
  return typeof value === 'string' && value.trim().toUpperCase() !== 'N/A' ? value.trim() : '';
}
