// The CPU's extra weight buffers, learned per (engine build, CPU) and kept in the data dir.
//
// Where weights run on the CPU, llama.cpp copies the matrices it can multiply faster in
// another layout into an extra buffer: `AMX` on Xeons with AMX, `CPU_REPACK` for Q4_0, IQ4_NL,
// Q4_K… on AVX2 and ARM CPUs. Which types, and how much, depends on the build's kernels and the
// CPU's instructions: the CPU's flags say what llama.cpp's source allows at most
// (cpu-buffer-prior.ts prices that until a load has taught a type), but only the engine's own
// load log says what this build did ("CPU_REPACK model buffer size = 12.66 MiB"). The first load
// of a model whose matrix types this (build, CPU) has not seen yet teaches what share of those
// types' bytes went into extra buffers; the next estimate of any model with those types counts
// it in place of the prior.
//
// The copy does not replace the mapped file: llama.cpp unmaps only the ends of a file's range
// that no mapped tensor uses, and the input embeddings (first) and the norms (in every block)
// stay mapped, so the repacked tensors' file pages stay in the process's RSS, counted by the
// kernel as the process's own. The estimate therefore keeps the whole tensor data and adds the
// extra buffers on top (BENCHMARKS.md §4).
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import type { CpuMatrixBytes } from './gguf-metadata.js';

export const CPU_BUFFERS_FILE_NAME = 'cpu-buffers.json';

/** Per ggml type number, the share of its matrix bytes that went into the CPU's extra buffers (0: none). */
export type CpuBufferRatios = Readonly<Record<string, number>>;

export interface CpuBufferProfile {
  ratios: CpuBufferRatios;
  /** The extra buffer types seen ("CPU_REPACK", "AMX"), for people reading the file. */
  buffers: string[];
}

interface CpuBuffersFile {
  version: 1;
  /** By cpuBufferKey(build, cpu). */
  profiles: Record<string, CpuBufferProfile>;
}

/** One (engine build, CPU): "node-llama-cpp 3.21.1 · AMD EPYC 9B45 (avx2 avx512f …)". */
export function cpuBufferKey(engineBuild: string, cpu: string): string {
  return `${engineBuild} · ${cpu}`;
}

/** Matrix bytes by type over every block and the rest: what a launch wholly on the CPU holds. */
export function totalMatrixBytes(matrices: CpuMatrixBytes): Record<string, number> {
  const total: Record<string, number> = {};
  for (const bytesByType of [...matrices.blocks, matrices.nonBlock]) {
    for (const [type, bytes] of Object.entries(bytesByType)) total[type] = (total[type] ?? 0) + bytes;
  }
  return total;
}

/** The extra buffer bytes of matrices of these types on the CPU, by the learned ratios (unknown types: none). Pure. */
export function cpuExtraBytes(ratios: CpuBufferRatios, bytesByType: Readonly<Record<string, number>>): number {
  let extra = 0;
  for (const [type, bytes] of Object.entries(bytesByType)) extra += (ratios[type] ?? 0) * bytes;
  return Math.ceil(extra);
}

/**
 * The ratios after one load wholly on the CPU of a model with these matrix bytes by type,
 * whose log printed `extraBytes` of extra buffers in all. Types already known keep their ratio
 * (the first load that had them taught it); what they do not explain is shared over the new
 * types in proportion to what the CPU's prior (cpu-buffer-prior.ts) says each may take, so that
 * a Q4_K_M's first load on x86 teaches Q4_K its copy and Q6_K none. Where the prior says
 * nothing of them, or less than was copied (it is not the build's word), in proportion to their
 * bytes: exact for any model with one new type at a time (a Q4_0 file, an f16 one), and the
 * types' average for a model that brings two at once. Pure; returns `known` itself when there
 * is nothing new.
 */
export function learnCpuBufferRatios(
  known: CpuBufferRatios,
  bytesByType: Readonly<Record<string, number>>,
  extraBytes: number,
  prior: CpuBufferRatios = {},
): CpuBufferRatios {
  const fresh = Object.entries(bytesByType).filter(([type, bytes]) => bytes > 0 && known[type] === undefined);
  if (fresh.length === 0) return known;
  const unexplained = Math.max(0, extraBytes - cpuExtraBytes(known, bytesByType));
  const allowed = fresh.reduce((sum, [type, bytes]) => sum + (prior[type] ?? 0) * bytes, 0);
  const weightOf = allowed > 0 && unexplained <= allowed ? (type: string) => prior[type] ?? 0 : () => 1;
  const weighed = fresh.reduce((sum, [type, bytes]) => sum + weightOf(type) * bytes, 0);
  return { ...known, ...Object.fromEntries(fresh.map(([type]) => [type, Math.min(1, (weightOf(type) * unexplained) / weighed)])) };
}

export class CpuBufferStore {
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly profiles: Map<string, CpuBufferProfile>,
  ) {}

  /** Loads the store; a missing or corrupt file is an empty one (the next loads teach it again). Blocks on one read. */
  static async open(file: string): Promise<CpuBufferStore> {
    const profiles = new Map<string, CpuBufferProfile>();
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<CpuBuffersFile>;
      for (const [key, profile] of Object.entries(parsed.profiles ?? {})) {
        const ratios = Object.entries(profile?.ratios ?? {}).filter(([, r]) => typeof r === 'number' && r >= 0 && r <= 1);
        profiles.set(key, { ratios: Object.fromEntries(ratios), buffers: Array.isArray(profile?.buffers) ? profile.buffers.map(String) : [] });
      }
    } catch {
      // missing or corrupt: start empty
    }
    return new CpuBufferStore(file, profiles);
  }

  /** The ratios learned for one (build, CPU); empty when none. Non-blocking. */
  ratios(key: string): CpuBufferRatios {
    return this.profiles.get(key)?.ratios ?? {};
  }

  /** Whether a load of a model with these matrix types would teach anything new. Non-blocking. */
  teaches(key: string, bytesByType: Readonly<Record<string, number>>): boolean {
    const known = this.ratios(key);
    return Object.entries(bytesByType).some(([type, bytes]) => bytes > 0 && known[type] === undefined);
  }

  /**
   * Learns from one load wholly on the CPU (learnCpuBufferRatios, shared by the CPU's prior) and persists the file
   * atomically. Resolves to whether anything was learned; rejects with the I/O error if it
   * cannot be written (the in-memory profile is kept either way).
   */
  async learn(key: string, bytesByType: Readonly<Record<string, number>>, extra: { bytes: number; buffers: readonly string[] }, prior: CpuBufferRatios = {}): Promise<boolean> {
    const previous = this.profiles.get(key) ?? { ratios: {}, buffers: [] };
    const ratios = learnCpuBufferRatios(previous.ratios, bytesByType, extra.bytes, prior);
    if (ratios === previous.ratios) return false;
    this.profiles.set(key, { ratios, buffers: [...new Set([...previous.buffers, ...extra.buffers])] });
    const snapshot: CpuBuffersFile = { version: 1, profiles: Object.fromEntries(this.profiles) };
    this.writes = this.writes.catch(() => undefined).then(async () => {
      await mkdir(dirname(this.file), { recursive: true });
      await writeFileAtomic(this.file, `${JSON.stringify(snapshot, null, 2)}\n`);
    });
    await this.writes;
    return true;
  }
}
