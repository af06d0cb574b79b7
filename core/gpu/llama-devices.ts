// The devices llama.cpp itself sees, from `llama-server --list-devices`: the one source that
// covers every backend the engine was built with (CUDA, ROCm, Vulkan, SYCL, Metal, MUSA, …),
// including GPUs no driver tool here measures (an Intel Arc through Vulkan, an AMD card on a
// machine without ROCm's tools). It also gives each device the name llama-server's `-dev`,
// `--main-gpu` and `--tensor-split` refer to ("CUDA0", "ROCm1", "Vulkan0").
//
// The format (common/arg.cpp, common_print_available_devices) is one line per non-CPU device
// on stdout after "Available devices:":
//     "  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 23700 MiB free)"
// or "  (none)". Backend logs go to stderr, but captured output often interleaves them, even
// between device lines (llama.cpp#17536), so lines that are not device lines are skipped.
//
// What the figures mean: total and free as the backend's allocator sees them, at the moment
// the listing ran, in a fresh process. CUDA's total leaves out what the driver reserves (a
// 4090: 24080 MiB here, 24564 MiB in nvidia-smi); Vulkan's is the heap size, which for an
// integrated GPU is host RAM. Some builds misreport free (llama.cpp#17536: 55372 MiB free of a
// 32106 MiB RTX 5090, host RAM read as if unified); such a device keeps its name and total and
// its free memory is dropped with a note.
//
// Why the reader keeps an answer for a minute: each listing starts llama-server, which
// initialises every backend (seconds on a multi-GPU box) and opens a context on each GPU,
// briefly holding memory that the driver tools would report as another program's. The device
// set does not change while the machine runs; only the free figures of devices measured by
// nothing else go stale, by at most `freshForMs`.
import { execFileTextWithin, type ExecFileText } from './exec-file.js';
import { sharedAnswer } from './shared-answer.js';
import { realClock, type Clock } from '../common/clock.js';
import { formatBytes } from '../contracts/format-bytes.js';
import { errorMessage } from '../contracts/error-message.js';

export const LIST_DEVICES_ARGS = ['--list-devices'] as const;

/** How long one listing may take: backend initialisation on a multi-GPU box, not a driver query. */
export const LIST_DEVICES_TIMEOUT_MS = 30_000;

const MIB = 1024 * 1024;

/** One device in llama-server's list. */
export interface EngineDevice {
  /** llama.cpp's device name, what `-dev` takes: 'CUDA0', 'ROCm1', 'Vulkan0', 'MTL0'. */
  name: string;
  /** The name without its trailing number: 'CUDA', 'ROCm', 'Vulkan', 'MTL'. Devices of two backends may be one card. */
  backend: string;
  /** The backend's description: 'NVIDIA GeForce RTX 4090', 'AMD Radeon RX 7900 XTX (RADV NAVI31)'. */
  description: string;
  totalBytes: number;
  /** null when the figure is not believable (more free than total). */
  freeBytes: number | null;
}

export interface EngineDeviceList {
  devices: EngineDevice[];
  /** Sentences about lines left out or figures not used, for the budget's reason. */
  notes: string[];
}

const HEADER = /^\s*Available devices:\s*$/m;
const DEVICE_LINE = /^\s+(\S+?):\s+(.*?)\s+\((\d+) MiB, (\d+) MiB free\)/;
/** CPU rasterisers some Vulkan loaders list as devices: host RAM, not a GPU. */
const SOFTWARE_RENDERER = /llvmpipe|lavapipe|swiftshader/i;

/**
 * Parses `llama-server --list-devices`. Throws when there is no "Available devices:" line
 * (not a llama-server, or one that failed before listing), with the start of the output.
 * Leaves out, with a note: RPC devices (another machine's memory), devices reporting 0 MiB
 * (BLAS and other host-side backends older builds listed), software rasterisers.
 */
export function parseListDevices(stdout: string): EngineDeviceList {
  const header = HEADER.exec(stdout);
  if (header === null) {
    const start = stdout.trim().replace(/\s+/g, ' ').slice(0, 120);
    throw new Error(`llama-server --list-devices printed no device list: ${JSON.stringify(start === '' ? '(nothing)' : start)}`);
  }
  const devices: EngineDevice[] = [];
  const notes: string[] = [];
  for (const line of stdout.slice(header.index + header[0].length).split(/\r?\n/)) {
    const m = DEVICE_LINE.exec(line);
    if (m === null) continue;
    const [, name = '', description = '', totalText = '0', freeText = '0'] = m;
    const totalBytes = Number(totalText) * MIB;
    const freeBytes = Number(freeText) * MIB;
    if (name.startsWith('RPC[')) {
      notes.push(`llama-server lists ${name}, another machine's memory; it is not counted here.`);
      continue;
    }
    if (totalBytes === 0 || SOFTWARE_RENDERER.test(description)) continue;
    if (freeBytes > totalBytes) {
      notes.push(`llama-server reports ${name} ${description} with ${formatBytes(freeBytes)} free of ${formatBytes(totalBytes)}; that free figure is not used.`);
    }
    devices.push({ name, backend: name.replace(/\d+$/, ''), description, totalBytes, freeBytes: freeBytes > totalBytes ? null : freeBytes });
  }
  return { devices, notes };
}

/**
 * Lists the engine's devices. Never rejects: when a listing fails, the answer is the last
 * good list (or none) with a note saying why, so one failed start neither drops the devices
 * only llama-server measures nor makes every probe start llama-server again.
 */
export type EngineDeviceReader = () => Promise<EngineDeviceList>;

export interface EngineDeviceReaderOptions {
  /**
   * Variables set on top of this process's environment for the listing: the engines' own
   * (CUDA_VISIBLE_DEVICES, GGML_VK_VISIBLE_DEVICES, CUDA_DEVICE_ORDER…), so that it names the
   * devices they will use. Ignored when `exec` is given.
   */
  env?: Record<string, string>;
  /** Default: execFile with LIST_DEVICES_TIMEOUT_MS. */
  exec?: ExecFileText;
  clock?: Pick<Clock, 'elapsed'>;
  /** How long an answer, good or failed, is reused (see the header). Default 60 s. */
  freshForMs?: number;
}

/**
 * The reader the daemon creates once it has found a llama-server binary. Blocks for one
 * llama-server start per `freshForMs` (seconds, see the header); callers within the window
 * share the answer and callers during a listing join it.
 */
export function createEngineDeviceReader(binaryPath: string, options: EngineDeviceReaderOptions = {}): EngineDeviceReader {
  const exec = options.exec ?? execFileTextWithin(LIST_DEVICES_TIMEOUT_MS, options.env === undefined ? undefined : { ...process.env, ...options.env });
  const clock = options.clock ?? realClock;
  let lastGood: EngineDeviceList | null = null;
  const list = async (): Promise<EngineDeviceList> => {
    try {
      lastGood = parseListDevices(await exec(binaryPath, LIST_DEVICES_ARGS));
      return lastGood;
    } catch (error) {
      const said = `llama-server's device list could not be read (${errorMessage(error)})`;
      return lastGood === null ? { devices: [], notes: [`${said}.`] } : { devices: lastGood.devices, notes: [...lastGood.notes, `${said}; the last list is used.`] };
    }
  };
  return sharedAnswer(list, clock, options.freshForMs ?? 60_000);
}
