import { describe, expect, it } from 'vitest';
import { mergeDevices, type AmdReading } from '../../../core/gpu/merge-devices.js';
import { normalizeControllers } from '../../../core/gpu/normalize-si.js';
import { parseListDevices } from '../../../core/gpu/llama-devices.js';
import { joinAmdSmi, parseAmdSmiStatic } from '../../../core/gpu/amd-smi.js';
import type { GpuDevice } from '../../../core/gpu/compute-budget.js';
import { toolOutput } from '../../support/gpu-tool-output.js';

const MiB = 1024 ** 2;

// What si gives on Linux: lspci's controllers, NVIDIA ones with nvidia-smi's figures merged.
const lspciNavi31 = (bus: string) => ({ vendor: 'Advanced Micro Devices, Inc. [AMD/ATI]', model: 'Navi 31 [Radeon RX 7900 XT/7900 XTX/7900M]', busAddress: bus });
const rtx4090 = { vendor: 'NVIDIA Corporation', model: 'AD102 [GeForce RTX 4090]', busAddress: '01:00.0', name: 'NVIDIA GeForce RTX 4090', pciBus: '00000000:01:00.0', memoryTotal: 24564, memoryUsed: 7600, memoryFree: 16618 };
const rtx3060 = { vendor: 'NVIDIA Corporation', model: 'GA106 [GeForce RTX 3060 Lite Hash Rate]', busAddress: '02:00.0', name: 'NVIDIA GeForce RTX 3060', pciBus: '00000000:02:00.0', memoryTotal: 12288, memoryFree: 12026 };
const intelUhd = { vendor: 'Intel Corporation', model: 'TigerLake-H GT1 [UHD Graphics]', busAddress: '00:02.0' };

function amdSmi(cards: AmdReading['cards']): AmdReading {
  return { source: 'amd-smi', cards, notes: [] };
}
const xtx = (bus: string, usedMiB: number) => ({ busAddress: bus, name: 'AMD Radeon RX 7900 XTX', totalBytes: 24560 * MiB, usedBytes: usedMiB * MiB });
const pick = (gpus: GpuDevice[]) => gpus.map((g) => ({ index: g.index, name: g.name, bus: g.busAddress, by: g.measuredBy, class: g.deviceClass, engine: g.engineDevice }));

describe('mergeDevices: vendor tools and lspci', () => {
  it('measures lspci\'s AMD cards with amd-smi\'s figures, matched by PCI address', () => {
    const listed = normalizeControllers([lspciNavi31('03:00.0'), lspciNavi31('0c:00.0')]);
    const { gpus, notes } = mergeDevices(listed, { amd: amdSmi([xtx('0000:0c:00.0', 900), xtx('0000:03:00.0', 4000)]) });
    expect(pick(gpus)).toEqual([
      { index: 0, name: 'AMD Radeon RX 7900 XTX', bus: '0000:03:00.0', by: 'amd-smi', class: 'amd:rx-7900-xtx', engine: undefined },
      { index: 1, name: 'AMD Radeon RX 7900 XTX', bus: '0000:0c:00.0', by: 'amd-smi', class: 'amd:rx-7900-xtx', engine: undefined },
    ]);
    expect(gpus.map((g) => g.usedBytes)).toEqual([4000 * MiB, 900 * MiB]);
    expect(notes).toEqual([]);
  });

  it('adds cards a vendor tool reports that lspci does not list (an Instinct is a "Processing accelerator", which si skips)', () => {
    const listed = normalizeControllers([{ vendor: 'ASPEED Technology, Inc.', model: 'ASPEED Graphics Family', busAddress: '02:00.0' }]);
    const cards = joinAmdSmi(parseAmdSmiStatic(toolOutput('amd-smi-static-r9700x4.json')), []);
    const { gpus, displays } = mergeDevices(listed, { amd: amdSmi(cards) });
    // The BMC's ASPEED chip is a display controller: it numbers nothing, so the first Instinct is GPU 0 and HIP's 0.
    expect(gpus.map((g) => [g.index, g.busAddress, g.deviceClass, g.driverIndex])).toEqual([
      [0, '0000:03:00.0', 'amd:ai-pro-r9700', { hip: 0 }],
      [1, '0000:23:00.0', 'amd:ai-pro-r9700', { hip: 1 }],
      [2, '0000:83:00.0', 'amd:ai-pro-r9700', { hip: 2 }],
      [3, '0000:c3:00.0', 'amd:ai-pro-r9700', { hip: 3 }],
    ]);
    expect(displays.map((g) => [g.busAddress, g.deviceClass])).toEqual([['0000:02:00.0', 'other:aspeed-family']]);
  });

  it('keeps an NVIDIA card and an AMD card apart on a mixed box, each measured by its own tool', () => {
    const listed = normalizeControllers([rtx4090, lspciNavi31('03:00.0')]);
    const { gpus } = mergeDevices(listed, { amd: amdSmi([xtx('0000:03:00.0', 600)]) });
    expect(pick(gpus).map((g) => [g.bus, g.by, g.class])).toEqual([
      ['0000:01:00.0', 'nvidia-smi', 'nvidia:rtx-4090'],
      ['0000:03:00.0', 'amd-smi', 'amd:rx-7900-xtx'],
    ]);
  });

  it('passes on the AMD reader\'s notes, and leaves AMD cards unmeasured when no tool answered', () => {
    const { gpus, displays, notes } = mergeDevices(normalizeControllers([lspciNavi31('03:00.0')]), { amd: { source: null, cards: [], notes: ['AMD GPUs cannot be measured: amd-smi timed out.'] } });
    // Nothing says a backend computes on it: shown as a display controller, numbered nowhere.
    expect(gpus).toEqual([]);
    expect(displays[0]).toMatchObject({ measuredBy: null, usedBytes: null, deviceClass: 'amd:rx-7900-xt-7900-xtx-7900m' });
    expect(notes).toEqual(['AMD GPUs cannot be measured: amd-smi timed out.']);
  });
});

describe('mergeDevices: llama-server\'s device list', () => {
  it('names the cards nvidia-smi measured without changing their figures, pairing by class', () => {
    // CUDA numbers the fastest card first; the 4090 is second on the bus but CUDA0.
    const listed = normalizeControllers([rtx3060, { ...rtx4090, busAddress: '03:00.0', pciBus: '00000000:03:00.0' }]);
    const engine = parseListDevices('Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 16200 MiB free)\n  CUDA1: NVIDIA GeForce RTX 3060 (11910 MiB, 11700 MiB free)\n');
    const { gpus } = mergeDevices(listed, { engine });
    expect(pick(gpus).map((g) => [g.class, g.engine, g.by])).toEqual([
      ['nvidia:rtx-3060', 'CUDA1', 'nvidia-smi'],
      ['nvidia:rtx-4090', 'CUDA0', 'nvidia-smi'],
    ]);
    expect(gpus.map((g) => g.totalBytes)).toEqual([12288 * MiB, 24564 * MiB]);
  });

  it('counts a card two backends list once, named after the first backend', () => {
    const engine = parseListDevices('Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 16200 MiB free)\n  Vulkan0: NVIDIA GeForce RTX 4090 (24564 MiB, 16500 MiB free)\n');
    const { gpus } = mergeDevices(normalizeControllers([rtx4090]), { engine });
    expect(pick(gpus)).toEqual([{ index: 0, name: 'NVIDIA GeForce RTX 4090', bus: '0000:01:00.0', by: 'nvidia-smi', class: 'nvidia:rtx-4090', engine: 'CUDA0' }]);
  });

  it('names both cards of a mixed box through Vulkan, the tools keeping their figures', () => {
    const engine = parseListDevices('Available devices:\n  Vulkan0: NVIDIA GeForce RTX 4090 (24564 MiB, 16500 MiB free)\n  Vulkan1: AMD Radeon RX 7900 XTX (RADV NAVI31) (24560 MiB, 23000 MiB free)\n');
    const { gpus } = mergeDevices(normalizeControllers([rtx4090, lspciNavi31('03:00.0')]), { amd: amdSmi([xtx('0000:03:00.0', 600)]), engine });
    expect(pick(gpus).map((g) => [g.engine, g.by])).toEqual([['Vulkan0', 'nvidia-smi'], ['Vulkan1', 'amd-smi']]);
    expect(gpus[1]?.usedBytes).toBe(600 * MiB);
  });

  it('does not add a device of a vendor whose tool answered; it says so (ROCm\'s integrated GPU next to the card amd-smi reports)', () => {
    const engine = parseListDevices(toolOutput('llama-list-rocm-dgpu-igpu.txt'));
    const nine070 = { busAddress: '0000:03:00.0', name: 'AMD Radeon RX 9070 XT', totalBytes: 16304 * MiB, usedBytes: 500 * MiB };
    const { gpus, notes } = mergeDevices(normalizeControllers([lspciNavi31('03:00.0')]), { amd: amdSmi([nine070]), engine });
    expect(pick(gpus).map((g) => [g.name, g.engine, g.by])).toEqual([['AMD Radeon RX 9070 XT', 'ROCm0', 'amd-smi']]);
    expect(notes).toEqual([expect.stringMatching(/^llama-server lists ROCm1 AMD Radeon Graphics \(61\.\d GiB\), which amd-smi does not report; it is not counted\.$/)]);
  });

  it('pairs the rest in order when the tool reports that device with other figures (an APU\'s carve-out)', () => {
    const engine = parseListDevices(toolOutput('llama-list-rocm-dgpu-igpu.txt'));
    const cards = [
      { busAddress: '0000:03:00.0', name: 'AMD Radeon RX 9070 XT', totalBytes: 16304 * MiB, usedBytes: 500 * MiB },
      { busAddress: '0000:73:00.0', name: 'AMD Radeon Graphics', totalBytes: 512 * MiB, usedBytes: 300 * MiB },
    ];
    const { gpus, notes } = mergeDevices([], { amd: amdSmi(cards), engine });
    expect(pick(gpus).map((g) => [g.bus, g.engine])).toEqual([['0000:03:00.0', 'ROCm0'], ['0000:73:00.0', 'ROCm1']]);
    expect(gpus[1]?.totalBytes).toBe(512 * MiB);
    expect(notes).toEqual([]);
  });

  it('measures what no tool measures: lspci\'s Intel iGPU and an NVIDIA card without nvidia-smi, through Vulkan', () => {
    const listed = normalizeControllers([intelUhd, { vendor: 'NVIDIA Corporation', model: 'GA107GLM [RTX A2000 Mobile]', busAddress: '01:00.0' }]);
    const { gpus } = mergeDevices(listed, { engine: parseListDevices(toolOutput('llama-list-vulkan-igpu-dgpu.txt')) });
    expect(pick(gpus)).toEqual([
      { index: 0, name: 'Intel(R) UHD Graphics', bus: '0000:00:02.0', by: 'llama-server', class: 'intel:uhd', engine: 'Vulkan0' },
      { index: 1, name: 'NVIDIA RTX A2000 Laptop GPU', bus: '0000:01:00.0', by: 'llama-server', class: 'nvidia:rtx-a2000-laptop', engine: 'Vulkan1' },
    ]);
    expect(gpus.map((g) => [g.totalBytes, g.usedBytes])).toEqual([[16243 * MiB, (16243 - 15475) * MiB], [3962 * MiB, (3962 - 3367) * MiB]]);
  });

  it('adds a device only llama-server sees, without a PCI address, and counts it once across backends', () => {
    const engine = parseListDevices('Available devices:\n  SYCL0: Intel(R) Arc(TM) A770 Graphics (16225 MiB, 15800 MiB free)\n  Vulkan0: Intel(R) Arc(TM) A770 Graphics (DG2) (16288 MiB, 15900 MiB free)\n');
    const { gpus } = mergeDevices([], { engine });
    expect(pick(gpus)).toEqual([{ index: 0, name: 'Intel(R) Arc(TM) A770 Graphics', bus: null, by: 'llama-server', class: 'intel:arc-a770', engine: 'SYCL0' }]);
    expect(gpus[0]).toMatchObject({ vendor: 'Intel', totalBytes: 16225 * MiB, usedBytes: 425 * MiB });
  });

  it('names but does not measure a device whose free figure was not believable', () => {
    const engine = parseListDevices(toolOutput('llama-list-cuda-rtx5090-uma-bug.txt'));
    const listed = normalizeControllers([{ vendor: 'NVIDIA Corporation', model: 'GB202 [GeForce RTX 5090]', busAddress: '01:00.0' }]);
    const { gpus, notes } = mergeDevices(listed, { engine });
    expect(gpus[0]).toMatchObject({ engineDevice: 'CUDA0', measuredBy: null, usedBytes: null, deviceClass: 'nvidia:rtx-5090' });
    expect(notes).toEqual([expect.stringMatching(/that free figure is not used/)]);
  });

  it('names Apple\'s unified GPU MTL0 and never adds it as a device of its own', () => {
    const apple = normalizeControllers([{ vendor: 'Apple', model: 'Apple M2 Max', vramDynamic: true }]);
    const engine = parseListDevices('Available devices:\n  MTL0: Apple M2 Max (98304 MiB, 98304 MiB free)\n');
    expect(pick(mergeDevices(apple, { engine }).gpus)).toEqual([{ index: 0, name: 'Apple M2 Max', bus: null, by: null, class: 'apple:m2-max', engine: 'MTL0' }]);
    expect(mergeDevices([], { engine }).gpus).toEqual([]);
  });

  it('with no list at all, adds the class and CUDA\'s number, and keeps the iGPU out of the numbering', () => {
    const listed = normalizeControllers([rtx4090, intelUhd]);
    const { gpus, displays } = mergeDevices(listed, {});
    expect(gpus).toEqual([{ ...listed[0], deviceClass: 'nvidia:rtx-4090', driverIndex: { cuda: 0 } }]);
    expect(displays).toEqual([{ ...listed[1], deviceClass: 'intel:uhd' }]);
  });
});

describe('mergeDevices: the numbers the engines are told (issue 23)', () => {
  const rtx4070 = { vendor: 'NVIDIA Corporation', model: 'AD104 [GeForce RTX 4070]', busAddress: '01:00.0', name: 'NVIDIA GeForce RTX 4070', pciBus: '00000000:01:00.0', memoryTotal: 12282, memoryUsed: 300, memoryFree: 11700 };
  const uhd770 = { vendor: 'Intel Corporation', model: 'AlderLake-S GT1 [UHD Graphics 770]', busAddress: '00:02.0' };
  const aspeed = { vendor: 'ASPEED Technology, Inc.', model: 'ASPEED Graphics Family', busAddress: '02:00.0' };
  const a4000 = (bus: string) => ({ vendor: 'NVIDIA Corporation', model: 'GA104GL [RTX A4000]', busAddress: `${bus}.0`, name: 'NVIDIA RTX A4000', pciBus: `00000000:${bus}.0`, memoryTotal: 16376, memoryUsed: 200, memoryFree: 15900 });

  it('an integrated GPU first in PCI order is a display controller: the RTX 4070 is GPU 0 and CUDA0, as llama-server lists it', () => {
    const engine = parseListDevices('Available devices:\n  CUDA0: NVIDIA GeForce RTX 4070 (11873 MiB, 11500 MiB free)\n');
    const { gpus, displays } = mergeDevices(normalizeControllers([uhd770, rtx4070]), { engine });
    expect(gpus.map((g) => [g.index, g.name, g.engineDevice, g.driverIndex])).toEqual([[0, 'NVIDIA GeForce RTX 4070', 'CUDA0', { cuda: 0 }]]);
    expect(displays.map((g) => [g.busAddress, g.name])).toEqual([['0000:00:02.0', 'AlderLake-S GT1 [UHD Graphics 770]']]);
  });

  it('a BMC chip between two cards shifts nothing: without any engine list, CUDA numbers them in PCI order among NVIDIA cards', () => {
    const { gpus, displays } = mergeDevices(normalizeControllers([a4000('01:00'), aspeed, a4000('03:00')]), {});
    expect(gpus.map((g) => [g.index, g.busAddress, g.driverIndex])).toEqual([
      [0, '0000:01:00.0', { cuda: 0 }],
      [1, '0000:03:00.0', { cuda: 1 }],
    ]);
    expect(displays.map((g) => g.busAddress)).toEqual(['0000:02:00.0']);
  });

  it("takes llama-server's number over PCI order (a listing without CUDA_DEVICE_ORDER=PCI_BUS_ID numbers the fastest first)", () => {
    const listed = normalizeControllers([rtx3060, { ...rtx4090, busAddress: '03:00.0', pciBus: '00000000:03:00.0' }]);
    const engine = parseListDevices('Available devices:\n  CUDA0: NVIDIA GeForce RTX 4090 (24080 MiB, 16200 MiB free)\n  CUDA1: NVIDIA GeForce RTX 3060 (11910 MiB, 11700 MiB free)\n');
    expect(mergeDevices(listed, { engine }).gpus.map((g) => g.driverIndex)).toEqual([{ cuda: 1 }, { cuda: 0 }]);
  });

  it("numbers each card of a mixed box in each backend that sees it: CUDA's and HIP's 0, Vulkan's 0 and 1", () => {
    const engine = parseListDevices('Available devices:\n  Vulkan0: NVIDIA GeForce RTX 4090 (24564 MiB, 16500 MiB free)\n  Vulkan1: AMD Radeon RX 7900 XTX (RADV NAVI31) (24560 MiB, 23000 MiB free)\n');
    const { gpus } = mergeDevices(normalizeControllers([rtx4090, lspciNavi31('03:00.0')]), { amd: amdSmi([xtx('0000:03:00.0', 600)]), engine });
    expect(gpus.map((g) => [g.index, g.driverIndex])).toEqual([
      [0, { vulkan: 0, cuda: 0 }],
      [1, { vulkan: 1, hip: 0 }],
    ]);
  });

  it("gives Apple's GPU Metal's 0", () => {
    const apple = normalizeControllers([{ vendor: 'Apple', model: 'Apple M2 Max', vramDynamic: true }]);
    expect(mergeDevices(apple, {}).gpus.map((g) => g.driverIndex)).toEqual([{ metal: 0 }]);
  });
});
