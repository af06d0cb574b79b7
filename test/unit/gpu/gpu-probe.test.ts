import { describe, expect, it } from 'vitest';
import { createGpuProbe, type SystemInformation } from '../../../core/gpu/gpu-probe.js';
import { parseListDevices } from '../../../core/gpu/llama-devices.js';
import { FailedSample } from '../../../core/gpu/failed-sample.js';
import type { NvidiaReading } from '../../../core/gpu/nvidia-memory.js';
import { FakeClock } from '../../support/fake-clock.js';

const MiB = 1024 ** 2;

// What si 5.33 returns on Linux for a box with an RTX 4090 and an RX 7900 XTX: only the
// NVIDIA card carries nvidia-smi's figures.
const controllers = [
  { vendor: 'NVIDIA Corporation', model: 'AD102 [GeForce RTX 4090]', busAddress: '01:00.0', name: 'NVIDIA GeForce RTX 4090', pciBus: '00000000:01:00.0', memoryTotal: 24564, memoryUsed: 600, memoryFree: 23618 },
  { vendor: 'Advanced Micro Devices, Inc. [AMD/ATI]', model: 'Navi 31 [Radeon RX 7900 XT/7900 XTX]', busAddress: '03:00.0', vram: 256 },
];

/** An nvidia-smi answer with figures for these cards, and `lost` the ones it says it cannot reach. */
function reading(cards: [string, { totalBytes: number; usedBytes: number }][], lost: [string, string][] = []): NvidiaReading {
  return { cards: new Map(cards), named: new Set(cards.map(([bus]) => bus)), lost: new Map(lost) };
}

/** nvidia-smi's --query-gpu memory answer for the RTX 4090 above, `freeMiB` free. */
function nvidiaSays(log: string[], freeMiB = 23618): () => Promise<NvidiaReading> {
  return async () => {
    log.push('nvidia-smi');
    return reading([['0000:01:00.0', { totalBytes: 24564 * MiB, usedBytes: (24564 - freeMiB) * MiB }]]);
  };
}

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
      nvidiaMemory: nvidiaSays(log),
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
    expect(log.slice(1).sort()).toEqual(['amd', 'nvidia-smi', 'si.graphics', 'si.mem']);
  });

  it('passes on what a source had to say', async () => {
    const probe = createGpuProbe({
      si: recordingSi([]),
      platform: 'linux',
      nvidiaMemory: nvidiaSays([]),
      amd: async () => ({ source: null, cards: [], notes: ['AMD GPUs cannot be measured: amd-smi failed: amdsmi_init failed.'] }),
    });
    const result = await probe.probe();
    expect(result.notes).toEqual(['AMD GPUs cannot be measured: amd-smi failed: amdsmi_init failed.']);
    // Nothing computes on the AMD card as far as any source can tell: a display controller, not GPU 1.
    expect(result.gpus.map((g) => g.name)).toEqual(['NVIDIA GeForce RTX 4090']);
    expect(result.displays).toEqual([expect.objectContaining({ busAddress: '0000:03:00.0', measuredBy: null, usedBytes: null })]);
  });

  it('fails the probe when the AMD reading fails, so the live budget keeps its last sample', async () => {
    const probe = createGpuProbe({ si: recordingSi([]), platform: 'linux', nvidiaMemory: nvidiaSays([]), amd: async () => { throw new Error('amd-smi answered before and fails now: timed out'); } });
    await expect(probe.probe()).rejects.toThrow(/fails now/);
  });
});

describe('createGpuProbe: the cards listed seldom, their figures sampled from the vendor tool (issue 24)', () => {
  it('lists the cards once per 5 minutes, since si runs xrandr and xdpyinfo with a DISPLAY, and takes each sample’s memory from nvidia-smi', async () => {
    const log: string[] = [];
    const clock = new FakeClock();
    const start = clock.elapsed();
    let free = 23618;
    const probe = createGpuProbe({ si: recordingSi(log), platform: 'linux', amd: null, clock, nvidiaMemory: async () => nvidiaSays(log, free)() });
    const used: (number | null)[] = [];
    for (let i = 0; i < 5; i++) {
      used.push((await probe.probe()).gpus[0]?.usedBytes ?? null);
      free -= 1000;
      await clock.advance(2_000);
    }
    expect(used).toEqual([946, 1946, 2946, 3946, 4946].map((mib) => mib * MiB));
    expect(log.filter((l) => l === 'si.graphics')).toHaveLength(1);
    expect(log.filter((l) => l === 'nvidia-smi')).toHaveLength(5);
    expect(log.filter((l) => l === 'si.mem')).toHaveLength(5);
    await clock.advance(start + 299_999 - clock.elapsed()); // 1 ms short of 5 minutes after the first listing
    await probe.probe();
    expect(log.filter((l) => l === 'si.graphics')).toHaveLength(1);
    await clock.advance(1);
    await probe.probe();
    expect(log.filter((l) => l === 'si.graphics')).toHaveLength(2);
  });

  it('lists again at once when nvidia-smi names a card the listing lacks (a card that appeared)', async () => {
    const log: string[] = [];
    let listed: object[] = [controllers[1] as object];
    const probe = createGpuProbe({
      si: { graphics: async () => { log.push('si.graphics'); return { controllers: listed }; }, mem: async () => ({ total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }) },
      platform: 'linux',
      amd: null,
      clock: new FakeClock(),
      nvidiaMemory: async () => reading(listed.length > 1 ? [['0000:01:00.0', { totalBytes: 24564 * MiB, usedBytes: 946 * MiB }]] : []),
    });
    expect((await probe.probe()).gpus).toHaveLength(0);
    listed = controllers;
    expect((await probe.probe()).gpus.map((g) => g.name)).toEqual(['NVIDIA GeForce RTX 4090']);
    expect(log).toEqual(['si.graphics', 'si.graphics']);
  });
});

describe('createGpuProbe when nvidia-smi fails after it answered (issue 23)', () => {
  it("fails the probe with nvidia-smi's own words, not a machine without GPUs, and has the card's figures at the first probe it answers, with no new listing", async () => {
    let failing: string | null = null;
    const clock = new FakeClock();
    const start = clock.elapsed();
    const graphics: number[] = [];
    const probe = createGpuProbe({
      si: { graphics: async () => { graphics.push(clock.elapsed() - start); return { controllers }; }, mem: async () => ({ total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }) },
      platform: 'linux',
      amd: null,
      clock,
      nvidiaMemory: async () => {
        if (failing !== null) throw new Error(failing);
        return nvidiaSays([])();
      },
    });
    expect((await probe.probe()).gpus).toHaveLength(1);
    failing = 'nvidia-smi --query-gpu=pci.bus_id,memory.total,memory.used,memory.free --format=csv,noheader,nounits failed: Command failed (it printed "Failed to initialize NVML: Driver/library version mismatch")';
    for (let i = 0; i < 3; i++) {
      await clock.advance(2_000);
      const failure = await probe.probe().then(() => null, (error: unknown) => error);
      expect(failure).toBeInstanceOf(FailedSample);
      expect((failure as FailedSample).message).toMatch(/^nvidia-smi answered before and gives no figures now for GPU 0 NVIDIA GeForce RTX 4090 \(0000:01:00\.0\): .*Failed to initialize NVML: Driver\/library version mismatch/);
      expect((failure as FailedSample).busAddresses).toEqual(['0000:01:00.0']);
    }
    failing = null;
    await clock.advance(2_000);
    expect((await probe.probe()).gpus.map((g) => g.measuredBy)).toEqual(['nvidia-smi']);
    expect(graphics).toEqual([0]);
  });
});

describe('createGpuProbe when a GPU is gone, not its tool failing (issue 23)', () => {
  // Two RTX A4000s, as si lists them on Linux.
  const pair = ['01:00.0', '03:00.0'].map((bus) => ({ vendor: 'NVIDIA Corporation', model: 'GA104GL [RTX A4000]', busAddress: bus, name: 'NVIDIA RTX A4000', pciBus: `00000000:${bus}`, memoryTotal: 16376, memoryUsed: 276, memoryFree: 16100 }));
  const figures = { totalBytes: 16376 * MiB, usedBytes: 276 * MiB };

  function pairProbe(answer: () => NvidiaReading) {
    return createGpuProbe({
      si: { graphics: async () => ({ controllers: pair }), mem: async () => ({ total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }) },
      platform: 'linux',
      amd: null,
      clock: new FakeClock(),
      nvidiaMemory: async () => answer(),
    });
  }

  it('takes a card nvidia-smi says it lost out of the GPUs and reports it gone by name; the card after it keeps its number; it is back at the first answer with its figures', async () => {
    let answer = reading([['0000:01:00.0', figures], ['0000:03:00.0', figures]]);
    const probe = pairProbe(() => answer);
    expect((await probe.probe()).gpus.map((g) => g.index)).toEqual([0, 1]);

    answer = reading([['0000:03:00.0', figures]], [['0000:01:00.0', 'GPU is lost. Reboot the system to recover this GPU']]);
    const lost = await probe.probe();
    expect(lost.gpus.map((g) => [g.index, g.busAddress])).toEqual([[1, '0000:03:00.0']]);
    expect(lost.gone).toEqual([{ index: 0, name: 'NVIDIA RTX A4000', vendor: 'NVIDIA Corporation', busAddress: '0000:01:00.0', why: 'nvidia-smi says: GPU is lost. Reboot the system to recover this GPU' }]);
    // Still gone while nvidia-smi stays silent about it.
    answer = reading([['0000:03:00.0', figures]]);
    expect((await probe.probe()).gone?.map((g) => g.busAddress)).toEqual(['0000:01:00.0']);

    answer = reading([['0000:01:00.0', figures], ['0000:03:00.0', figures]]);
    const back = await probe.probe();
    expect(back.gpus.map((g) => g.index)).toEqual([0, 1]);
    expect(back.gone).toBeUndefined();
  });

  it('counts a card missing from an answer that lists the other as gone, and a card listed without figures or an empty answer as a failing tool', async () => {
    let answer = reading([['0000:01:00.0', figures], ['0000:03:00.0', figures]]);
    const probe = pairProbe(() => answer);
    await probe.probe();

    answer = { cards: new Map([['0000:01:00.0', figures]]), named: new Set(['0000:01:00.0', '0000:03:00.0']), lost: new Map() };
    await expect(probe.probe()).rejects.toBeInstanceOf(FailedSample);
    answer = reading([]);
    await expect(probe.probe()).rejects.toBeInstanceOf(FailedSample);

    answer = reading([['0000:01:00.0', figures]]);
    const gone = await probe.probe();
    expect(gone.gpus.map((g) => g.busAddress)).toEqual(['0000:01:00.0']);
    expect(gone.gone).toEqual([expect.objectContaining({ index: 1, busAddress: '0000:03:00.0', why: 'nvidia-smi answers for the other GPUs and no longer lists it' })]);
  });
});
