// AMD GPUs through rocm-smi, for machines whose ROCm predates amd-smi (before 6.x) or ships
// without it. One call gives name, PCI address and VRAM per card.
//
// Facts from captured output (telegraf's testdata, ROCm 4.3 to 6.1.2):
// - One object per card, keyed "card0", "card1", …, plus a "system" object with no card in it.
// - Memory comes in bytes, as strings: "VRAM Total Memory (B)", "VRAM Total Used Memory (B)".
//   "Used" is what the kernel counts in use (mem_info_vram_used), reservations included.
// - The name key changed case between versions ("Card series" in 6.0.2, "Card Series" in
//   6.1.2) and holds pci.ids text on older versions ("Navi 22 [Radeon RX 6700/6700 XT /
//   6800M]"), so keys are matched without case.
// - It prints "WARNING: No JSON data to report" instead of JSON when it finds no card.
//
// Per-process usage: `rocm-smi --showpids` gives one VRAM figure per process with no GPU
// named, so it cannot say which card our engine's memory is on; the kernel's DRM fdinfo can
// (drm-fdinfo.ts).
import { canonicalBusAddress } from './normalize-si.js';
import { bytesOf, jsonDocumentIn } from './tool-json.js';
import type { MeasuredCard } from './merge-devices.js';

export const ROCM_SMI_ARGS = ['--showproductname', '--showbus', '--showmeminfo', 'vram', '--json'] as const;

/** Parses the output of `rocm-smi` with ROCM_SMI_ARGS, in card order. Throws when it holds no JSON. */
export function parseRocmSmi(stdout: string): MeasuredCard[] {
  const doc = jsonDocumentIn(stdout, 'rocm-smi');
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('rocm-smi printed JSON that is not an object of cards');
  return Object.entries(doc as Record<string, unknown>)
    .map(([key, fields]) => ({ card: /^card(\d+)$/.exec(key), fields }))
    .filter((e): e is { card: RegExpExecArray; fields: Record<string, unknown> } => e.card !== null && typeof e.fields === 'object' && e.fields !== null)
    .sort((a, b) => Number(a.card[1]) - Number(b.card[1]))
    .map(({ card, fields }) => {
      const field = (name: string): unknown => Object.entries(fields).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
      const totalBytes = bytesOf(field('VRAM Total Memory (B)'), 'B');
      const used = bytesOf(field('VRAM Total Used Memory (B)'), 'B');
      const name = [field('Card Series'), field('Device Name')].find((v): v is string => typeof v === 'string' && v.trim() !== '' && v.trim() !== 'N/A');
      return {
        busAddress: canonicalBusAddress(typeof field('PCI Bus') === 'string' ? (field('PCI Bus') as string) : ''),
        name: name?.trim() ?? `AMD GPU ${card[1]}`,
        totalBytes: totalBytes === 0 ? null : totalBytes,
        usedBytes: totalBytes === null || totalBytes === 0 || used === null ? null : Math.min(used, totalBytes),
      };
    });
}
