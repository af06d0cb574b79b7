// Which CPU this process runs on, as one string: what decides both the extra weight buffers
// llama.cpp adds (core/daemon/memory/cpu-buffer-learning.ts) and whether a tested native binding still
// fits (core/engine/embedded/runtime/binding-verdict.ts).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/**
 * This CPU: its model name and a digest of its instruction-set flags (AMX, AVX2, SVE… are what
 * decide the extra buffers and the ggml CPU variant loaded; the same model name can come with
 * some of them turned off in a VM).
 */
export function thisCpu(): string {
  const model = cpus()[0]?.model.trim() || 'unknown CPU';
  let flags = '';
  try {
    flags = /^(?:flags|Features)\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '';
  } catch {
    // not Linux: the model name alone
  }
  return flags === '' ? model : `${model} (flags ${createHash('sha256').update(flags.trim()).digest('hex').slice(0, 12)})`;
}
