// What our own engines hold, so the budget counts it as ours and not as "other programs".
//
// Without it the budget would shrink by every model we load and the controller would evict
// what it had just launched. Device memory comes per pid from NVIDIA's driver for the cards
// nvidia-smi measures (compute-apps.ts), and from the kernel's DRM fdinfo for the others
// (drm-fdinfo.ts: AMD, Intel); host memory (the 'cpu' and 'unified' modes) from the OS per pid.
import { readdir as readdirAsync, readFile as readFileAsync } from 'node:fs/promises';
import { queryComputeApps, type ComputeAppsReader } from './compute-apps.js';
import { drmDeviceBytesByBus } from './drm-fdinfo.js';
import { execFileText, type ExecFileText } from './exec-file.js';
import type { GpuDevice } from './compute-budget.js';

export interface OwnUsage {
  /** Device bytes our pids hold, by GpuDevice.index. */
  byGpu: ReadonlyMap<number, number>;
  /** Host bytes our pids hold that the OS cannot reclaim. */
  hostBytes: number;
}

/**
 * Measures our engines' memory on the devices the probe just saw. Blocks for one
 * nvidia-smi call (only when a GPU nvidia-smi measures is present and we have pids), reading
 * our pids' fdinfo (only when another measured GPU is, on Linux) and one host query. Rejects
 * when nvidia-smi fails: reporting 0 instead would turn our own models into "other programs"
 * and shrink the budget under them, so the sample is better dropped.
 */
export type OwnUsageProvider = (gpus: readonly GpuDevice[]) => Promise<OwnUsage>;

export const NO_OWN_USAGE: OwnUsage = { byGpu: new Map(), hostBytes: 0 };

export interface OwnUsageDeps {
  /** The pids of our running engine processes, read at each sample. */
  pids: () => Iterable<number>;
  /** The per-process GPU query; default a fresh nvidia-smi call through `exec` each time. */
  computeApps?: ComputeAppsReader;
  exec?: ExecFileText;
  readFile?: (path: string) => Promise<string>;
  readdir?: (path: string) => Promise<string[]>;
  /** Where /proc is; tests point it at a fixture tree. Default '/proc'. */
  procRoot?: string;
  platform?: string;
}

export function createOwnUsageProvider(deps: OwnUsageDeps): OwnUsageProvider {
  const exec = deps.exec ?? execFileText;
  const readFile = deps.readFile ?? ((path: string) => readFileAsync(path, 'utf8'));
  const readdir = deps.readdir ?? ((path: string) => readdirAsync(path));
  const platform = deps.platform ?? process.platform;
  const computeApps = deps.computeApps ?? (() => queryComputeApps(exec));
  const procRoot = deps.procRoot ?? '/proc';

  return async (gpus) => {
    const pids = [...new Set(deps.pids())].filter((p) => Number.isInteger(p) && p > 0);
    if (pids.length === 0) return NO_OWN_USAGE;
    const measured = gpus.filter((g) => g.usedBytes !== null && !g.unifiedMemory && g.busAddress !== null);
    const byNvidiaSmi = measured.filter((g) => (g.measuredBy ?? 'nvidia-smi') === 'nvidia-smi');
    // fdinfo is Linux's; elsewhere our engines on these GPUs count as other programs (README, Known limits).
    const byFdinfo = platform === 'linux' ? measured.filter((g) => !byNvidiaSmi.includes(g)) : [];
    const [fromDriver, fromKernel, hostBytes] = await Promise.all([
      byNvidiaSmi.length === 0 ? new Map<number, number>() : computeAppsByGpu(byNvidiaSmi, pids, computeApps),
      byFdinfo.length === 0 ? new Map<string, number>() : drmDeviceBytesByBus(pids, { readdir, readFile }, procRoot),
      hostBytesOf(pids, platform, exec, readFile),
    ]);
    const byGpu = new Map(fromDriver);
    for (const gpu of byFdinfo) {
      const bytes = fromKernel.get(gpu.busAddress ?? '');
      if (bytes !== undefined && bytes > 0) byGpu.set(gpu.index, bytes);
    }
    return { byGpu, hostBytes };
  };
}

async function computeAppsByGpu(gpus: readonly GpuDevice[], pids: readonly number[], computeApps: ComputeAppsReader): Promise<Map<number, number>> {
  const byGpu = new Map<number, number>();
  const ours = new Set(pids);
  for (const app of await computeApps()) {
    if (!ours.has(app.pid) || app.usedBytes === null) continue;
    const gpu = gpus.find((g) => g.busAddress === app.busAddress);
    if (gpu !== undefined) byGpu.set(gpu.index, (byGpu.get(gpu.index) ?? 0) + app.usedBytes);
  }
  return byGpu;
}

/**
 * Linux: RssAnon from /proc/<pid>/status, not RSS. A model llama.cpp mmaps is file-backed
 * page cache, which MemAvailable already counts as available; adding it back as "ours"
 * would count it twice. Elsewhere `ps -o rss=` is the portable answer (on macOS Metal
 * buffers are anonymous memory anyway). Windows: 0, there is no cheap per-pid query.
 * A process that is gone holds nothing, so its read failure counts 0.
 */
async function hostBytesOf(
  pids: readonly number[],
  platform: string,
  exec: ExecFileText,
  readFile: (path: string) => Promise<string>,
): Promise<number> {
  if (platform === 'linux') {
    const each = await Promise.all(
      pids.map((pid) => readFile(`/proc/${pid}/status`).then(parseRssAnonBytes, () => 0)),
    );
    return each.reduce((a, b) => a + b, 0);
  }
  if (platform === 'win32') return 0;
  // ps exits 1 when none of the pids exists any more: nothing is held.
  const stdout = await exec('ps', ['-o', 'rss=', '-p', pids.join(',')]).catch(() => '');
  return stdout
    .split(/\r?\n/)
    .map((line) => Number(line.trim()))
    .filter((kib) => Number.isFinite(kib) && kib > 0)
    .reduce((a, kib) => a + kib * 1024, 0);
}

/** "RssAnon:\t  123456 kB" → bytes; 0 when the line is missing (kernel threads, old kernels). */
export function parseRssAnonBytes(status: string): number {
  const m = /^RssAnon:\s+(\d+)\s*kB/m.exec(status);
  return m === null ? 0 : Number(m[1]) * 1024;
}
