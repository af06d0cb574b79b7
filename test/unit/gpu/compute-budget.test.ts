import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { computeBudget, type BudgetInput, type GpuDevice } from '../../../core/gpu/compute-budget.js';
import { normalizeControllers } from '../../../core/gpu/normalize-si.js';

const MiB = 1024 ** 2;
const GiB = 1024 ** 3;

function nvidia(index: number, name: string, totalBytes: number, usedBytes: number | null): GpuDevice {
  return { index, name, vendor: 'NVIDIA Corporation', busAddress: `0000:0${index + 1}:00.0`, totalBytes, usedBytes, unifiedMemory: false };
}

const appleM2: GpuDevice = { index: 0, name: 'Apple M2 Max', vendor: 'Apple', busAddress: null, totalBytes: null, usedBytes: null, unifiedMemory: true };
const intelIgpu: GpuDevice = { index: 0, name: 'UHD Graphics 770', vendor: 'Intel Corporation', busAddress: '0000:00:02.0', totalBytes: null, usedBytes: null, unifiedMemory: false };

const base: BudgetInput = {
  gpus: [],
  host: { totalBytes: 64 * GiB, availableBytes: 48 * GiB },
  reserveBytes: 512 * MiB,
  limitBytes: null,
  ourUsageByGpu: new Map(),
  platform: 'linux',
  unifiedShare: 0.75,
};

describe('computeBudget: table', () => {
  const rtx4090 = nvidia(0, 'NVIDIA GeForce RTX 4090', 24 * GiB, 8 * GiB);
  const rtx3060 = nvidia(1, 'NVIDIA GeForce RTX 3060', 12 * GiB, 1 * GiB);

  const cases: { name: string; input: Partial<BudgetInput>; mode: string; totalBytes: number; perGpuBudgets: number[]; reason?: RegExp }[] = [
    {
      name: 'two GPUs, nothing of ours: each is total − reserve − used',
      input: { gpus: [rtx4090, rtx3060] },
      mode: 'gpu',
      totalBytes: 24 * GiB - 512 * MiB - 8 * GiB + (12 * GiB - 512 * MiB - 1 * GiB),
      perGpuBudgets: [24 * GiB - 512 * MiB - 8 * GiB, 12 * GiB - 512 * MiB - 1 * GiB],
    },
    {
      name: 'two GPUs, our engine holds 6 GiB of the 4090: only the others count against it',
      input: { gpus: [rtx4090, rtx3060], ourUsageByGpu: new Map([[0, 6 * GiB]]) },
      mode: 'gpu',
      totalBytes: 24 * GiB - 512 * MiB - 2 * GiB + (12 * GiB - 512 * MiB - 1 * GiB),
      perGpuBudgets: [24 * GiB - 512 * MiB - 2 * GiB, 12 * GiB - 512 * MiB - 1 * GiB],
    },
    {
      name: 'our usage larger than the driver says is used is clamped to it (two samples taken at different moments)',
      input: { gpus: [rtx3060], ourUsageByGpu: new Map([[1, 5 * GiB]]) },
      mode: 'gpu',
      totalBytes: 12 * GiB - 512 * MiB,
      perGpuBudgets: [12 * GiB - 512 * MiB],
    },
    {
      name: 'a GPU another program filled has no room and says who holds it',
      input: { gpus: [nvidia(0, 'NVIDIA GeForce RTX 3060', 12 * GiB, 12 * GiB)] },
      mode: 'gpu',
      totalBytes: 0,
      perGpuBudgets: [0],
      reason: /RTX 3060 has no room: other programs hold 12 GiB of its 12 GiB and 512 MiB is reserved/,
    },
    {
      name: 'the configured limit caps the total and says what the machine allows',
      input: { gpus: [rtx4090, rtx3060], limitBytes: 8 * GiB },
      mode: 'gpu',
      totalBytes: 8 * GiB,
      perGpuBudgets: [24 * GiB - 512 * MiB - 8 * GiB, 12 * GiB - 512 * MiB - 1 * GiB],
      reason: /Capped at 8 GiB by the configured limit; the machine allows 26 GiB/,
    },
    {
      name: 'a limit above what the machine allows changes nothing',
      input: { gpus: [rtx3060], limitBytes: 100 * GiB },
      mode: 'gpu',
      totalBytes: 12 * GiB - 512 * MiB - 1 * GiB,
      perGpuBudgets: [12 * GiB - 512 * MiB - 1 * GiB],
    },
    {
      name: 'no GPU: host RAM available − reserve, CPU mode with the reason',
      input: { gpus: [] },
      mode: 'cpu',
      totalBytes: 48 * GiB - 512 * MiB,
      perGpuBudgets: [],
      reason: /^No GPU whose memory can be measured was found \(on Linux, NVIDIA GPUs are seen only with both `lspci` and `nvidia-smi` on PATH, AMD GPUs with `amd-smi` or `rocm-smi`\), so models run on the CPU in host RAM\.$/,
    },
    {
      name: 'no GPU: RAM our CPU engines hold is ours, not taken from the budget',
      input: { gpus: [], ourHostBytes: 4 * GiB },
      mode: 'cpu',
      totalBytes: 52 * GiB - 512 * MiB,
      perGpuBudgets: [],
    },
    {
      name: 'no GPU with the demo limit: the limit caps host RAM',
      input: { gpus: [], limitBytes: 2 * GiB },
      mode: 'cpu',
      totalBytes: 2 * GiB,
      perGpuBudgets: [],
    },
    {
      name: 'an unmeasurable integrated GPU alone: CPU mode, and it says why the GPU is not used',
      input: { gpus: [intelIgpu] },
      mode: 'cpu',
      totalBytes: 48 * GiB - 512 * MiB,
      perGpuBudgets: [],
      reason: /UHD Graphics 770 is not used: its memory use cannot be measured/,
    },
    {
      name: 'an integrated GPU next to an NVIDIA card: only the card counts',
      input: { gpus: [intelIgpu, { ...rtx3060, index: 1 }] },
      mode: 'gpu',
      totalBytes: 12 * GiB - 512 * MiB - 1 * GiB,
      perGpuBudgets: [12 * GiB - 512 * MiB - 1 * GiB],
      reason: /UHD Graphics 770 is not used/,
    },
    {
      name: 'Apple unified memory: capped at the share of RAM when RAM is plentiful',
      input: { gpus: [appleM2], platform: 'darwin', host: { totalBytes: 32 * GiB, availableBytes: 28 * GiB } },
      mode: 'unified',
      totalBytes: 24 * GiB,
      perGpuBudgets: [24 * GiB],
      reason: /at most 75 % of 32 GiB \(24 GiB\)/,
    },
    {
      name: 'Apple unified memory: other programs using RAM shrink it below the share',
      input: { gpus: [appleM2], platform: 'darwin', host: { totalBytes: 32 * GiB, availableBytes: 12 * GiB } },
      mode: 'unified',
      totalBytes: 12 * GiB - 512 * MiB,
      perGpuBudgets: [12 * GiB - 512 * MiB],
    },
    {
      name: 'Apple unified memory: a configured share of 50 %',
      input: { gpus: [appleM2], platform: 'darwin', unifiedShare: 0.5, host: { totalBytes: 32 * GiB, availableBytes: 30 * GiB } },
      mode: 'unified',
      totalBytes: 16 * GiB,
      perGpuBudgets: [16 * GiB],
    },
    {
      name: 'an Apple GPU reported on another platform is not unified memory we can use',
      input: { gpus: [appleM2], platform: 'linux' },
      mode: 'cpu',
      totalBytes: 48 * GiB - 512 * MiB,
      perGpuBudgets: [],
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const budget = computeBudget({ ...base, ...c.input });
      expect(budget.mode).toBe(c.mode);
      expect(budget.totalBytes).toBe(c.totalBytes);
      expect(budget.perGpu.map((g) => g.budgetBytes)).toEqual(c.perGpuBudgets);
      if (c.reason) expect(budget.reason).toMatch(c.reason);
    });
  }
});

describe('computeBudget: details', () => {
  it('reports every per-GPU field, and no reason when nothing constrains it', () => {
    const budget = computeBudget({ ...base, gpus: [nvidia(0, 'NVIDIA GeForce RTX 4090', 24 * GiB, 8 * GiB)], ourUsageByGpu: new Map([[0, 6 * GiB]]) });
    expect(budget).toEqual({
      mode: 'gpu',
      totalBytes: 22 * GiB - 512 * MiB,
      perGpu: [{
        index: 0, name: 'NVIDIA GeForce RTX 4090', vendor: 'NVIDIA Corporation', busAddress: '0000:01:00.0', deviceClass: 'nvidia:rtx-4090',
        totalBytes: 24 * GiB, usedBytes: 8 * GiB, usedByOthersBytes: 2 * GiB, usedByUsBytes: 6 * GiB,
        reserveBytes: 512 * MiB, budgetBytes: 22 * GiB - 512 * MiB,
      }],
      hostTotalBytes: 64 * GiB,
      hostAvailableBytes: 48 * GiB,
    });
  });

  it('reports the unified device with the share as its total and RAM used by others', () => {
    const budget = computeBudget({ ...base, gpus: [appleM2], platform: 'darwin', ourHostBytes: 3 * GiB, host: { totalBytes: 32 * GiB, availableBytes: 20 * GiB } });
    expect(budget.perGpu).toEqual([{
      index: 0, name: 'Apple M2 Max', vendor: 'Apple', busAddress: null, deviceClass: 'apple:m2-max',
      totalBytes: 24 * GiB, usedBytes: 12 * GiB, usedByOthersBytes: 9 * GiB, usedByUsBytes: 3 * GiB,
      reserveBytes: 512 * MiB, budgetBytes: 32 * GiB - 512 * MiB - 9 * GiB,
    }]);
  });

  it('carries each GPU\'s class (given by the probe, else derived) and its engine device name', () => {
    const amd: GpuDevice = { ...nvidia(1, 'AMD Radeon RX 7900 XTX', 24 * GiB, 1 * GiB), vendor: 'AMD', deviceClass: 'amd:rx-7900-xtx', engineDevice: 'Vulkan1' };
    const budget = computeBudget({ ...base, gpus: [nvidia(0, 'NVIDIA GeForce RTX 4090', 24 * GiB, 8 * GiB), amd] });
    expect(budget.perGpu.map((g) => [g.deviceClass, g.engineDevice])).toEqual([['nvidia:rtx-4090', undefined], ['amd:rx-7900-xtx', 'Vulkan1']]);
    expect('engineDevice' in (budget.perGpu[0] ?? {})).toBe(false);
  });

  it('puts the probe\'s notes first in the reason', () => {
    const budget = computeBudget({ ...base, gpus: [intelIgpu], probeNotes: ['AMD GPUs cannot be measured: amd-smi timed out.'] });
    expect(budget.reason).toMatch(/^No GPU whose memory can be measured was found .*\. AMD GPUs cannot be measured: amd-smi timed out\. UHD Graphics 770 is not used/);
    const gpuMode = computeBudget({ ...base, gpus: [nvidia(0, 'NVIDIA GeForce RTX 4090', 24 * GiB, 8 * GiB)], probeNotes: ['llama-server lists ROCm1 AMD Radeon Graphics (61.7 GiB), which amd-smi does not report; it is not counted.'] });
    expect(gpuMode.reason).toBe('llama-server lists ROCm1 AMD Radeon Graphics (61.7 GiB), which amd-smi does not report; it is not counted.');
  });

  it('reads a GPU whose si fields were dropped for being 0 (idle card: memoryUsed missing)', () => {
    // nvidia-smi said used 0, free 12026 of 12288 MiB; si dropped the 0. The 262 MiB the driver reserves is not ours to plan with.
    const gpus = normalizeControllers([{ vendor: 'NVIDIA Corporation', name: 'NVIDIA GeForce RTX 3060', pciBus: '00000000:02:00.0', memoryTotal: 12288, memoryFree: 12026 }]);
    const budget = computeBudget({ ...base, gpus });
    expect(budget.perGpu[0]?.usedByOthersBytes).toBe(262 * MiB);
    expect(budget.totalBytes).toBe((12288 - 262 - 512) * MiB);
  });

  it('reads a full GPU whose memoryFree was dropped for being 0 as having no room', () => {
    const gpus = normalizeControllers([{ vendor: 'NVIDIA Corporation', name: 'NVIDIA GeForce RTX 3060', pciBus: '00000000:02:00.0', memoryTotal: 12288, memoryUsed: 11990 }]);
    expect(computeBudget({ ...base, gpus }).totalBytes).toBe(0);
  });

  it.each([
    [{ reserveBytes: -1 }, /reserve must be 0 bytes or more, got -1/],
    [{ limitBytes: 0 }, /limit must be more than 0 bytes, got 0/],
    [{ unifiedShare: 1.5 }, /share must be more than 0 and at most 1, got 1.5/],
    [{ unifiedShare: 0 }, /share must be more than 0 and at most 1, got 0/],
  ])('rejects the configuration %o, naming the value', (bad, message) => {
    expect(() => computeBudget({ ...base, ...bad })).toThrow(message);
  });
});

describe('computeBudget: properties', () => {
  const gpuArb = fc.record({
    totalMiB: fc.integer({ min: 1, max: 200_000 }),
    usedFraction: fc.double({ min: 0, max: 1, noNaN: true }),
    oursFraction: fc.double({ min: 0, max: 1.2, noNaN: true }),
  });
  const inputArb = fc.record({
    gpus: fc.array(gpuArb, { maxLength: 4 }),
    reserveMiB: fc.integer({ min: 0, max: 4096 }),
    limitMiB: fc.option(fc.integer({ min: 1, max: 400_000 }), { nil: null }),
    extraOthersMiB: fc.integer({ min: 0, max: 50_000 }),
  });

  type Spec = typeof inputArb extends fc.Arbitrary<infer T> ? T : never;

  function build(spec: Spec, extraOthersOnFirst = 0): BudgetInput {
    const gpus = spec.gpus.map((g, i) => nvidia(i, `GPU ${i}`, g.totalMiB * MiB, Math.min(g.totalMiB, Math.round(g.totalMiB * g.usedFraction) + (i === 0 ? extraOthersOnFirst : 0)) * MiB));
    const ours = new Map(spec.gpus.map((g, i) => [i, Math.round(g.totalMiB * g.usedFraction * g.oursFraction) * MiB] as const));
    return { ...base, gpus, reserveBytes: spec.reserveMiB * MiB, limitBytes: spec.limitMiB === null ? null : spec.limitMiB * MiB, ourUsageByGpu: ours };
  }

  it('never exceeds the limit or the sum of per-GPU budgets, and no budget is negative', () => {
    fc.assert(fc.property(inputArb, (spec) => {
      const budget = computeBudget(build(spec));
      const sum = budget.perGpu.reduce((a, g) => a + g.budgetBytes, 0);
      if (budget.mode === 'gpu') expect(budget.totalBytes).toBe(spec.limitMiB === null ? sum : Math.min(sum, spec.limitMiB * MiB));
      for (const g of budget.perGpu) {
        expect(g.budgetBytes).toBeGreaterThanOrEqual(0);
        expect(g.usedByOthersBytes + g.usedByUsBytes).toBe(g.usedBytes);
      }
    }));
  });

  it('another program taking memory never grows the budget', () => {
    fc.assert(fc.property(inputArb.filter((s) => s.gpus.length > 0), (spec) => {
      const before = computeBudget(build(spec));
      const after = computeBudget(build(spec, spec.extraOthersMiB));
      expect(after.totalBytes).toBeLessThanOrEqual(before.totalBytes);
    }));
  });
});
