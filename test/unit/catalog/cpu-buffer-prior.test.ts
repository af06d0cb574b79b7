// The prior for the CPU's extra weight buffers: which ggml types llama.cpp's CPU_REPACK and AMX
// take on which CPU flags (ggml-cpu/repack.cpp, amx/), before a load has taught the real share.
import { describe, expect, it } from 'vitest';
import { cpuBufferPrior, withCpuBufferPrior } from '../../../core/catalog/cpu-buffer-prior.js';

/** ggml type numbers (ggml.h). */
const Q4_0 = '2';
const Q8_0 = '8';
const Q2_K = '10';
const Q4_K = '12';
const Q6_K = '14';
const IQ4_NL = '20';
const F16 = '1';

// Trimmed /proc/cpuinfo flag lines of the machines named.
const EPYC_ZEN4 = { arch: 'x64', flags: ['fpu', 'sse4_2', 'avx', 'avx2', 'fma', 'avx512f', 'avx512bw', 'avx512_vnni'] };
const AVX2_ONLY = { arch: 'x64', flags: ['fpu', 'sse4_2', 'avx', 'avx2', 'fma'] };
const NO_AVX2 = { arch: 'x64', flags: ['fpu', 'sse4_2', 'avx'] };
const SAPPHIRE_RAPIDS = { arch: 'x64', flags: [...EPYC_ZEN4.flags, 'amx_bf16', 'amx_tile', 'amx_int8'] };
const GRAVITON3 = { arch: 'arm64', flags: ['fp', 'asimd', 'asimddp', 'sve', 'i8mm'] };
const CORTEX_A72 = { arch: 'arm64', flags: ['fp', 'asimd', 'crc32'] };

describe('the prior for the CPU\'s extra weight buffers', () => {
  it('prices Q4_0, Q4_K and IQ4_NL matrices once more on AVX2, and Q8_0 not at all (x86 has no Q8_0 repack)', () => {
    const prior = cpuBufferPrior(AVX2_ONLY);
    expect([prior[Q4_0], prior[Q4_K], prior[IQ4_NL]]).toEqual([1, 1, 1]);
    expect(prior[Q8_0]).toBeUndefined();
    expect(prior[Q6_K]).toBeUndefined();
    // Q2_K's x86 kernel needs AVX-512.
    expect(prior[Q2_K]).toBeUndefined();
    expect(cpuBufferPrior(EPYC_ZEN4)[Q2_K]).toBe(1);
  });

  it('prices nothing on an x86 CPU without AVX2, nor on an ARM one without dotprod or i8mm', () => {
    expect(cpuBufferPrior(NO_AVX2)).toEqual({});
    expect(cpuBufferPrior(CORTEX_A72)).toEqual({});
  });

  it('prices Q8_0, Q6_K and the 4-bit types on ARM with dotprod', () => {
    const prior = cpuBufferPrior(GRAVITON3);
    expect([prior[Q4_0], prior[Q4_K], prior[IQ4_NL], prior[Q8_0], prior[Q6_K]]).toEqual([1, 1, 1, 1, 1]);
    expect(prior[F16]).toBeUndefined();
  });

  it('prices AMX\'s packing, larger than the file for Q8_0 and Q4_K, and f16, where the CPU has AMX-INT8', () => {
    const prior = cpuBufferPrior(SAPPHIRE_RAPIDS);
    expect(prior[Q8_0]).toBeCloseTo(38 / 34, 12);
    expect(prior[Q4_K]).toBeCloseTo(148 / 144, 12);
    expect([prior[F16], prior[Q6_K], prior[Q4_0], prior[IQ4_NL]]).toEqual([1, 1, 1, 1]);
  });

  it('assumes the architecture\'s usual set where the OS lists no flags, and nothing on others', () => {
    expect(cpuBufferPrior({ arch: 'x64', flags: null })).toEqual(cpuBufferPrior(EPYC_ZEN4));
    expect(cpuBufferPrior({ arch: 'arm64', flags: null })).toEqual(cpuBufferPrior(GRAVITON3));
    expect(cpuBufferPrior({ arch: 'riscv64', flags: null })).toEqual({});
  });

  it('gives way to a learned ratio, type by type', () => {
    expect(withCpuBufferPrior(cpuBufferPrior(AVX2_ONLY), { [Q4_K]: 0.7, [Q6_K]: 0.7 })).toMatchObject({ [Q4_0]: 1, [Q4_K]: 0.7, [Q6_K]: 0.7 });
    expect(withCpuBufferPrior(cpuBufferPrior(AVX2_ONLY), { [Q4_0]: 0 })[Q4_0]).toBe(0);
  });
});
