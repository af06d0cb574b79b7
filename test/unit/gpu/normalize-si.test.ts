import { describe, expect, it } from 'vitest';
import { canonicalBusAddress, normalizeControllers, normalizeMem, type SiGraphicsController } from '../../../core/gpu/normalize-si.js';
import { createGpuProbe } from '../../../core/gpu/gpu-probe.js';

const MiB = 1024 ** 2;

// What si 5.33 returns on Linux for an NVIDIA card after merging lspci and nvidia-smi.
const rtx4090: SiGraphicsController = {
  vendor: 'NVIDIA Corporation', model: 'AD102 [GeForce RTX 4090]', bus: 'Onboard', busAddress: '01:00.0', vram: 24564, vramDynamic: false,
  name: 'NVIDIA GeForce RTX 4090', pciBus: '00000000:01:00.0', memoryTotal: 24564, memoryUsed: 7600, memoryFree: 16618,
} as SiGraphicsController;

describe('normalizeControllers', () => {
  it.each<[string, SiGraphicsController, number | null, number | null]>([
    ['all memory fields: used = total − free, counting the driver reservation', rtx4090, 24564 * MiB, (24564 - 16618) * MiB],
    ['memoryUsed dropped for being 0: used = total − free', { ...rtx4090, memoryUsed: undefined }, 24564 * MiB, (24564 - 16618) * MiB],
    ['memoryFree dropped for being 0: the card is full', { ...rtx4090, memoryFree: undefined }, 24564 * MiB, 24564 * MiB],
    ['both usage fields missing ("N/A"): unmeasured', { ...rtx4090, memoryUsed: undefined, memoryFree: undefined }, 24564 * MiB, null],
    ['no nvidia-smi: lspci BAR size in vram is not memory we can measure', { vendor: 'NVIDIA Corporation', model: 'AD102 [GeForce RTX 4090]', busAddress: '01:00.0', vram: 32768, vramDynamic: false }, null, null],
  ])('%s', (_name, controller, totalBytes, usedBytes) => {
    const [gpu] = normalizeControllers([controller]);
    expect(gpu?.totalBytes).toBe(totalBytes);
    expect(gpu?.usedBytes).toBe(usedBytes);
  });

  it('names a device by nvidia-smi name, then lspci model, then vendor, then its index', () => {
    const names = normalizeControllers([rtx4090, { model: 'GA106 [GeForce RTX 3060]' }, { vendor: 'Matrox Electronics Systems Ltd.' }, {}]).map((g) => g.name);
    expect(names).toEqual(['NVIDIA GeForce RTX 4090', 'GA106 [GeForce RTX 3060]', 'Matrox Electronics Systems Ltd.', 'GPU 3']);
  });

  it('keeps list order as the index and prefers nvidia-smi bus ids', () => {
    const gpus = normalizeControllers([{ vendor: 'Intel Corporation', busAddress: '00:02.0' }, rtx4090]);
    expect(gpus.map((g) => [g.index, g.busAddress])).toEqual([[0, '0000:00:02.0'], [1, '0000:01:00.0']]);
  });

  it('marks Apple Silicon (built-in, dynamic VRAM) as unified memory, and nothing else', () => {
    const gpus = normalizeControllers([
      { vendor: 'Apple', model: 'Apple M2 Max', bus: 'Built-In', vram: null, vramDynamic: true } as SiGraphicsController,
      { vendor: 'Intel', model: 'Intel Iris Plus Graphics', vramDynamic: true },
      rtx4090,
    ]);
    expect(gpus.map((g) => g.unifiedMemory)).toEqual([true, false, false]);
  });
});

describe('canonicalBusAddress', () => {
  it.each([
    ['01:00.0', '0000:01:00.0'],
    ['00000000:01:00.0', '0000:01:00.0'],
    ['0000:4B:00.0', '0000:4b:00.0'],
    ['00000001:81:00.1', '0001:81:00.1'],
    ['', null],
    ['N/A', null],
    ['1:0.0', null],
  ])('%j → %j', (text, expected) => {
    expect(canonicalBusAddress(text)).toBe(expected);
  });
});

describe('normalizeMem and createGpuProbe', () => {
  it('takes total and available bytes, zero for missing', () => {
    expect(normalizeMem({ total: 64e9, available: 48e9 })).toEqual({ totalBytes: 64e9, availableBytes: 48e9 });
    expect(normalizeMem({ total: Number.NaN, available: -1 })).toEqual({ totalBytes: 0, availableBytes: 0 });
  });

  it('probes through the injected systeminformation, both calls together', async () => {
    const calls: string[] = [];
    const probe = createGpuProbe({
      si: {
        graphics: async () => { calls.push('graphics'); return { controllers: [rtx4090] }; },
        mem: async () => { calls.push('mem'); return { total: 64 * 1024 * MiB, available: 40 * 1024 * MiB }; },
      },
      amd: null,
      nvidiaMemory: null,
    });
    const result = await probe.probe();
    expect(calls.sort()).toEqual(['graphics', 'mem']);
    expect(result.gpus).toEqual([{
      index: 0, name: 'NVIDIA GeForce RTX 4090', vendor: 'NVIDIA Corporation', busAddress: '0000:01:00.0',
      totalBytes: 24564 * MiB, usedBytes: (24564 - 16618) * MiB, unifiedMemory: false,
      measuredBy: 'nvidia-smi', deviceClass: 'nvidia:rtx-4090', driverIndex: { cuda: 0 },
    }]);
    expect(result.host).toEqual({ totalBytes: 64 * 1024 * MiB, availableBytes: 40 * 1024 * MiB });
  });
});

describe('createGpuProbe on macOS', () => {
  it('lists devices once (system_profiler is slow and reports no usage) and samples host memory every time', async () => {
    let graphicsCalls = 0;
    let available = 20;
    const probe = createGpuProbe({
      platform: 'darwin',
      si: {
        graphics: async () => {
          graphicsCalls++;
          if (graphicsCalls === 1) throw new Error('system_profiler timed out');
          return { controllers: [{ vendor: 'Apple', model: 'Apple M2 Max', vramDynamic: true }] };
        },
        mem: async () => ({ total: 32 * 1024 * MiB, available: available-- * 1024 * MiB }),
      },
    });
    await expect(probe.probe()).rejects.toThrow(/timed out/);
    const first = await probe.probe();
    const second = await probe.probe();
    expect(graphicsCalls).toBe(2);
    expect(second.gpus).toEqual(first.gpus);
    expect(first.gpus[0]?.unifiedMemory).toBe(true);
    expect([first.host.availableBytes, second.host.availableBytes]).toEqual([19 * 1024 * MiB, 18 * 1024 * MiB]);
  });

  it('on Linux lists devices once and takes each sample’s usage from nvidia-smi', async () => {
    let graphicsCalls = 0;
    let usedMiB = 100;
    const probe = createGpuProbe({
      platform: 'linux',
      amd: null,
      si: { graphics: async () => { graphicsCalls++; return { controllers: [rtx4090] }; }, mem: async () => ({ total: 1, available: 1 }) },
      nvidiaMemory: async () => ({ cards: new Map([['0000:01:00.0', { totalBytes: 24564 * MiB, usedBytes: usedMiB++ * MiB }]]), named: new Set(['0000:01:00.0']), lost: new Map() }),
    });
    expect((await probe.probe()).gpus[0]?.usedBytes).toBe(100 * MiB);
    expect((await probe.probe()).gpus[0]?.usedBytes).toBe(101 * MiB);
    expect(graphicsCalls).toBe(1);
  });
});
