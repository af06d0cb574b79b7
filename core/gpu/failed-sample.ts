// A vendor tool that answered before and fails now is a failed sample, not a machine without
// those GPUs.
//
// Why: systeminformation swallows nvidia-smi's failure ("Failed to initialize NVML:
// Driver/library version mismatch", exit 18, after a driver update without a reboot) and returns
// lspci's cards without figures, which read as "no GPU": the budget fell to CPU mode and every
// model on the cards was stopped and relaunched on the CPU. A probe whose vendor-measured card
// lost its figures (or vanished from the listing) therefore rejects, as the AMD reader does when
// amd-smi fails after answering (amd-source.ts), and the live budget keeps the last good sample
// (live-budget.ts says for how long it stays silent about it).
import type { GpuDevice, GpuSource } from './compute-budget.js';

/** The tools whose answers are the only measure of their vendor's cards. */
const VENDOR_TOOLS: ReadonlySet<GpuSource> = new Set(['nvidia-smi', 'amd-smi', 'rocm-smi']);

/** A probe that lost a vendor tool's figures for cards it measured before. */
export class FailedSample extends Error {
  constructor(
    message: string,
    /** The cards whose figures are missing, by canonical PCI address. */
    readonly busAddresses: readonly string[],
  ) {
    super(message);
    this.name = 'FailedSample';
  }
}

/** The cards a vendor tool measured in `before` that `now` has no figures for (matched by PCI address). Pure. */
export function lostMeasurements(before: readonly GpuDevice[], now: readonly GpuDevice[]): GpuDevice[] {
  return before.filter((card) => {
    if (card.measuredBy == null || !VENDOR_TOOLS.has(card.measuredBy) || card.busAddress === null) return false;
    const same = now.find((g) => g.busAddress === card.busAddress);
    return same === undefined || same.measuredBy !== card.measuredBy;
  });
}

/** The error for lost cards: which tool, which cards, and what the tool said when asked (`said`, null when it answered). */
export function failedSample(lost: readonly GpuDevice[], said: string | null): FailedSample {
  const tools = [...new Set(lost.map((g) => g.measuredBy))].join(' and ');
  const cards = lost.map((g) => `GPU ${g.index} ${g.name} (${g.busAddress ?? 'no address'})`).join(', ');
  const why = said === null ? 'it no longer reports them' : said;
  return new FailedSample(`${tools} answered before and gives no figures now for ${cards}: ${why}`, lost.flatMap((g) => (g.busAddress === null ? [] : [g.busAddress])));
}
