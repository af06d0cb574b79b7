import { describe, expect, it } from 'vitest';
import { footprintToLearn } from '../../../../core/daemon/memory/learned-footprint.js';
import type { Placement } from '../../../../core/contracts/plan.js';

const MiB = 1024 ** 2;
const onGpu1: Placement = { kind: 'gpu', devices: [{ index: 1, layers: 8, bytes: 600 * MiB }], cpuMoeLayers: 0, hostBytes: 0 };
const split: Placement = {
  kind: 'split',
  devices: [
    { index: 1, layers: 4, bytes: 400 * MiB },
    { index: 0, layers: 4, bytes: 390 * MiB },
  ],
  cpuMoeLayers: 0,
  hostBytes: 0,
};
const partial: Placement = { kind: 'partial', devices: [{ index: 0, layers: 3, bytes: 300 * MiB }], cpuMoeLayers: 0, hostBytes: 200 * MiB };
const gpu = { gpuMode: true, runtimeBytes: 500 * MiB };

describe('footprintToLearn: what a device figure teaches about the model itself', () => {
  it.each([
    ['the driver figure of a model whole on one GPU, less its engine runtime', { bytes: 620 * MiB, where: 'device' as const }, { level: 'full' as const, placement: onGpu1 }, gpu, 120 * MiB],
    ['nothing from a split (its figures sum a compute buffer and a runtime per GPU)', { bytes: 1100 * MiB, where: 'device' as const }, { level: 'full' as const, placement: split }, gpu, null],
    ['nothing from a partial launch (only some layers are on the GPU)', { bytes: 800 * MiB, where: 'device' as const }, { level: 'full' as const, placement: partial }, gpu, null],
    ['nothing below the full level', { bytes: 620 * MiB, where: 'device' as const }, { level: 'smaller-context' as const, placement: onGpu1 }, gpu, null],
    ['nothing from host RSS', { bytes: 620 * MiB, where: 'host' as const }, { level: 'full' as const, placement: onGpu1 }, gpu, null],
    ['nothing without a GPU budget', { bytes: 620 * MiB, where: 'device' as const }, { level: 'full' as const, placement: onGpu1 }, { gpuMode: false, runtimeBytes: 0 }, null],
    ['nothing where no placement is known', { bytes: 620 * MiB, where: 'device' as const }, { level: 'full' as const, placement: null }, gpu, null],
    ['nothing from a figure no larger than the runtime', { bytes: 500 * MiB, where: 'device' as const }, { level: 'full' as const, placement: onGpu1 }, gpu, null],
  ])('%s', (_what, measurement, server, options, expected) => {
    expect(footprintToLearn(measurement, server, options)).toBe(expected);
  });
});
