// What the driver says one process holds on each GPU: the figure `npm run gpu-check` holds the
// daemon's estimate against. NVIDIA's through nvidia-smi's per-process query, keyed by bus id;
// any other card's (AMD, Intel) through the kernel's DRM fdinfo of the pid, keyed by PCI
// address — the same two sources the daemon counts its own engines with (core/gpu/own-usage.ts).
import { readdir, readFile } from 'node:fs/promises';
import { queryComputeApps } from '../../core/gpu/compute-apps.js';
import type { GpuDevice } from '../../core/gpu/compute-budget.js';
import { drmDeviceBytesByBus } from '../../core/gpu/drm-fdinfo.js';
import { execFileText } from '../../core/gpu/exec-file.js';

/** Bytes `pid` holds on each GPU (by the probe's index) where a driver lists it. Blocks for one nvidia-smi call and the pid's fdinfo. */
export async function driverFiguresOf(pid: number, gpus: readonly GpuDevice[]): Promise<Map<number, number>> {
  const byGpu = new Map<number, number>();
  const indexOf = new Map(gpus.flatMap((gpu) => (gpu.busAddress === null ? [] : [[gpu.busAddress, gpu.index] as const])));
  const add = (bus: string, bytes: number) => {
    const index = indexOf.get(bus);
    if (index !== undefined) byGpu.set(index, (byGpu.get(index) ?? 0) + bytes);
  };
  if (gpus.some((gpu) => gpu.measuredBy === 'nvidia-smi')) {
    for (const app of await queryComputeApps(execFileText)) if (app.pid === pid && app.usedBytes !== null) add(app.busAddress, app.usedBytes);
  }
  if (gpus.some((gpu) => gpu.measuredBy !== 'nvidia-smi')) {
    const nvidia = new Set(gpus.filter((gpu) => gpu.measuredBy === 'nvidia-smi').map((gpu) => gpu.busAddress));
    for (const [bus, bytes] of await drmDeviceBytesByBus([pid], { readdir, readFile: (path) => readFile(path, 'utf8') })) if (!nvidia.has(bus)) add(bus, bytes);
  }
  return byGpu;
}
