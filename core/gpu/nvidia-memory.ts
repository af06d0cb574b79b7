// Each NVIDIA card's memory, straight from nvidia-smi, for the live sample; and the cards it
// cannot reach.
//
// Why not systeminformation's graphics() at every sample: with DISPLAY set (every desktop
// session) it runs `xrandr --verbose` and `xdpyinfo` each time, and `xrandr --verbose` makes the
// X server re-probe every output, a known cause of periodic screen and mouse stutter; on
// Windows it starts several PowerShell processes. Measured: every 2 s while a model was
// resident. So graphics() lists the cards (gpu-probe.ts, once and again when the cards may have
// changed) and this one driver call gives the figures that move.
//
// A card the driver has lost (it fell off the bus, or did not come back from a suspend) is named
// by nvidia-smi itself: "Unable to determine the device handle for GPU 0000:03:00.0: GPU is lost.
// Reboot the system to recover this GPU" (or ": Unknown Error"), printed beside the lines of the
// cards it still reaches, and it exits non-zero (15: the GPU has fallen off the bus). Those words
// are read here whether it exits 0 or not, so that one lost card is not a failing tool
// (gpu-probe.ts tells the two apart).
import { canonicalBusAddress } from './normalize-si.js';
import { ToolFailed, type ExecFileText } from './exec-file.js';

export const NVIDIA_MEMORY_ARGS = ['--query-gpu=pci.bus_id,memory.total,memory.used,memory.free', '--format=csv,noheader,nounits'] as const;

const MIB = 1024 * 1024;

export interface NvidiaMemory {
  totalBytes: number;
  /** total − free, so the driver's own reservation counts (as normalize-si.ts reads si's figures). */
  usedBytes: number;
}

/** One answer of nvidia-smi. */
export interface NvidiaReading {
  /** Card memory by canonical bus address, for the cards it gave figures for. */
  cards: Map<string, NvidiaMemory>;
  /** Every card it printed a line for, with figures or without ('[N/A]'). */
  named: ReadonlySet<string>;
  /** The cards it says it cannot reach, by canonical bus address, with its words. */
  lost: ReadonlyMap<string, string>;
}

const LOST_LINE = /Unable to determine the device handle for GPU\s*([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-7])\s*:\s*(.+)$/;

/**
 * What one nvidia-smi answer (its stdout, and its stderr where it failed) says about each card.
 * A card line without a bus id and three numbers gives no figures. Pure.
 */
export function parseNvidiaReading(printed: string): NvidiaReading {
  const cards = new Map<string, NvidiaMemory>();
  const named = new Set<string>();
  const lost = new Map<string, string>();
  for (const line of printed.split(/\r?\n/)) {
    const unreachable = LOST_LINE.exec(line.trim());
    const lostAt = unreachable === null ? null : canonicalBusAddress(unreachable[1] as string);
    if (unreachable !== null && lostAt !== null) {
      lost.set(lostAt, (unreachable[2] as string).trim().replace(/\s+/g, ' '));
      continue;
    }
    const [bus, total, , free] = line.split(',').map((field) => field.trim());
    const address = canonicalBusAddress(bus ?? '');
    if (address === null) continue;
    named.add(address);
    const totalMiB = Number(total);
    const freeMiB = Number(free);
    if (total === '' || free === '' || !Number.isFinite(totalMiB) || !Number.isFinite(freeMiB) || totalMiB <= 0) continue;
    cards.set(address, { totalBytes: totalMiB * MIB, usedBytes: Math.max(0, totalMiB - freeMiB) * MIB });
  }
  return { cards, named, lost };
}

/** What a failed nvidia-smi printed, when it names a card it lost (it then exits non-zero after the cards it reached); else null. */
export function lostInFailure(error: unknown): NvidiaReading | null {
  if (!(error instanceof ToolFailed)) return null;
  const reading = parseNvidiaReading(`${error.stdout}\n${error.stderr}`);
  return reading.lost.size > 0 ? reading : null;
}

export type NvidiaMemoryReader = () => Promise<NvidiaReading>;

/**
 * Runs the query. Blocks for one nvidia-smi call (~20–50 ms). Rejects with nvidia-smi's words
 * when it fails without naming a card it lost; an answer that names one resolves, non-zero exit
 * or not, with the cards it still reached.
 */
export function createNvidiaMemoryReader(exec: ExecFileText, nvidiaSmi = 'nvidia-smi'): NvidiaMemoryReader {
  return async () => {
    try {
      return parseNvidiaReading(await exec(nvidiaSmi, NVIDIA_MEMORY_ARGS));
    } catch (error) {
      const reading = lostInFailure(error);
      if (reading === null) throw error;
      return reading;
    }
  };
}
