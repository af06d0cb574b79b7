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

/** Device memory, as opposed to host memory (plain, mapped or pinned "_Host" buffers). */
export function isDeviceBuffer(buffer: string): boolean {
  return !/^CPU/i.test(buffer) && !/_Host$/i.test(buffer);
}

/** Running sums of a server's buffer lines, by where they live. */
export class BufferTally {
  deviceBytes = 0;
  hostBytes = 0;
  lines = 0;

  /** Feeds one log line; lines that are not buffer sizes are ignored. */
  add(line: string): void {
    const size = parseBufferSize(line);
    if (size === null) return;
    this.lines++;
    if (isDeviceBuffer(size.buffer)) this.deviceBytes += size.bytes;
    else this.hostBytes += size.bytes;
  }
}
