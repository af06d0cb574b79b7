// What a running model server really uses, from llama.cpp's own "buffer size = N MiB" lines
// (every build, every backend). The NVIDIA driver's per-process accounting is parsed once, in
// core/gpu/compute-apps.ts, and reaches the supervisor as its gpuProcessMemory dependency.
// The catalog learns from these: the next estimate for a model is the larger of estimate and
// measurement, because estimates that forget the draft, the projector or the compute buffer
// are the most common cause of an OOM on a "fitting" plan.

const MIB = 1024 * 1024;

/**
 * "load_tensors:        CUDA0 model buffer size =  3820.93 MiB",
 * "llama_kv_cache:      CUDA0 KV buffer size =   512.00 MiB",
 * "llm_load_tensors:      CUDA0 buffer size =  3946.35 MiB" (older builds), with or without
 * the timestamp prefix of current builds.
 */
const BUFFER_LINE = /(\S+)\s+(?:(model|KV|compute|output|RS|recurrent)\s+)?buffer size\s*=\s*([\d.]+)\s*MiB/;

export interface BufferSize {
  /** The buffer type as llama.cpp names it: "CUDA0", "Metal", "Vulkan0", "CPU", "CPU_Mapped", "CUDA_Host". */
  buffer: string;
  /** "model", "KV", "compute", … or "" on old builds that did not say. */
  purpose: string;
  bytes: number;
}

/** One log line's buffer size, or null when the line is not one. Pure. */
export function parseBufferSize(line: string): BufferSize | null {
  const match = BUFFER_LINE.exec(line);
  if (match === null) return null;
  return { buffer: match[1] ?? '', purpose: match[2] ?? '', bytes: Math.round(Number(match[3]) * MIB) };
}

/**
 * The CPU's extra weight buffers: llama.cpp copies the weights it can run faster rearranged
 * there, beside the mapped file (`CPU_Mapped`) or the plain `CPU` buffer. `AMX` on Intel Xeons
 * with AMX; `CPU_REPACK` (`CPU_AARCH64` in older builds) for repackable quants (Q4_0, IQ4_NL,
 * Q4_K…) on AVX2 and ARM CPUs; `CPU_KLEIDIAI` on ARM builds with KleidiAI. Host memory, all of
 * them, although `AMX` does not say CPU.
 */
const CPU_EXTRA_BUFFER = /^(AMX|CPU_REPACK|CPU_AARCH64|CPU_KLEIDIAI|KLEIDIAI)$/i;

/** Whether a buffer type is one of the CPU's extra weight buffers (see CPU_EXTRA_BUFFER). */
export function isCpuExtraBuffer(buffer: string): boolean {
  return CPU_EXTRA_BUFFER.test(buffer);
}

/** Device memory, as opposed to host memory (plain, mapped, pinned "_Host" or the CPU's extra buffers). */
export function isDeviceBuffer(buffer: string): boolean {
  return !/^CPU/i.test(buffer) && !/_Host$/i.test(buffer) && !isCpuExtraBuffer(buffer);
}

/** Running sums of a server's buffer lines, by where they live. */
export class BufferTally {
  deviceBytes = 0;
  hostBytes = 0;
  lines = 0;
  /** The weights' buffers, in log order: what the CPU's extra buffers are learned from (core/catalog/cpu-buffers.ts). */
  readonly modelBuffers: BufferSize[] = [];

  /** Feeds one log line; lines that are not buffer sizes are ignored. */
  add(line: string): void {
    const size = parseBufferSize(line);
    if (size === null) return;
    this.lines++;
    if (size.purpose === 'model') this.modelBuffers.push(size);
    if (isDeviceBuffer(size.buffer)) this.deviceBytes += size.bytes;
    else this.hostBytes += size.bytes;
  }
}
