// The machine's graphics devices and host memory, through systeminformation.
//
// Facts about si 5.33 that shape this file (read in node_modules/systeminformation/lib):
// - On Linux it lists GPUs from `lspci -vvv` and only then asks
//   `nvidia-smi --query-gpu=…16 fields… --format=csv,noheader,nounits` for their memory,
//   matching by PCI address: without lspci on PATH, NVIDIA GPUs are invisible.
// - It runs nvidia-smi with a copy of process.env taken when it is first imported, so a
//   PATH set later is ignored (the integration test therefore probes in a child process).
// - It does not cache and a call costs ~20 ms of child processes. With DISPLAY set it also
//   runs `xrandr --verbose` and `xdpyinfo` (and PowerShell on Windows), and xrandr makes the X
//   server re-probe its outputs: the screen stutters. So it only lists the cards, at the first
//   probe and again when they may have changed (every 5 minutes, after a failed listing, or
//   when nvidia-smi names a card the listing lacks); every sample takes the figures that move
//   from the vendor tools directly (nvidia-memory.ts, amd-source.ts).
// - On macOS it runs `system_profiler -detailLevel full SPDisplaysDataType`, which takes
//   up to seconds and reports no memory use at all (unified memory is measured through host
//   RAM). So on macOS the device list is read once and only host memory is sampled.
// - A listing is four child processes or more (lspci, nvidia-smi, clinfo, xdpyinfo), ~100 ms
//   of the daemon's CPU on a loaded machine; at every 2 s sample they were most of an idle
//   daemon's CPU on a machine without a GPU (BENCHMARKS, idle daemon). Host memory is read at
//   every probe.
//
// Beyond si, two sources measure what it cannot (merged by merge-devices.ts, each card once):
// - AMD's tools (amd-source.ts), on Linux, unless neither is installed.
// - llama-server's own device list (llama-devices.ts), when the daemon has found a binary.
//   It is read before the other tools, never alongside them: listing opens a context on
//   every GPU, and nvidia-smi running meanwhile would count that memory as another program's.
//
// A probe in which a card a vendor tool measured before has no figures fails (failed-sample.ts);
// the cards have their figures again at the first sample the tool answers, with no new listing.
// Unless the card is gone: nvidia-smi says it cannot reach it ("GPU is lost", nvidia-memory.ts),
// or answers for the other cards and no longer lists it at all. A tool that fails says nothing
// about one card; these two do. Such a card is reported in `gone` and left out of `gpus` (its
// budget is not offered), keeping its place in the numbering so that the cards after it keep
// theirs, until nvidia-smi gives its figures again.
import si from 'systeminformation';
import { normalizeControllers, normalizeMem, type SiGraphicsController, type SiMem } from './normalize-si.js';
import { createAmdReader, type AmdReader } from './amd-source.js';
import { mergeDevices } from './merge-devices.js';
import { failedSample, lostMeasurements } from './failed-sample.js';
import { queryComputeApps } from './compute-apps.js';
import { execFileText } from './exec-file.js';
import { createNvidiaMemoryReader, type NvidiaMemory, type NvidiaMemoryReader, type NvidiaReading } from './nvidia-memory.js';
import type { EngineDeviceReader } from './llama-devices.js';
import { realClock, type Clock } from '../common/clock.js';
import type { GoneGpu, GpuDevice, HostMemory } from './compute-budget.js';
import { errorMessage } from '../contracts/error-message.js';

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
  /** Cards its vendor tool measured before and now cannot reach (see the header): not in `gpus`. Absent when none. */
  gone?: GoneGpu[];
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
  /** How long a listing of the cards stands before it is made again; default 5 minutes. */
  relistMs?: number;
  /** NVIDIA cards' memory at each sample. Default: nvidia-smi's --query-gpu, where it may run (not macOS). null: never asked. */
  nvidiaMemory?: NvidiaMemoryReader | null;
  clock?: Pick<Clock, 'elapsed'>;
  /**
   * What nvidia-smi says when asked after its figures went missing (si keeps its words to
   * itself): its failure's message, or null when it answers. Default: the compute-apps query.
   */
  nvidiaSmiFailure?: () => Promise<string | null>;
}

/**
 * The listed cards with nvidia-smi's figures where it answered for them. A gone card keeps its
 * last figures, so that it keeps its place in the numbering (merge-devices.ts) until it is taken out.
 */
function withNvidiaFiguresOnce(devices: GpuDevice[], cards: ReadonlyMap<string, NvidiaMemory>, gone: ReadonlyMap<string, { card: GpuDevice }> = new Map()): GpuDevice[] {
  return devices.map((gpu) => {
    const card = gpu.busAddress === null ? undefined : cards.get(gpu.busAddress);
    if (card !== undefined) return { ...gpu, totalBytes: card.totalBytes, usedBytes: card.usedBytes, measuredBy: 'nvidia-smi' as const };
    const last = gpu.busAddress === null ? undefined : gone.get(gpu.busAddress)?.card;
    if (last !== undefined) return { ...gpu, totalBytes: last.totalBytes, usedBytes: last.usedBytes, measuredBy: 'nvidia-smi' as const };
    return gpu.measuredBy === 'nvidia-smi' ? { ...gpu, usedBytes: null, measuredBy: null } : gpu;
  });
}

/**
 * The cards nvidia-smi measured in `before` that this reading says are gone: named as lost, or
 * left out of an answer that lists other cards. One it names without figures ('[N/A]'), or an
 * answer that lists no card, is a tool that fails, not a card that is gone. Pure.
 */
export function goneInReading(before: readonly GpuDevice[], reading: NvidiaReading): Map<string, string> {
  const gone = new Map<string, string>();
  for (const card of before) {
    if (card.measuredBy !== 'nvidia-smi' || card.busAddress === null || reading.cards.has(card.busAddress)) continue;
    const said = reading.lost.get(card.busAddress);
    if (said !== undefined) gone.set(card.busAddress, `nvidia-smi says: ${said}`);
    else if (reading.cards.size > 0 && !reading.named.has(card.busAddress)) gone.set(card.busAddress, 'nvidia-smi answers for the other GPUs and no longer lists it');
  }
  return gone;
}

export function createGpuProbe(deps: GpuProbeDeps = {}): GpuProbe {
  const source: SystemInformation = deps.si ?? si;
  const platform = deps.platform ?? process.platform;
  const listOnce = platform === 'darwin';
  const amd = deps.amd === undefined ? (platform === 'linux' ? createAmdReader() : null) : deps.amd;
  const engineDevices = deps.engineDevices ?? null;
  const relistMs = deps.relistMs ?? 300_000;
  const clock = deps.clock ?? realClock;
  const nvidiaMemory = deps.nvidiaMemory === undefined ? (platform === 'darwin' ? null : createNvidiaMemoryReader(execFileText)) : deps.nvidiaMemory;
  const nvidiaSmiFailure = deps.nvidiaSmiFailure ?? (() => queryComputeApps(execFileText).then(() => null, (error: unknown) => errorMessage(error)));
  /** The cards of the last probe that did not fail. */
  let lastGood: readonly GpuDevice[] = [];
  /** The cards that are gone (see the header), by bus address: each as last measured, and why. */
  const gone = new Map<string, { card: GpuDevice; why: string }>();
  /** The last listing of the cards, and when it was made; null before the first and after a failed one. */
  let listing: { at: number; devices: Promise<GpuDevice[]> } | null = null;
  const readDevices = (): Promise<GpuDevice[]> => source.graphics().then((g) => normalizeControllers(g.controllers));
  const listed = (): Promise<GpuDevice[]> => {
    if (listing !== null && (listOnce || clock.elapsed() - listing.at < relistMs)) return listing.devices;
    const made = { at: clock.elapsed(), devices: readDevices() };
    listing = made;
    // A failed listing is not kept: the next probe lists again.
    made.devices.catch(() => {
      if (listing === made) listing = null;
    });
    return made.devices;
  };
  /**
   * The listed cards with this sample's NVIDIA figures. A card nvidia-smi measured in the listing
   * and does not answer for now has none (lostMeasurements then fails the sample), and has them
   * again at the first sample it answers; a card it answers for that the listing lacks means the
   * cards changed: listed again.
   */
  const withNvidiaFigures = async (devices: GpuDevice[]): Promise<{ devices: GpuDevice[]; said: string | null }> => {
    if (nvidiaMemory === null) return { devices, said: null };
    let reading: NvidiaReading;
    try {
      reading = await nvidiaMemory();
    } catch (error) {
      // No driver, or one that fails now: only the cards it measured lose their figures (gone ones stay gone).
      return { devices: withNvidiaFiguresOnce(devices, new Map(), gone), said: errorMessage(error) };
    }
    const { cards } = reading;
    for (const bus of cards.keys()) gone.delete(bus);
    for (const [bus, why] of goneInReading(lastGood, reading)) {
      const card = lastGood.find((g) => g.busAddress === bus) as GpuDevice;
      gone.set(bus, { card, why });
    }
    const unlisted = [...cards.keys()].some((bus) => !devices.some((gpu) => gpu.busAddress === bus));
    if (unlisted && listing !== null) {
      listing = null;
      return { devices: withNvidiaFiguresOnce(await listed(), cards, gone), said: null };
    }
    return { devices: withNvidiaFiguresOnce(devices, cards, gone), said: null };
  };
  return {
    async probe() {
      const engine = engineDevices === null ? null : await engineDevices();
      const [sampled, mem, amdReading] = await Promise.all([listed().then(withNvidiaFigures), source.mem(), amd === null ? null : amd()]);
      const merged = mergeDevices(sampled.devices, { amd: amdReading, engine });
      const isGone = (g: GpuDevice): boolean => g.busAddress !== null && gone.has(g.busAddress);
      const gpus = merged.gpus.filter((g) => !isGone(g));
      const lost = lostMeasurements(lastGood.filter((g) => !isGone(g)), gpus);
      if (lost.length > 0) throw failedSample(lost, lost.some((g) => g.measuredBy === 'nvidia-smi') ? (sampled.said ?? (await nvidiaSmiFailure())) : null);
      lastGood = gpus;
      const result: ProbeResult = { gpus, host: normalizeMem(mem) };
      if (merged.displays.length > 0) result.displays = merged.displays;
      if (merged.notes.length > 0) result.notes = merged.notes;
      if (gone.size > 0) {
        // Numbered as merged while the listing still has it; as last measured once it does not.
        result.gone = [...gone.entries()].map(([bus, { card, why }]) => {
          const now = merged.gpus.find((g) => g.busAddress === bus) ?? card;
          return { index: now.index, name: now.name, vendor: now.vendor, busAddress: bus, why };
        });
      }
      return result;
    },
  };
}
