// What the CPU's extra weight buffers take before any load has taught it: a prior from the CPU's
// flags and llama.cpp's own rules, so that a model's first load is not priced below what
// llama.cpp allocates (BENCHMARKS.md §4: a Q4_K_M was 22–30 % under before it).
//
// From the ggml source node-llama-cpp and llama-server build (ggml/src/ggml-cpu):
// - CPU_REPACK (repack.cpp, ggml_repack_get_optimal_repack_type) takes a matrix that a
//   mul_mat (2-D) or mul_mat_id (3-D experts) reads whose rows divide by its interleave (8, or
//   4 for some ARM kernels), by type and the instructions the build was compiled for:
//     x86 AVX2: Q4_0, Q4_K, IQ4_NL, MXFP4;  x86 AVX-512F: Q2_K;
//     ARM dotprod: Q4_0, Q4_K, Q5_K, Q6_K, IQ4_NL, MXFP4, Q8_0;  ARM i8mm: Q4_0, Q4_K, Q5_K, Q6_K, Q8_0.
//   The copy has the same blocks interleaved, and the buffer type leaves get_alloc_size to
//   ggml_nbytes: a repacked matrix takes its own size again (ratio 1). Q8_0 is not repacked on x86.
// - AMX (amx/, compiled only into a build with AMX-INT8 and AVX512-VNNI, and ahead of
//   CPU_REPACK in the list, so it takes the types it knows first) packs Q4_0, Q4_1, Q8_0, Q4_K,
//   Q5_K, Q6_K, IQ4_XS into its tiles, adding per 32- or 256-value block 4 bytes of compensation
//   (Q8_0) or of scales (Q4_K, Q5_K), 2 (IQ4_XS) or none (mmq.cpp's get_row_size), and copies
//   F16 as it is.
// The build decides too: its ggml_cpu_has_* are compile-time, and a prebuilt without the
// CPU's variant (or without AMX) repacks less than the flags allow. The prior takes the most the
// flags allow, and the larger ratio where AMX and CPU_REPACK both could take a type, so it errs
// large; a tensor whose rows do not divide is priced as repacked too (the catalog keeps bytes by
// type, not shapes). What a load teaches (cpu-buffers.ts) replaces it type by type.
// Not priced, left to learning: RISC-V (its kernels depend on the vector length and the build's
// zvfh, which no flag here says) and KleidiAI (ARM builds with GGML_CPU_KLEIDIAI, off by default).
import type { CpuFeatures } from '../common/this-cpu.js';
import type { CpuBufferRatios } from './cpu-buffers.js';

/** ggml_type numbers (ggml.h), as the catalog's matrix bytes are keyed. */
const GGML = { F16: 1, Q4_0: 2, Q4_1: 3, Q8_0: 8, Q2_K: 10, Q4_K: 12, Q5_K: 13, Q6_K: 14, IQ4_NL: 20, IQ4_XS: 23, MXFP4: 39 } as const;

const X86_AVX2_REPACKED = [GGML.Q4_0, GGML.Q4_K, GGML.IQ4_NL, GGML.MXFP4];
const X86_AVX512_REPACKED = [GGML.Q2_K];
const ARM_DOTPROD_REPACKED = [GGML.Q4_0, GGML.Q4_K, GGML.Q5_K, GGML.Q6_K, GGML.IQ4_NL, GGML.MXFP4, GGML.Q8_0];
const ARM_I8MM_REPACKED = [GGML.Q4_0, GGML.Q4_K, GGML.Q5_K, GGML.Q6_K, GGML.Q8_0];

/** AMX's packed size over the original, per type: (block bytes + what get_row_size adds per block) / block bytes. */
const AMX_RATIOS: Readonly<Record<number, number>> = {
  [GGML.F16]: 1,
  [GGML.Q4_0]: 1,
  [GGML.Q4_1]: 1,
  [GGML.Q8_0]: (34 + 4) / 34,
  [GGML.Q4_K]: (144 + 4) / 144,
  [GGML.Q5_K]: (176 + 4) / 176,
  [GGML.Q6_K]: 1,
  [GGML.IQ4_XS]: (136 + 2) / 136,
};

/**
 * The share of each matrix type's bytes llama.cpp may copy into the CPU's extra buffers on a CPU
 * with these features, at most (see above). Where the OS lists no flags (Windows, macOS), the
 * architecture's usual set: AVX2 and AVX-512 on x64 (not AMX, which only Xeons have), dotprod
 * and i8mm on arm64 (every Apple Silicon has dotprod, and i8mm repacks nothing dotprod does not).
 * Pure.
 */
export function cpuBufferPrior(cpu: CpuFeatures): CpuBufferRatios {
  const ratios: Record<string, number> = {};
  const take = (types: readonly number[], ratioOf: (type: number) => number = () => 1) => {
    for (const type of types) ratios[type] = Math.max(ratios[type] ?? 0, ratioOf(type));
  };
  const has = (flag: string) => cpu.flags?.includes(flag) ?? false;
  if (cpu.arch === 'x64') {
    const known = cpu.flags !== null;
    if (!known || has('avx2')) take(X86_AVX2_REPACKED);
    if (!known || has('avx512f')) take(X86_AVX512_REPACKED);
    if (has('amx_int8') && has('avx512_vnni')) take(Object.keys(AMX_RATIOS).map(Number), (type) => AMX_RATIOS[type] ?? 1);
  } else if (cpu.arch === 'arm64') {
    const known = cpu.flags !== null;
    if (!known || has('asimddp')) take(ARM_DOTPROD_REPACKED);
    if (!known || has('i8mm')) take(ARM_I8MM_REPACKED);
  }
  return ratios;
}

/** The ratios to price with: what a load taught for a type, else the prior's. Pure. */
export function withCpuBufferPrior(prior: CpuBufferRatios, learned: CpuBufferRatios): CpuBufferRatios {
  return { ...prior, ...learned };
}
