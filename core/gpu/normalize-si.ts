// systeminformation's graphics and memory answers, turned into GpuDevice and HostMemory.
//
// Pure, so every quirk below is a table test rather than a machine we do not have:
// - memoryTotal / memoryUsed / memoryFree come from nvidia-smi in MiB (lib/graphics.js,
//   `--format=csv,noheader,nounits`), and si copies a field only when it is truthy: a 0
//   (an idle card's "used", a full card's "free") arrives as a missing field.
// - `vram` on Linux is the largest PCI memory region lspci shows: the BAR aperture
//   (256 MiB, or the whole card with resizable BAR), not memory anyone can measure; only
//   nvidia-smi's memoryTotal overwrites it with the truth. So `vram` alone never makes a
//   device measurable.
// - On Apple Silicon the GPU reports no memory of its own (vramDynamic, bus 'Built-In').

import type { GpuDevice, HostMemory } from './compute-budget.js';

const MIB = 1024 * 1024;

/** The part of si's GraphicsControllerData we read. Every field optional: si omits them freely. */
export interface SiGraphicsController {
  vendor?: string;
  model?: string;
  name?: string;
  busAddress?: string;
  pciBus?: string;
  vram?: number | null;
  vramDynamic?: boolean;
  memoryTotal?: number;
  memoryUsed?: number;
  memoryFree?: number;
}

/** The part of si's MemData we read, in bytes. */
export interface SiMem {
  total: number;
  available: number;
}

export function normalizeControllers(controllers: readonly SiGraphicsController[]): GpuDevice[] {
  return controllers.map((c, index) => {
    const vendor = (c.vendor ?? '').trim();
    const totalMiB = positive(c.memoryTotal);
    const used = totalMiB === null ? null : usedMiB(totalMiB, positive(c.memoryUsed), positive(c.memoryFree));
    return {
      index,
      name: (c.name ?? '').trim() || (c.model ?? '').trim() || vendor || `GPU ${index}`,
      vendor,
      busAddress: canonicalBusAddress(c.pciBus ?? c.busAddress ?? ''),
      totalBytes: totalMiB === null ? null : totalMiB * MIB,
      usedBytes: used === null ? null : used * MIB,
      unifiedMemory: c.vramDynamic === true && /apple/i.test(vendor),
      // si merges nvidia-smi's figures and nothing else: a device with a usage figure was measured by it.
      measuredBy: used === null ? null : 'nvidia-smi',
    };
  });
}

/**
 * Used MiB from what si kept. Free wins when present: total − free counts the driver's
 * reservation (nvidia-smi ≥ 510 leaves it out of "used"), and free is what a launch can get.
 * Free missing but used present means free was 0 (the two come from one driver call, so one
 * is never "N/A" alone): the card is full. Both missing: unmeasured.
 */
function usedMiB(totalMiB: number, used: number | null, free: number | null): number | null {
  if (free !== null) return Math.max(0, totalMiB - free);
  if (used !== null) return totalMiB;
  return null;
}

export function normalizeMem(mem: SiMem): HostMemory {
  return { totalBytes: positive(mem.total) ?? 0, availableBytes: positive(mem.available) ?? 0 };
}

/**
 * 'dddd:bb:dd.f', lowercase, from lspci's '01:00.0', nvidia-smi's '00000000:01:00.0' or
 * lspci -D's '0000:01:00.0', so devices from the two tools match; null for anything else.
 */
export function canonicalBusAddress(text: string): string | null {
  const m = /^(?:([0-9a-f]{1,8}):)?([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$/i.exec(text.trim());
  if (m === null) return null;
  const domain = (m[1] ?? '0').slice(-4).padStart(4, '0');
  return `${domain}:${m[2]}:${m[3]}.${m[4]}`.toLowerCase();
}

function positive(value: number | null | undefined): number | null {
  return typeof value === 'number' && value > 0 && Number.isFinite(value) ? value : null;
}
