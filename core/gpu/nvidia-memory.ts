// Each NVIDIA card's memory, straight from nvidia-smi, for the live sample.
//
// Why not systeminformation's graphics() at every sample: with DISPLAY set (every desktop
// session) it runs `xrandr --verbose` and `xdpyinfo` each time, and `xrandr --verbose` makes the
// X server re-probe every output, a known cause of periodic screen and mouse stutter; on
// Windows it starts several PowerShell processes. Measured: every 2 s while a model was
// resident. So graphics() lists the cards (gpu-probe.ts, once and again when the cards may have
// changed) and this one driver call gives the figures that move.
import { canonicalBusAddress } from './normalize-si.js';
import type { ExecFileText } from './exec-file.js';

export const NVIDIA_MEMORY_ARGS = ['--query-gpu=pci.bus_id,memory.total,memory.used,memory.free', '--format=csv,noheader,nounits'] as const;

const MIB = 1024 * 1024;

export interface NvidiaMemory {
  totalBytes: number;
  /** total − free, so the driver's own reservation counts (as normalize-si.ts reads si's figures). */
  usedBytes: number;
}

/** Card memory by canonical bus address; lines that are not a bus id and three numbers are skipped. */
export function parseNvidiaMemory(stdout: string): Map<string, NvidiaMemory> {
  const cards = new Map<string, NvidiaMemory>();
  for (const line of stdout.split(/\r?\n/)) {
    const [bus, total, , free] = line.split(',').map((field) => field.trim());
    const address = canonicalBusAddress(bus ?? '');
    const totalMiB = Number(total);
    const freeMiB = Number(free);
    if (address === null || total === '' || free === '' || !Number.isFinite(totalMiB) || !Number.isFinite(freeMiB) || totalMiB <= 0) continue;
    cards.set(address, { totalBytes: totalMiB * MIB, usedBytes: Math.max(0, totalMiB - freeMiB) * MIB });
  }
  return cards;
}

export type NvidiaMemoryReader = () => Promise<Map<string, NvidiaMemory>>;

/** Runs the query. Blocks for one nvidia-smi call (~20–50 ms); rejects with nvidia-smi's words when it fails. */
export function createNvidiaMemoryReader(exec: ExecFileText, nvidiaSmi = 'nvidia-smi'): NvidiaMemoryReader {
  return async () => parseNvidiaMemory(await exec(nvidiaSmi, NVIDIA_MEMORY_ARGS));
}
