// The memory budget the policy schedules against, from one probe of the machine.
//
// Pure: no I/O, no clock, so every case (two GPUs, a GPU another program fills, no GPU,
// Apple's unified memory, a configured cap) is a table test. The live sampler
// (live-budget.ts) calls it after every probe.
//
// The one real decision: the budget is what our models may hold, *including what they
// already hold*. So it is total − reserve − what other programs use, never "free − reserve":
// with "free", loading a model would shrink the budget by that model and the controller
// would evict what it had just loaded.
import { nonNegative } from '../policy/non-negative.js';
import { formatBytes } from '../contracts/format-bytes.js';
import { deviceClassOf } from './device-class.js';
import type { DriverIndex } from '../contracts/gpu-identity.js';

export type BudgetMode = 'gpu' | 'cpu' | 'unified';

/** The tool whose figures a device's memory comes from (precedence in merge-devices.ts). */
export type GpuSource = 'nvidia-smi' | 'amd-smi' | 'rocm-smi' | 'llama-server';

/** One graphics device as the probe saw it. Sizes in bytes. */
export interface GpuDevice {
  /**
   * Position among the cards some backend computes on (PCI bus order on Linux; display
   * controllers are not counted, see merge-devices.ts). Keys `ourUsageByGpu`. Not what an
   * engine calls the card: that is `driverIndex`.
   */
  index: number;
  name: string;
  vendor: string;
  /** Canonical PCI address 'dddd:bb:dd.f' (lowercase), or null where the OS gives none (Apple). */
  busAddress: string | null;
  /** Device memory; null when unknown (no driver tool reports it). */
  totalBytes: number | null;
  /**
   * Memory unavailable to a new allocation (total − free, so the driver's own reservation
   * counts), by every process; null when the device's usage cannot be measured.
   */
  usedBytes: number | null;
  /** Shares host RAM instead of having its own (Apple Silicon). */
  unifiedMemory: boolean;
  /**
   * Where totalBytes and usedBytes come from; null when nothing measures the device (lspci
   * only, Apple). Absent on devices built before sources were recorded: read as nvidia-smi
   * when usedBytes is known.
   */
  measuredBy?: GpuSource | null;
  /** `vendor:model` for placement (device-class.ts); the probe sets it, computeBudget derives it when absent. */
  deviceClass?: string;
  /** llama.cpp's name for the device ('CUDA0', 'ROCm1', 'Vulkan0'), what `-dev` takes; absent when its device list was not read or did not name it. */
  engineDevice?: string;
  /** The driver's number for the card in each backend that sees it (merge-devices.ts); absent when none is known. */
  driverIndex?: DriverIndex;
}

export interface HostMemory {
  totalBytes: number;
  /** What the OS can give a new allocation without swapping (Linux MemAvailable). */
  availableBytes: number;
}

export interface BudgetInput {
  gpus: readonly GpuDevice[];
  host: HostMemory;
  /** Left free on each GPU (or in host RAM in 'cpu'/'unified' mode) for the desktop, drivers, spikes. */
  reserveBytes: number;
  /** A hard cap on the whole budget from the config; null for none. */
  limitBytes: number | null;
  /** Device memory our own engines hold, by GpuDevice.index ('gpu' mode). */
  ourUsageByGpu: ReadonlyMap<number, number>;
  /** Host memory our own engines hold, not reclaimable by the OS ('cpu' and 'unified' modes). Default 0. */
  ourHostBytes?: number;
  /** process.platform of the probed machine. */
  platform: string;
  /** Share of host RAM the GPU may use on unified memory, 0 < share ≤ 1. */
  unifiedShare: number;
  /** Sentences from the probe (a tool that failed, a device left out), put first in the reason. */
  probeNotes?: readonly string[];
  /** Display controllers no backend computes on (merge-devices.ts): never counted, listed in the budget. */
  displays?: readonly GpuDevice[];
  /** Cards that are gone (fallen off the bus, gpu-probe.ts): not counted, named in the budget and its reason. */
  gone?: readonly GoneGpu[];
}

/** A GPU its vendor tool measured before and now cannot reach: gone until it is measured again. */
export interface GoneGpu {
  index: number;
  name: string;
  vendor: string;
  busAddress: string;
  /** Why it counts as gone: nvidia-smi's words, or what it did. */
  why: string;
}

export interface GpuBudget {
  index: number;
  name: string;
  vendor: string;
  busAddress: string | null;
  /**
   * `vendor:model`, lowercase ("nvidia:rtx-4090", "amd:rx-7900-xtx"): a model splits across
   * GPUs of one class freely, across classes only where its config allows (device-class.ts).
   */
  deviceClass: string;
  /** llama.cpp's name for the device ('CUDA0', 'ROCm1', 'Vulkan0'), when llama-server's device list named it. */
  engineDevice?: string;
  /** The driver's number for the card in each backend that sees it: what the engines are told (placement-args.ts). */
  driverIndex?: DriverIndex;
  /**
   * Set while the card's vendor tool keeps failing (live-budget.ts): why, and that its budget is
   * held at the last good sample. Absent while it is measured.
   */
  warning?: string;
  /** The device's memory; on unified memory, `unifiedShare` of host RAM. */
  totalBytes: number;
  usedBytes: number;
  usedByOthersBytes: number;
  usedByUsBytes: number;
  reserveBytes: number;
  /** What our models may hold on this device: total − reserve − used by others, at least 0. */
  budgetBytes: number;
}

export interface Budget {
  /** 'gpu': discrete GPUs; 'cpu': none usable, every launch at level minimal (-ngl 0); 'unified': Apple Silicon. */
  mode: BudgetMode;
  /** The budget the policy schedules against: Σ perGpu budgets (or host RAM in 'cpu' mode), capped by the limit. */
  totalBytes: number;
  /** Only the devices the budget counts; empty in 'cpu' mode. */
  perGpu: GpuBudget[];
  hostTotalBytes: number;
  hostAvailableBytes: number;
  /** Sentences a person can act on: why this mode, what caps the budget, which GPUs are left out. */
  reason?: string;
  /** Display controllers no backend computes on (an iGPU without a backend, a BMC chip): shown, never numbered or counted. Absent when none. */
  displays?: DisplayController[];
  /** GPUs that are gone (fallen off the bus, not back from a suspend): no budget, named until they are measured again. Absent when none. */
  gone?: GoneGpu[];
}

/** What a person reads about a gone GPU: which card, why, and what that means for its models. */
export function goneWords(gpu: GoneGpu): string {
  return `GPU ${gpu.index} ${gpu.name} (${gpu.busAddress}) is gone (${gpu.why}): its budget is not offered and its models run elsewhere until it is measured again.`;
}

/** A display controller the budget does not count, as the snapshot shows it. */
export interface DisplayController {
  name: string;
  vendor: string;
  busAddress: string | null;
}

/**
 * Computes the budget. Pure and total for valid input; throws a RangeError naming the
 * value when the configuration is out of range (negative reserve, share outside (0, 1],
 * limit ≤ 0), because those come from a config file a person should fix.
 */
export function computeBudget(input: BudgetInput): Budget {
  checkConfig(input);
  const { gpus, host, reserveBytes, limitBytes } = input;
  const hostTotalBytes = nonNegative(host.totalBytes);
  const hostAvailableBytes = Math.min(nonNegative(host.availableBytes), hostTotalBytes);
  const notes: string[] = [...(input.probeNotes ?? [])];
  const gone = input.gone ?? [];
  for (const gpu of gone) notes.push(goneWords(gpu));

  const discrete = gpus.filter(isMeasuredDiscrete);
  const displays = input.displays ?? [];
  for (const gpu of [...gpus, ...displays]) {
    if (!isMeasuredDiscrete(gpu) && !(gpu.unifiedMemory && input.platform === 'darwin')) {
      notes.push(`${gpu.name} is not used: its memory use cannot be measured (NVIDIA GPUs are measured through nvidia-smi, AMD through amd-smi or rocm-smi, any GPU llama-server lists through its device list, Apple Silicon through host RAM).`);
    }
  }

  let mode: BudgetMode;
  let perGpu: GpuBudget[];
  let devicesBytes: number;
  const apple = input.platform === 'darwin' ? gpus.find((g) => g.unifiedMemory) : undefined;

  if (discrete.length > 0) {
    mode = 'gpu';
    perGpu = discrete.map((gpu) => {
      const totalBytes = gpu.totalBytes;
      const usedBytes = Math.min(gpu.usedBytes, totalBytes);
      const usedByUsBytes = Math.min(nonNegative(input.ourUsageByGpu.get(gpu.index) ?? 0), usedBytes);
      const usedByOthersBytes = usedBytes - usedByUsBytes;
      const budgetBytes = nonNegative(totalBytes - reserveBytes - usedByOthersBytes);
      if (budgetBytes === 0) {
        notes.push(`${gpu.name} has no room: other programs hold ${formatBytes(usedByOthersBytes)} of its ${formatBytes(totalBytes)} and ${formatBytes(reserveBytes)} is reserved.`);
      }
      return { ...identity(gpu), totalBytes, usedBytes, usedByOthersBytes, usedByUsBytes, reserveBytes, budgetBytes };
    });
    devicesBytes = sum(perGpu.map((g) => g.budgetBytes));
  } else if (apple !== undefined) {
    mode = 'unified';
    const capBytes = Math.floor(hostTotalBytes * input.unifiedShare);
    const share = hostShare(hostTotalBytes, hostAvailableBytes, reserveBytes, input.ourHostBytes, capBytes);
    if (share.budgetBytes === capBytes) {
      notes.push(`The GPU shares host RAM: at most ${Math.round(input.unifiedShare * 100)} % of ${formatBytes(hostTotalBytes)} (${formatBytes(capBytes)}) goes to models.`);
    }
    perGpu = [{ ...identity(apple), totalBytes: capBytes, reserveBytes, ...share }];
    devicesBytes = share.budgetBytes;
  } else {
    mode = 'cpu';
    perGpu = [];
    devicesBytes = hostShare(hostTotalBytes, hostAvailableBytes, reserveBytes, input.ourHostBytes, Infinity).budgetBytes;
    const seeing =
      input.platform === 'linux' ? ' (on Linux, NVIDIA GPUs are seen only with both `lspci` and `nvidia-smi` on PATH, AMD GPUs with `amd-smi` or `rocm-smi`)' : '';
    notes.unshift(`No GPU whose memory can be measured was found${seeing}, so models run on the CPU in host RAM.`);
  }

  let totalBytes = devicesBytes;
  if (limitBytes !== null && limitBytes < devicesBytes) {
    totalBytes = limitBytes;
    notes.push(`Capped at ${formatBytes(limitBytes)} by the configured limit; the machine allows ${formatBytes(devicesBytes)}.`);
  }

  const budget: Budget = { mode, totalBytes, perGpu, hostTotalBytes, hostAvailableBytes };
  if (notes.length > 0) budget.reason = notes.join(' ');
  if (displays.length > 0) budget.displays = displays.map((d) => ({ name: d.name, vendor: d.vendor, busAddress: d.busAddress }));
  if (gone.length > 0) budget.gone = gone.map((g) => ({ ...g }));
  return budget;
}

type MeasuredGpu = GpuDevice & { totalBytes: number; usedBytes: number };

function isMeasuredDiscrete(gpu: GpuDevice): gpu is MeasuredGpu {
  return !gpu.unifiedMemory && gpu.totalBytes !== null && gpu.totalBytes > 0 && gpu.usedBytes !== null;
}

function identity(gpu: GpuDevice): Pick<GpuBudget, 'index' | 'name' | 'vendor' | 'busAddress' | 'deviceClass' | 'engineDevice' | 'driverIndex'> {
  const id: Pick<GpuBudget, 'index' | 'name' | 'vendor' | 'busAddress' | 'deviceClass' | 'engineDevice' | 'driverIndex'> = {
    index: gpu.index,
    name: gpu.name,
    vendor: gpu.vendor,
    busAddress: gpu.busAddress,
    deviceClass: gpu.deviceClass ?? deviceClassOf(gpu.vendor, gpu.name),
  };
  if (gpu.engineDevice !== undefined) id.engineDevice = gpu.engineDevice;
  if (gpu.driverIndex !== undefined) id.driverIndex = gpu.driverIndex;
  return id;
}

/**
 * Host RAM as the device ('cpu' and 'unified'): the same rule as a GPU, total − reserve −
 * used by others, where "used" is what the OS cannot hand out (total − available), capped
 * at `capBytes` (the share macOS lets the GPU wire).
 */
function hostShare(
  totalBytes: number,
  availableBytes: number,
  reserveBytes: number,
  ourHostBytes: number | undefined,
  capBytes: number,
): Pick<GpuBudget, 'usedBytes' | 'usedByOthersBytes' | 'usedByUsBytes' | 'budgetBytes'> {
  const usedBytes = totalBytes - availableBytes;
  const usedByUsBytes = Math.min(nonNegative(ourHostBytes ?? 0), usedBytes);
  const usedByOthersBytes = usedBytes - usedByUsBytes;
  const budgetBytes = Math.min(capBytes, nonNegative(totalBytes - reserveBytes - usedByOthersBytes));
  return { usedBytes, usedByOthersBytes, usedByUsBytes, budgetBytes };
}

function checkConfig(input: BudgetInput): void {
  if (!(input.reserveBytes >= 0) || !Number.isFinite(input.reserveBytes)) {
    throw new RangeError(`budget reserve must be 0 bytes or more, got ${input.reserveBytes}`);
  }
  if (input.limitBytes !== null && !(input.limitBytes > 0)) {
    throw new RangeError(`budget limit must be more than 0 bytes, got ${input.limitBytes}`);
  }
  if (!(input.unifiedShare > 0 && input.unifiedShare <= 1)) {
    throw new RangeError(`unified memory share must be more than 0 and at most 1, got ${input.unifiedShare}`);
  }
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
