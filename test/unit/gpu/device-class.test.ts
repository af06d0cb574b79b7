import { describe, expect, it } from 'vitest';
import { deviceClassOf, vendorKeyOf } from '../../../core/gpu/device-class.js';

describe('deviceClassOf', () => {
  // Names as each source prints them, so one card gets one class whichever tool named it.
  it.each([
    ['nvidia-smi and CUDA', 'NVIDIA Corporation', 'NVIDIA GeForce RTX 4090', 'nvidia:rtx-4090'],
    ['lspci (pci.ids bracket)', 'NVIDIA Corporation', 'AD102 [GeForce RTX 4090]', 'nvidia:rtx-4090'],
    ['a laptop part is its own class', 'NVIDIA', 'NVIDIA GeForce RTX 3060 Laptop GPU', 'nvidia:rtx-3060-laptop'],
    ['memory size stays in the class', 'NVIDIA', 'NVIDIA H100 80GB HBM3', 'nvidia:h100-80gb-hbm3'],
    ['amd-smi market name', 'Advanced Micro Devices, Inc. [AMD/ATI]', 'AMD Radeon AI PRO R9700', 'amd:ai-pro-r9700'],
    ['ROCm device description', '', 'AMD Radeon RX 7900 XTX', 'amd:rx-7900-xtx'],
    ['Vulkan appends the driver tag', '', 'AMD Radeon RX 7900 XTX (RADV NAVI31)', 'amd:rx-7900-xtx'],
    ['rocm-smi Card Series on ROCm 6.x', 'Advanced Micro Devices, Inc. [AMD/ATI]', 'Radeon RX 7900 XT', 'amd:rx-7900-xt'],
    ['rocm-smi pci.ids series', 'Advanced Micro Devices, Inc. [AMD/ATI]', 'Arcturus GL-XL [Instinct MI100]', 'amd:mi100'],
    ['(R) and (TM) marks', '', 'Intel(R) Arc(TM) A770 Graphics (DG2)', 'intel:arc-a770'],
    ['a name that is only brand words keeps them', '', 'AMD Radeon(TM) Graphics', 'amd:radeon-graphics'],
    ['Apple Silicon', 'Apple', 'Apple M2 Max', 'apple:m2-max'],
    ['an unknown vendor', 'Matrox Electronics Systems Ltd.', 'G200eR2', 'other:g200er2'],
    ['no name at all', 'NVIDIA Corporation', '', 'nvidia:unknown'],
  ])('%s: (%j, %j) → %s', (_source, vendor, name, expected) => {
    expect(deviceClassOf(vendor, name)).toBe(expected);
  });

  it('keeps different models of one vendor apart', () => {
    expect(deviceClassOf('NVIDIA', 'NVIDIA GeForce RTX 4090')).not.toBe(deviceClassOf('NVIDIA', 'NVIDIA GeForce RTX 3060'));
    expect(deviceClassOf('', 'AMD Radeon RX 7900 XT')).not.toBe(deviceClassOf('', 'AMD Radeon RX 7900 XTX'));
  });
});

describe('vendorKeyOf', () => {
  it.each([
    ['NVIDIA Corporation', 'nvidia'],
    ['Tesla P40', 'nvidia'],
    ['Advanced Micro Devices, Inc. [AMD/ATI]', 'amd'],
    ['Microsoft Direct3D12 (AMD Radeon RX 6800 XT) (Dozen)', 'amd'],
    ['Intel Corporation', 'intel'],
    ['Apple', 'apple'],
    ['ASPEED Technology, Inc.', 'other'],
  ])('%j → %s', (text, expected) => {
    expect(vendorKeyOf(text)).toBe(expected);
  });
});
