// One list of GPUs from every source that sees them, each card counted once.
//
// Pure, so every pairing (two cards of one model, a card two backends list, a card only
// llama-server sees, a tool and llama-server disagreeing) is a table test.
//
// Precedence, strongest first:
// 1. The vendor's own tool: nvidia-smi (through systeminformation) for NVIDIA, amd-smi or
//    rocm-smi for AMD. It measures the card, names it, and is the authority on which of that
//    vendor's cards exist: llama-server never adds a card of a vendor whose tool answered. Its
//    extra devices of that vendor are an integrated GPU the tool reports differently, or a
//    card the engine is not allowed to see; they are left out with a note.
// 2. llama-server's device list. It names the engine's device for each card ("CUDA0"), and
//    measures cards no tool measures: one lspci lists but nothing measures (an Intel Arc, an
//    AMD card without ROCm's tools), or one lspci does not list at all.
// 3. lspci (through systeminformation): that the card exists, its PCI address, its chip name.
//    A card only lspci sees stays in the list unmeasured, and the budget says why.
//
// Matching. Cards from the tools match lspci's by PCI address. llama-server's list has no
// address, so each of its devices is matched, within its backend, to a card of the same
// vendor: first one of the same class, then one whose total is within 8 % (CUDA leaves out
// the driver's reservation: 24080 MiB for a 24564 MiB RTX 4090), then the first left in PCI
// order. Two backends listing one card (CUDA0 and Vulkan0) match it twice and name it after
// the first. Within one class, cards are paired in order: their figures come from their
// tool, so only the engine name could be swapped, and llama.cpp numbers CUDA devices fastest
// first unless CUDA_DEVICE_ORDER=PCI_BUS_ID (the daemon sets it for the listing and the engines).
//
// Numbering. A card's `index` (the plan's "GPU 0") counts only cards some backend computes on:
// one a vendor tool or llama-server measures or names, or Apple's GPU. A display controller
// nothing computes on (an integrated GPU without a backend, a server's BMC chip) is listed in
// `displays` and numbered nowhere, so it cannot shift the cards after it. Each card also carries
// the driver's number for each backend that sees it (`driverIndex`), which is what the engines
// are told: the number in llama-server's own device name ("CUDA1" is CUDA's 1), else its place in
// PCI order among the cards its vendor's tool reports (CUDA with PCI_BUS_ID and HIP number their
// vendor's cards that way).
import { deviceClassOf, vendorKeyOf, type VendorKey } from './device-class.js';
import type { GpuDevice } from './compute-budget.js';
import type { EngineDevice, EngineDeviceList } from './llama-devices.js';
import type { ComputeBackend } from '../contracts/gpu-identity.js';
import { formatBytes } from '../contracts/format-bytes.js';

/** One card as a vendor tool reports it. Sizes in bytes. */
export interface MeasuredCard {
  /** Canonical 'dddd:bb:dd.f', or null when the tool did not say. */
  busAddress: string | null;
  name: string;
  totalBytes: number | null;
  /** total − free where the tool gives free; null when unmeasured. */
  usedBytes: number | null;
}

/** What the AMD tools said this probe. `source` null: neither answered (see amd-source.ts). */
export interface AmdReading {
  source: 'amd-smi' | 'rocm-smi' | null;
  cards: MeasuredCard[];
  notes: string[];
}

export interface DeviceReadings {
  amd?: AmdReading | null;
  engine?: EngineDeviceList | null;
}

export interface MergedDevices {
  /** The cards, indexed 0… in order: lspci's (PCI order), then cards only a tool or llama-server sees. */
  gpus: GpuDevice[];
  /** Display controllers no backend computes on (see the header), in PCI order; their `index` is meaningless. */
  displays: GpuDevice[];
  /** Sentences for the budget's reason: cards left out, figures not used, tools that failed. */
  notes: string[];
}

/** How far a llama-server total may be from a tool's for the same card. */
const SAME_CARD_TOLERANCE = 0.08;

const VENDOR_NAME: Record<VendorKey, string> = {
  nvidia: 'NVIDIA',
  amd: 'AMD',
  intel: 'Intel',
  apple: 'Apple',
  mthreads: 'Moore Threads',
  other: '',
};

/** Backends whose devices are one vendor's whatever their description says. */
const BACKEND_VENDOR: Record<string, VendorKey> = { CUDA: 'nvidia', ROCm: 'amd', HIP: 'amd', SYCL: 'intel', MUSA: 'mthreads', MTL: 'apple', Metal: 'apple' };

/** llama.cpp's backend names for the backends whose numbers the engines are told. */
const DRIVER_BACKEND: Record<string, ComputeBackend> = { CUDA: 'cuda', ROCm: 'hip', HIP: 'hip', Vulkan: 'vulkan', MTL: 'metal', Metal: 'metal' };

export function mergeDevices(listed: readonly GpuDevice[], readings: DeviceReadings): MergedDevices {
  // A device from before sources were recorded is measured only if nvidia-smi measured it (si's rule).
  const gpus: GpuDevice[] = listed.map((g) => ({ ...g, measuredBy: g.measuredBy !== undefined ? g.measuredBy : g.usedBytes !== null && !g.unifiedMemory ? 'nvidia-smi' : null }));
  const notes: string[] = [];

  /** Each card a vendor tool reported (measured or not) and the backend that tool's order is. */
  const reported = new Map<GpuDevice, ComputeBackend>(gpus.filter((g) => g.measuredBy === 'nvidia-smi').map((g) => [g, 'cuda']));
  const amd = readings.amd;
  if (amd) {
    notes.push(...amd.notes);
    if (amd.source !== null) for (const card of amd.cards) reported.set(placeToolCard(gpus, card, amd.source), 'hip');
  }

  const engine = readings.engine;
  if (engine) {
    notes.push(...engine.notes);
    placeEngineDevices(gpus, engine.devices, notes);
  }

  numberByTool(gpus, reported);
  const classed = gpus.map((g) => ({ ...g, deviceClass: deviceClassOf(g.vendor, g.name) }));
  const computes = (g: GpuDevice): boolean => g.measuredBy != null || g.unifiedMemory || Object.keys(g.driverIndex ?? {}).length > 0;
  return {
    gpus: classed.filter(computes).map((g, index) => ({ ...g, index })),
    displays: classed.filter((g) => !computes(g)),
    notes,
  };
}

/**
 * The driver's number of each card its vendor's tool reports, where llama-server's list did
 * not give one: its place in PCI order among that tool's cards. Apple's one GPU is Metal's 0.
 */
function numberByTool(gpus: GpuDevice[], reported: ReadonlyMap<GpuDevice, ComputeBackend>): void {
  for (const backend of new Set(reported.values())) {
    const cards = gpus.filter((g) => reported.get(g) === backend).sort((a, b) => ((a.busAddress ?? '~') < (b.busAddress ?? '~') ? -1 : 1));
    cards.forEach((g, ordinal) => setDriverIndex(g, backend, ordinal));
  }
  for (const g of gpus) if (g.unifiedMemory) setDriverIndex(g, 'metal', 0);
}

/** Sets a card's number in one backend unless it has one: llama-server's list is read first and wins. */
function setDriverIndex(g: GpuDevice, backend: ComputeBackend, ordinal: number): void {
  if (g.driverIndex?.[backend] !== undefined) return;
  g.driverIndex = { ...g.driverIndex, [backend]: ordinal };
}

/** The backend and number in a llama.cpp device name: 'CUDA1' is CUDA's 1; null for a backend the engines are not told numbers of. */
function engineOrdinal(device: EngineDevice): { backend: ComputeBackend; ordinal: number } | null {
  const backend = DRIVER_BACKEND[device.backend];
  const ordinal = Number(/(\d+)$/.exec(device.name)?.[1]);
  return backend === undefined || !Number.isInteger(ordinal) ? null : { backend, ordinal };
}

function noteEngineOrdinal(g: GpuDevice, device: EngineDevice): void {
  const at = engineOrdinal(device);
  if (at !== null) setDriverIndex(g, at.backend, at.ordinal);
}

/** Puts a tool's card on lspci's (or adds it) and answers the card it now is. */
function placeToolCard(gpus: GpuDevice[], card: MeasuredCard, source: 'amd-smi' | 'rocm-smi'): GpuDevice {
  const same =
    card.busAddress === null
      ? gpus.find((g) => g.measuredBy == null && vendorOf(g) === 'amd')
      : gpus.find((g) => g.busAddress === card.busAddress);
  const measured = { name: card.name, totalBytes: card.totalBytes, usedBytes: card.usedBytes, measuredBy: card.usedBytes === null ? null : source };
  if (same !== undefined) return Object.assign(same, measured);
  const added: GpuDevice = { index: gpus.length, vendor: 'Advanced Micro Devices, Inc.', busAddress: card.busAddress, unifiedMemory: false, ...measured };
  gpus.push(added);
  return added;
}

function placeEngineDevices(gpus: GpuDevice[], devices: readonly EngineDevice[], notes: string[]): void {
  // Vendors whose tool answered this probe: the authority on which of their cards exist.
  const covered = new Set(gpus.filter((g) => g.measuredBy != null && g.measuredBy !== 'llama-server').map(vendorOf));
  const backends = [...new Set(devices.map((d) => d.backend))];
  for (const backend of backends) {
    const claimed = new Set<GpuDevice>();
    for (const device of devices.filter((d) => d.backend === backend)) {
      const vendor = engineVendorOf(device);
      const fits = (g: GpuDevice): boolean => g.totalBytes !== null && Math.abs(g.totalBytes - device.totalBytes) <= SAME_CARD_TOLERANCE * g.totalBytes;
      const candidates = gpus.filter(
        (g) =>
          !claimed.has(g) &&
          vendorOf(g) === vendor &&
          (covered.has(vendor) || vendor === 'apple' || g.measuredBy == null || (g.measuredBy === 'llama-server' && fits(g))),
      );
      const engineClass = deviceClassOf(VENDOR_NAME[vendor], device.description);
      const rank = (g: GpuDevice): number =>
        (deviceClassOf(g.vendor, g.name) === engineClass ? 0 : 2) + (fits(g) ? 0 : 1);
      const match = candidates.map((g, order) => ({ g, order, r: rank(g) })).sort((a, b) => a.r - b.r || a.order - b.order)[0]?.g;

      if (match !== undefined) {
        claimed.add(match);
        match.engineDevice ??= device.name;
        noteEngineOrdinal(match, device);
        if (match.measuredBy == null && !match.unifiedMemory && device.freeBytes !== null) {
          Object.assign(match, { name: device.description, totalBytes: device.totalBytes, usedBytes: device.totalBytes - device.freeBytes, measuredBy: 'llama-server' as const });
        }
      } else if (covered.has(vendor)) {
        const tool = gpus.find((g) => vendorOf(g) === vendor && g.measuredBy != null)?.measuredBy ?? 'its tool';
        notes.push(`llama-server lists ${device.name} ${device.description} (${formatBytes(device.totalBytes)}), which ${tool} does not report; it is not counted.`);
      } else if (vendor !== 'apple') {
        // Apple's GPU is counted through host RAM (unified memory), never as a device of its own.
        const added: GpuDevice = {
          index: gpus.length,
          name: device.description,
          vendor: VENDOR_NAME[vendor],
          busAddress: null,
          totalBytes: device.totalBytes,
          usedBytes: device.freeBytes === null ? null : device.totalBytes - device.freeBytes,
          unifiedMemory: false,
          measuredBy: device.freeBytes === null ? null : 'llama-server',
          engineDevice: device.name,
        };
        noteEngineOrdinal(added, device);
        gpus.push(added);
        claimed.add(added);
      }
    }
  }
}

function vendorOf(g: GpuDevice): VendorKey {
  return vendorKeyOf(`${g.vendor} ${g.name}`);
}

function engineVendorOf(device: EngineDevice): VendorKey {
  const named = vendorKeyOf(device.description);
  return named !== 'other' ? named : (BACKEND_VENDOR[device.backend] ?? 'other');
}
