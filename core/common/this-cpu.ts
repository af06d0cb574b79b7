// Which CPU this process runs on, as one string: what decides both the extra weight buffers
// llama.cpp adds (core/daemon/memory/cpu-buffer-learning.ts) and whether a tested native binding still
// fits (core/engine/embedded/runtime/binding-verdict.ts).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** What a CPU's instruction sets are known to be: its architecture, and its flags where the OS lists them. */
export interface CpuFeatures {
  /** process.arch: 'x64', 'arm64'… */
  arch: string;
  /** /proc/cpuinfo's `flags` (x86) or `Features` (ARM) words; null where the OS does not list them. */
  flags: readonly string[] | null;
}

/**
 * This CPU: its model name and a digest of its instruction-set flags (AMX, AVX2, SVE… are what
 * decide the extra buffers and the ggml CPU variant loaded; the same model name can come with
 * some of them turned off in a VM).
 */
export function thisCpu(): string {
  const model = cpus()[0]?.model.trim() || 'unknown CPU';
  const flags = cpuinfoFlagsLine();
  return flags === '' ? model : `${model} (flags ${createHash('sha256').update(flags).digest('hex').slice(0, 12)})`;
}

/** This CPU's architecture and flags, for what the flags alone can tell (cpu-buffer-prior.ts). Blocks on one small read. */
export function thisCpuFeatures(): CpuFeatures {
  const flags = cpuinfoFlagsLine();
  return { arch: process.arch, flags: flags === '' ? null : flags.split(/\s+/) };
}

/** The first CPU's flags line of /proc/cpuinfo, trimmed; '' where there is none (not Linux). */
function cpuinfoFlagsLine(): string {
  try {
    return (/^(?:flags|Features)\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '').trim();
  } catch {
    return '';
  }
}
