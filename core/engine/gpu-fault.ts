// A fault of the card, not of the model, in an engine's log: CUDA's words for a kernel that died
// on the device (an illegal memory access, an unspecified launch failure, an uncorrectable ECC
// error), the kernel's for a card that fell off the bus (Xid 79), nvidia-smi's for a card it has
// lost. Fixtures: test/fixtures/llama-logs/cuda-*.log and gpu-*.log, each with its source.
//
// Two kinds. A card that is lost (fallen off the bus, nvidia-smi cannot reach it, an uncorrectable
// ECC error) is the machine in the way, never the model's fault: counted as the model's crash,
// five of them quarantined a good model. A kernel that died on the card (an illegal memory
// access, an unspecified launch failure) may be the card (an Xid 13 or 31 from bad memory, heat,
// power) or the engine (llama.cpp has shipped such bugs: ggml-org/llama.cpp#16953 was a
// regression): it stays a crash, so an engine that faults at every request is still parked
// after five, but it names the card, which is suspect until its vendor tool measures it again
// and the relaunch goes elsewhere meanwhile. Why the device: ggml prints the CUDA device it was
// on ("current device: 1"), the kernel and nvidia-smi the PCI address; the person and the GPU
// budget need to know which card to suspect.
//
// Deliberately narrow: "CUDA error: out of memory" is an oom, "no kernel image is available" a
// build for another card, and neither is in here.
import { canonicalBusAddress } from '../gpu/normalize-si.js';
import type { EngineIdentityOf } from '../contracts/gpu-identity.js';
import type { Placement } from '../contracts/plan.js';
import type { EngineKind } from '../contracts/snapshot.js';

export interface GpuFault {
  /** The line that says so, as printed (trimmed). */
  line: string;
  /** The CUDA device the engine was on ("current device: N", its own numbering), or null when the log does not say. */
  cudaDevice: number | null;
  /** The card's PCI address as the kernel or nvidia-smi names it ("0000:06:00.0"), or null. */
  busAddress: string | null;
  /** The card itself is lost or broken (see the header), not only a kernel that died on it. */
  cardLost: boolean;
}

/** The card is lost or its memory broken: no launch on it can work until it is back. */
const CARD_LOST: readonly RegExp[] = [
  /CUDA error: (?:uncorrectable ECC error encountered|GPU is lost)\b/,
  /GPU has fallen off the bus/,
  /Unable to determine the device handle for GPU [0-9A-Fa-f:.]+: GPU is lost/,
];

/** A kernel died on the card: the card, or the engine. */
const KERNEL_FAULT: readonly RegExp[] = [/CUDA error: (?:an illegal memory access was encountered|unspecified launch failure)\b/];

const CURRENT_DEVICE = /current device: (\d+)/;
/** Today's llama-server prefix ("0.00.063.013 E ", failure-classifier.ts): not part of what the line says. */
const LEVELLED_PREFIX = /^\d+\.\d+\.\d+\.\d+ [DIWE] /;
/** "GPU 0000:06:00.0", "GPU 0000:02:00.0:", "PCI:0000:06:00": the last form lacks the function, which is 0 for a GPU. */
const BUS_ADDRESS = /\bGPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\b|\bPCI:([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\b/;

/** The first card fault in `log` (one entry per line), with the device it names; null when there is none. Pure. */
export function gpuFaultIn(log: readonly string[]): GpuFault | null {
  const lost = log.findIndex((line) => CARD_LOST.some((re) => re.test(line)));
  const at = lost >= 0 ? lost : log.findIndex((line) => KERNEL_FAULT.some((re) => re.test(line)));
  if (at < 0) return null;
  let cudaDevice: number | null = null;
  let busAddress: string | null = null;
  // ggml prints the device on the line after the error; the kernel names the card on each line.
  for (const line of log.slice(Math.max(0, at - 2), at + 4)) {
    const device = CURRENT_DEVICE.exec(line);
    if (device !== null && cudaDevice === null) cudaDevice = Number(device[1]);
    const bus = BUS_ADDRESS.exec(line);
    if (bus !== null && busAddress === null) busAddress = bus[1] ?? `${bus[2] as string}.0`;
  }
  return { line: (log[at] as string).trim().replace(LEVELLED_PREFIX, ''), cudaDevice, busAddress: busAddress === null ? null : canonicalBusAddress(busAddress), cardLost: lost >= 0 };
}

/** The device in words for a reason: "GPU 0000:06:00.0", "CUDA device 1", or "its GPU". */
export function gpuFaultDevice(fault: GpuFault): string {
  if (fault.busAddress !== null) return `GPU ${fault.busAddress}`;
  return fault.cudaDevice === null ? 'its GPU' : `CUDA device ${fault.cudaDevice}`;
}

/**
 * The plan's GPU a fault was on, from where its launch was placed, or null. llama-server sees
 * every CUDA card (it is given --device), so its "current device" is the driver's number; the
 * embedded engine sees only its placement's cards (CUDA_VISIBLE_DEVICES, in driver order,
 * placement-args.ts), so its number counts among those. Without a device number, or one that
 * matches none, a placement on one GPU is that GPU; a split is not guessed at.
 */
export function faultyGpu(fault: GpuFault, placement: Placement | undefined, engine: EngineKind, identityOf: EngineIdentityOf | undefined): number | null {
  if (placement === undefined || placement.kind === 'cpu' || placement.devices.length === 0) return null;
  const cuda = (index: number): number | undefined => identityOf?.(index)?.driverIndex.cuda;
  const k = fault.cudaDevice;
  if (k !== null && identityOf !== undefined) {
    const seen = placement.devices.map((d) => ({ index: d.index, cuda: cuda(d.index) }));
    if (seen.every((d) => d.cuda !== undefined)) {
      const on = engine === 'embedded' ? [...seen].sort((a, b) => (a.cuda as number) - (b.cuda as number))[k] : seen.find((d) => d.cuda === k);
      if (on !== undefined) return on.index;
    }
  }
  return placement.devices.length === 1 ? (placement.devices[0] as Placement['devices'][number]).index : null;
}
