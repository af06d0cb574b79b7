import { describe, expect, it } from 'vitest';
import { drmDeviceBytesByBus, parseDrmFdinfo, type ProcFs } from '../../../core/gpu/drm-fdinfo.js';
import { toolOutput } from '../../support/gpu-tool-output.js';

const KiB = 1024;
const MiB = 1024 ** 2;

describe('parseDrmFdinfo', () => {
  it('reads resident VRAM and the device of an amdgpu compute client (common keys)', () => {
    expect(parseDrmFdinfo(toolOutput('fdinfo-amdgpu-common-keys.txt'))).toEqual({
      driver: 'amdgpu', busAddress: '0000:04:00.0', clientId: '4', deviceBytes: 44564 * KiB,
    });
  });

  it('reads the legacy drm-memory-vram of older kernels', () => {
    expect(parseDrmFdinfo(toolOutput('fdinfo-amdgpu-legacy.txt'))).toEqual({
      driver: 'amdgpu', busAddress: '0000:08:00.0', clientId: '217', deviceBytes: 2068 * KiB,
    });
  });

  it('prefers resident over the legacy key, and sums every device-local region (xe vram0, i915 local0)', () => {
    const xe = 'drm-driver:\txe\ndrm-client-id:\t9\ndrm-pdev:\t0000:03:00.0\ndrm-total-vram0:\t9 MiB\ndrm-resident-vram0:\t8 MiB\ndrm-resident-gtt:\t4 MiB\n';
    expect(parseDrmFdinfo(xe)?.deviceBytes).toBe(8 * MiB);
    const i915 = 'drm-driver:\ti915\ndrm-client-id:\t14\ndrm-pdev:\t0000:03:00.0\ndrm-resident-local0:\t6144 KiB\ndrm-resident-system0:\t2048 KiB\n';
    expect(parseDrmFdinfo(i915)?.deviceBytes).toBe(6144 * KiB);
    expect(parseDrmFdinfo('drm-driver: amdgpu\ndrm-client-id: 7\ndrm-resident-vram: 2 MiB\ndrm-memory-vram: 4096 KiB\n')?.deviceBytes).toBe(2 * MiB);
  });

  it('is not a DRM client without drm-driver (an ordinary file or socket)', () => {
    expect(parseDrmFdinfo('pos:\t0\nflags:\t02\nmnt_id:\t10\nino:\t1581151\n')).toBeNull();
  });
});

describe('drmDeviceBytesByBus', () => {
  const client = (bus: string, id: string, vramKiB: number) => `drm-driver:\tamdgpu\ndrm-client-id:\t${id}\ndrm-pdev:\t${bus}\ndrm-resident-vram:\t${vramKiB} KiB\n`;
  const tree: Record<string, Record<string, string>> = {
    '/p/10/fdinfo': { 0: 'pos:\t0\n', 5: client('0000:03:00.0', '41', 1024), 6: client('0000:03:00.0', '41', 1024), 7: client('0000:0c:00.0', '42', 2048) },
    '/p/11/fdinfo': { 5: client('0000:03:00.0', '43', 512) },
  };
  const fs: ProcFs = {
    readdir: async (dir) => { const d = tree[dir]; if (d === undefined) throw new Error(`ENOENT ${dir}`); return Object.keys(d); },
    readFile: async (path) => { const i = path.lastIndexOf('/'); const t = tree[path.slice(0, i)]?.[path.slice(i + 1)]; if (t === undefined) throw new Error(`ENOENT ${path}`); return t; },
  };

  it('sums our pids per GPU, counts a client open through two fds once, and a vanished pid as nothing', async () => {
    const byBus = await drmDeviceBytesByBus([10, 11, 12], fs, '/p');
    expect([...byBus.entries()].sort()).toEqual([['0000:03:00.0', 1536 * KiB], ['0000:0c:00.0', 2048 * KiB]]);
  });
});
