// What our engines hold on AMD and Intel GPUs, per GPU, from the kernel's DRM fdinfo.
//
// NVIDIA's driver answers "which process holds what, on which card" (compute-apps.ts). AMD's
// tools do not: `amd-smi process` lists every process under every GPU with one process-wide
// figure, `rocm-smi --showpids` names no GPU (see amd-smi.ts). The kernel does: every open
// DRM file of a process has /proc/<pid>/fdinfo/<fd> with the device's PCI address
// (drm-pdev) and the memory its client holds in each region (docs.kernel.org/gpu/
// drm-usage-stats.html). ROCm's allocations live in the same per-file GPU VM, so an engine
// running on ROCm or Vulkan shows up there. Our own processes' fdinfo is readable without
// privileges.
//
// Which keys: the device-local regions ("vram" on amdgpu and xe, "local0" on i915),
// `drm-resident-*` (what is in VRAM now, which is what the card's "used" counts), else
// amdgpu's legacy `drm-memory-vram` (kernels from before amdgpu printed the common keys, in 2024). A client can
// be open through several fds (dup, fork): each (device, client id) counts once.
import { canonicalBusAddress } from './normalize-si.js';

/** One DRM client as one fdinfo file describes it. */
export interface DrmClient {
  driver: string;
  /** Canonical PCI address of the device; null for a device without one (a platform GPU). */
  busAddress: string | null;
  clientId: string;
  /** Device-local memory the client holds, bytes. */
  deviceBytes: number;
}

const UNIT: Record<string, number> = { '': 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3 };

/** Parses one /proc/<pid>/fdinfo/<fd>; null when it is not a DRM file (no drm-driver line). */
export function parseDrmFdinfo(text: string): DrmClient | null {
  const fields = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const m = /^([\w-]+):\s*(.*?)\s*$/.exec(line);
    if (m?.[1] !== undefined && m[2] !== undefined) fields.set(m[1], m[2]);
  }
  const driver = fields.get('drm-driver');
  if (driver === undefined) return null;
  let resident = 0;
  let sawResident = false;
  for (const [key, value] of fields) {
    const region = /^drm-resident-(vram\d*|local\d*)$/.exec(key);
    if (region === null) continue;
    sawResident = true;
    resident += bytesOf(value);
  }
  return {
    driver,
    busAddress: canonicalBusAddress(fields.get('drm-pdev') ?? ''),
    clientId: fields.get('drm-client-id') ?? '',
    deviceBytes: sawResident ? resident : bytesOf(fields.get('drm-memory-vram') ?? '0'),
  };
}

export interface ProcFs {
  readdir(path: string): Promise<string[]>;
  readFile(path: string): Promise<string>;
}

/**
 * Device-local bytes our pids hold, by canonical PCI address. Blocks for reading each
 * pid's fdinfo directory (a llama-server has a few dozen fds). A pid that is gone, or whose
 * fdinfo cannot be read, holds nothing: it is no longer ours to count.
 */
export async function drmDeviceBytesByBus(pids: readonly number[], fs: ProcFs, procRoot = '/proc'): Promise<Map<string, number>> {
  const seen = new Set<string>();
  const byBus = new Map<string, number>();
  for (const pid of pids) {
    const dir = `${procRoot}/${pid}/fdinfo`;
    const fds = await fs.readdir(dir).catch(() => [] as string[]);
    for (const fd of fds) {
      const client = parseDrmFdinfo(await fs.readFile(`${dir}/${fd}`).catch(() => ''));
      if (client === null || client.busAddress === null) continue;
      const key = `${client.busAddress} ${client.clientId}`;
      if (client.clientId !== '' && seen.has(key)) continue;
      seen.add(key);
      byBus.set(client.busAddress, (byBus.get(client.busAddress) ?? 0) + client.deviceBytes);
    }
  }
  return byBus;
}

function bytesOf(value: string): number {
  const m = /^(\d+)\s*(KiB|MiB|GiB)?$/.exec(value.trim());
  if (m === null) return 0;
  return Number(m[1]) * (UNIT[m[2] ?? ''] ?? 1);
}
