import { describe, expect, it } from 'vitest';
import { createGpuProbe, type SystemInformation } from '../../../core/gpu/gpu-probe.js';
import { parseListDevices } from '../../../core/gpu/llama-devices.js';
import { FailedSample } from '../../../core/gpu/failed-sample.js';

const MiB = 1024 ** 2;

// What si 5.33 returns on Linux for a box with an RTX 4090 and an RX 7900 XTX: only the
// NVIDIA card carries nvidia-smi's figures.
const controllers = [
  { vendor: 'NVIDIA Corporation', model: 'AD102 [GeForce RTX 4090]', busAddress: '01:00.0', name: 'NVIDIA GeForce RTX 4090', pciBus: '00000000:01:00.0', memoryTotal: 24564, memoryUsed: 600, memoryFree: 23618 },
  { vendor: 'Advanced Micro Devices, Inc. [AMD/ATI]', model: 'Navi 31 [Radeon RX 7900 XT/7900 XTX]', busAddress: '03:00.0', vram: 256 },
];

function recordingSi(log: string[]): SystemInformation {
  return {
    graphics: async () => { log.push('si.graphics'); return { controllers }; },
    mem: async () => { log.push('si.mem'); return { total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }; },
  };
}

describe('createGpuProbe with AMD tools and llama-server\'s list', () => {
  it('merges every source into one list, each card once, with its class and engine device', async () => {
    const log: string[] = [];
    const probe = createGpuProbe({
      si: recordingSi(log),
      platform: 'linux',
      amd: async () => { log.push('amd'); return { source: 'amd-smi', cards: [{ busAddress: '0000:03:00.0', name: 'AMD Radeon RX 7900 XTX', totalBytes: 24560 * MiB, usedBytes: 500 * MiB }], notes: [] }; },
      engineDevices: async () => {
        log.push('llama-server');
        return parseListDevices('Available devices:\n  Vulkan0: NVIDIA GeForce RTX 4090 (24564 MiB, 23000 MiB free)\n  Vulkan1: AMD Radeon RX 7900 XTX (RADV NAVI31) (24560 MiB, 24000 MiB free)\n');
      },
    });
    const result = await probe.probe();
    expect(result.gpus.map((g) => [g.index, g.busAddress, g.measuredBy, g.deviceClass, g.engineDevice, g.usedBytes])).toEqual([
      [0, '0000:01:00.0', 'nvidia-smi', 'nvidia:rtx-4090', 'Vulkan0', (24564 - 23618) * MiB],
      [1, '0000:03:00.0', 'amd-smi', 'amd:rx-7900-xtx', 'Vulkan1', 500 * MiB],
    ]);
    expect(result.notes).toBeUndefined();
    // llama-server opens a context on every GPU while it lists them: it must be gone before nvidia-smi looks.
    expect(log[0]).toBe('llama-server');
    expect(log.slice(1).sort()).toEqual(['amd', 'si.graphics', 'si.mem']);
  });

  it('passes on what a source had to say', async () => {
    const probe = createGpuProbe({
      si: recordingSi([]),
      platform: 'linux',
      amd: async () => ({ source: null, cards: [], notes: ['AMD GPUs cannot be measured: amd-smi failed: amdsmi_init failed.'] }),
    });
    const result = await probe.probe();
    expect(result.notes).toEqual(['AMD GPUs cannot be measured: amd-smi failed: amdsmi_init failed.']);
    // Nothing computes on the AMD card as far as any source can tell: a display controller, not GPU 1.
    expect(result.gpus.map((g) => g.name)).toEqual(['NVIDIA GeForce RTX 4090']);
    expect(result.displays).toEqual([expect.objectContaining({ busAddress: '0000:03:00.0', measuredBy: null, usedBytes: null })]);
  });

  it('fails the probe when the AMD reading fails, so the live budget keeps its last sample', async () => {
    const probe = createGpuProbe({ si: recordingSi([]), platform: 'linux', amd: async () => { throw new Error('amd-smi answered before and fails now: timed out'); } });
    await expect(probe.probe()).rejects.toThrow(/fails now/);
  });
});

describe('createGpuProbe on a machine whose listing measures no GPU', () => {
  it('lists devices again only every 5 minutes, reads host memory at every probe, and lists at every probe once a GPU is measured', async () => {
    const log: string[] = [];
    let now = 0;
    let listed: typeof controllers = [controllers[1] as (typeof controllers)[number]]; // the AMD card only: si measures none
    const si: SystemInformation = {
      graphics: async () => { log.push('si.graphics'); return { controllers: listed }; },
      mem: async () => { log.push('si.mem'); return { total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }; },
    };
    const probe = createGpuProbe({ si, platform: 'linux', amd: null, clock: { elapsed: () => now } });
    for (let i = 0; i < 5; i++) {
      expect((await probe.probe()).displays).toHaveLength(1);
      now += 2_000;
    }
    expect(log.filter((l) => l === 'si.graphics')).toHaveLength(1);
    expect(log.filter((l) => l === 'si.mem')).toHaveLength(5);
    // 5 minutes on, a GPU that appeared meanwhile is found, and from then on listed at every probe.
    now = 299_000;
    await probe.probe();
    expect(log.filter((l) => l === 'si.graphics')).toHaveLength(1);
    now = 300_000;
    listed = controllers;
    expect((await probe.probe()).gpus).toHaveLength(1);
    await probe.probe();
    await probe.probe();
    expect(log.filter((l) => l === 'si.graphics')).toHaveLength(4);
  });
});

describe('createGpuProbe when nvidia-smi fails after it answered (issue 23)', () => {
  it("fails the probe with nvidia-smi's own words, not a machine without GPUs, and finds the card at the next probe once it answers", async () => {
    const nvidia = controllers[0] as (typeof controllers)[number];
    // What si returns while nvidia-smi fails: lspci's card, without a figure.
    const unmeasured = { vendor: nvidia.vendor, model: nvidia.model, busAddress: nvidia.busAddress };
    let listed: object[] = [nvidia];
    let now = 0;
    const graphics: number[] = [];
    const probe = createGpuProbe({
      si: { graphics: async () => { graphics.push(now); return { controllers: listed }; }, mem: async () => ({ total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }) },
      platform: 'linux',
      amd: null,
      clock: { elapsed: () => now },
      nvidiaSmiFailure: async () => 'nvidia-smi --query-compute-apps=gpu_bus_id,pid,used_memory --format=csv,noheader,nounits failed: Command failed (it printed "Failed to initialize NVML: Driver/library version mismatch")',
    });
    expect((await probe.probe()).gpus).toHaveLength(1);
    listed = [unmeasured];
    for (let i = 0; i < 3; i++) {
      now += 2_000;
      const failure = await probe.probe().then(() => null, (error: unknown) => error);
      expect(failure).toBeInstanceOf(FailedSample);
      expect((failure as FailedSample).message).toMatch(/^nvidia-smi answered before and gives no figures now for GPU 0 NVIDIA GeForce RTX 4090 \(0000:01:00\.0\): .*Failed to initialize NVML: Driver\/library version mismatch/);
      expect((failure as FailedSample).busAddresses).toEqual(['0000:01:00.0']);
    }
    listed = [nvidia];
    now += 2_000;
    expect((await probe.probe()).gpus.map((g) => g.measuredBy)).toEqual(['nvidia-smi']);
    // Each probe listed afresh: a listing without nvidia-smi's figures is not kept as "no GPU" for 5 minutes.
    expect(graphics).toEqual([0, 2_000, 4_000, 6_000, 8_000]);
  });
});
