// The machine's graphics devices and host memory, through systeminformation.
//
// Facts about si 5.33 that shape this file (read in node_modules/systeminformation/lib):
// - On Linux it lists GPUs from `lspci -vvv` and only then asks
//   `nvidia-smi --query-gpu=…16 fields… --format=csv,noheader,nounits` for their memory,
//   matching by PCI address: without lspci on PATH, NVIDIA GPUs are invisible.
// - It runs nvidia-smi with a copy of process.env taken when it is first imported, so a
//   PATH set later is ignored (the integration test therefore probes in a child process).
// - It does not cache and a call costs ~20 ms of child processes: the live sampler calls
//   this every few seconds and on demand, never per request.
// - On macOS it runs `system_profiler -detailLevel full SPDisplaysDataType`, which takes
//   up to seconds and reports no memory use at all (unified memory is measured through host
//   RAM). So on macOS the device list is read once and only host memory is sampled.
import si from 'systeminformation';
import { normalizeControllers, normalizeMem, type SiGraphicsController, type SiMem } from './normalize-si.js';
import type { GpuDevice, HostMemory } from './compute-budget.js';

/** The two systeminformation calls the probe makes; the real module satisfies it. */
export interface SystemInformation {
  graphics(): Promise<{ controllers: readonly SiGraphicsController[] }>;
  mem(): Promise<SiMem>;
}

export interface ProbeResult {
  gpus: GpuDevice[];
  host: HostMemory;
}

export interface GpuProbe {
  /**
   * Probes devices and host memory now. Blocks for the child processes si spawns (tens of
   * ms; longer if a driver tool hangs). Safe to call concurrently. si reports a missing
   * tool as "no device", so this rarely rejects; when it does, nothing was measured.
   */
  probe(): Promise<ProbeResult>;
}

export function createGpuProbe(deps: { si?: SystemInformation; platform?: string } = {}): GpuProbe {
  const source: SystemInformation = deps.si ?? si;
  const listOnce = (deps.platform ?? process.platform) === 'darwin';
  let devices: Promise<GpuDevice[]> | null = null;
  const readDevices = (): Promise<GpuDevice[]> => source.graphics().then((g) => normalizeControllers(g.controllers));
  return {
    async probe() {
      // A failed first listing is not kept: the next probe tries again.
      const listing = listOnce ? (devices ??= readDevices().catch((error: unknown) => { devices = null; throw error; })) : readDevices();
      const [gpus, mem] = await Promise.all([listing, source.mem()]);
      return { gpus: gpus.map((g) => ({ ...g })), host: normalizeMem(mem) };
    },
  };
}
