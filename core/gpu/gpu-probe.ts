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
// - Where the listing finds no GPU it measures, nothing on it can change but a GPU appearing
//   (a driver loaded late, an eGPU), so it is listed again every 5 minutes, not at every sample:
//   a listing is four child processes (lspci, nvidia-smi, clinfo, xdpyinfo), ~100 ms of the
//   daemon's CPU on a loaded machine, and at every 2 s sample they were most of an idle daemon's
//   CPU on a machine without a GPU (BENCHMARKS, idle daemon). Host memory is still read at every
//   probe.
//
// Beyond si, two sources measure what it cannot (merged by merge-devices.ts, each card once):
// - AMD's tools (amd-source.ts), on Linux, unless neither is installed.
// - llama-server's own device list (llama-devices.ts), when the daemon has found a binary.
//   It is read before the other tools, never alongside them: listing opens a context on
//   every GPU, and nvidia-smi running meanwhile would count that memory as another program's.
//
// A probe in which a card a vendor tool measured before has no figures fails (failed-sample.ts),
// and a listing is kept as "no GPU" for 5 minutes only while no tool has ever measured a card:
// once nvidia-smi answered, a listing without its figures is its failure, and the cards are
// looked for again at the next sample.
import si from 'systeminformation';
import { normalizeControllers, normalizeMem, type SiGraphicsController, type SiMem } from './normalize-si.js';
import { createAmdReader, type AmdReader } from './amd-source.js';
import { mergeDevices } from './merge-devices.js';
import { failedSample, lostMeasurements } from './failed-sample.js';
import { queryComputeApps } from './compute-apps.js';
import { execFileText } from './exec-file.js';
import type { EngineDeviceReader } from './llama-devices.js';
import { realClock, type Clock } from '../common/clock.js';
import type { GpuDevice, HostMemory } from './compute-budget.js';

/** The two systeminformation calls the probe makes; the real module satisfies it. */
export interface SystemInformation {
  graphics(): Promise<{ controllers: readonly SiGraphicsController[] }>;
  mem(): Promise<SiMem>;
}

export interface ProbeResult {
  gpus: GpuDevice[];
  /** Display controllers no backend computes on (merge-devices.ts); absent when none. */
  displays?: GpuDevice[];
  host: HostMemory;
  /** Sentences for the budget's reason (a tool that failed, a device left out); absent when none. */
  notes?: string[];
}

export interface GpuProbe {
  /**
   * Probes devices and host memory now. Blocks for the child processes si spawns (tens of
   * ms; longer if a driver tool hangs). Safe to call concurrently. si reports a missing
   * tool as "no device"; a vendor tool that measured a card before and gives no figures for
   * it now rejects with a FailedSample (failed-sample.ts). When it rejects, nothing was measured.
   */
  probe(): Promise<ProbeResult>;
}

export interface GpuProbeDeps {
  si?: SystemInformation;
  platform?: string;
  /** AMD's tools. Default: amd-smi, else rocm-smi, on Linux; none elsewhere. null: never asked. */
  amd?: AmdReader | null;
  /** llama-server's device list (createEngineDeviceReader with the binary the daemon found). Default: none. */
  engineDevices?: EngineDeviceReader | null;
  /** How long a listing that found no measured GPU stands; default 5 minutes. */
  relistWithoutGpuMs?: number;
  clock?: Pick<Clock, 'elapsed'>;
  /**
   * What nvidia-smi says when asked after its figures went missing (si keeps its words to
   * itself): its failure's message, or null when it answers. Default: the compute-apps query.
   */
  nvidiaSmiFailure?: () => Promise<string | null>;
}

export function createGpuProbe(deps: GpuProbeDeps = {}): GpuProbe {
  const source: SystemInformation = deps.si ?? si;
  const platform = deps.platform ?? process.platform;
  const listOnce = platform === 'darwin';
  const amd = deps.amd === undefined ? (platform === 'linux' ? createAmdReader() : null) : deps.amd;
  const engineDevices = deps.engineDevices ?? null;
  const relistMs = deps.relistWithoutGpuMs ?? 300_000;
  const clock = deps.clock ?? realClock;
  const nvidiaSmiFailure = deps.nvidiaSmiFailure ?? (() => queryComputeApps(execFileText).then(() => null, (error: unknown) => (error instanceof Error ? error.message : String(error))));
  /** The cards of the last probe that did not fail. */
  let lastGood: readonly GpuDevice[] = [];
  let devices: Promise<GpuDevice[]> | null = null;
  /** A listing that found no measured GPU, and when it was made. */
  let noGpuListing: { at: number; devices: Promise<GpuDevice[]> } | null = null;
  const readDevices = (): Promise<GpuDevice[]> => source.graphics().then((g) => normalizeControllers(g.controllers));
  const sampleDevices = (): Promise<GpuDevice[]> => {
    if (noGpuListing !== null && clock.elapsed() - noGpuListing.at < relistMs) return noGpuListing.devices;
    const at = clock.elapsed();
    const listing = readDevices();
    noGpuListing = null;
    void listing.then(
      (listed) => {
        const toolAnsweredBefore = lastGood.some((gpu) => gpu.measuredBy != null);
        if (!toolAnsweredBefore && !listed.some((gpu) => gpu.usedBytes !== null)) noGpuListing = { at, devices: listing };
      },
      () => undefined,
    );
    return listing;
  };
  return {
    async probe() {
      const engine = engineDevices === null ? null : await engineDevices();
      // A failed first listing is not kept: the next probe tries again.
      const listing = listOnce ? (devices ??= readDevices().catch((error: unknown) => { devices = null; throw error; })) : sampleDevices();
      const [listed, mem, amdReading] = await Promise.all([listing, source.mem(), amd === null ? null : amd()]);
      const merged = mergeDevices(listed, { amd: amdReading, engine });
      const lost = lostMeasurements(lastGood, merged.gpus);
      if (lost.length > 0) throw failedSample(lost, lost.some((g) => g.measuredBy === 'nvidia-smi') ? await nvidiaSmiFailure() : null);
      lastGood = merged.gpus;
      const result: ProbeResult = { gpus: merged.gpus, host: normalizeMem(mem) };
      if (merged.displays.length > 0) result.displays = merged.displays;
      if (merged.notes.length > 0) result.notes = merged.notes;
      return result;
    },
  };
}
