import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BufferTally, isDeviceBuffer, parseBufferSize } from '../../../core/engine/supervisor/memory/memory-measure.js';

const MIB = 1024 * 1024;
const fixture = (name: string): string => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8');

describe('llama.cpp buffer size lines', () => {
  it('reads buffer, purpose and size from both wordings', () => {
    expect(parseBufferSize('llama_kv_cache_init:      CUDA0 KV buffer size =   512.00 MiB')).toEqual({ buffer: 'CUDA0', purpose: 'KV', bytes: 512 * MIB });
    expect(parseBufferSize('llm_load_tensors:      CUDA0 buffer size =  3946.35 MiB')).toEqual({
      buffer: 'CUDA0', purpose: '', bytes: Math.round(3946.35 * MIB),
    });
    expect(parseBufferSize('0.00.142.131 I srv  llama_server: model loaded')).toBeNull();
  });

  it('tells device buffers from host ones', () => {
    expect(['CUDA0', 'Metal', 'Vulkan0', 'ROCm1'].every(isDeviceBuffer)).toBe(true);
    expect(['CPU', 'CPU_Mapped', 'CUDA_Host', 'Vulkan_Host'].some(isDeviceBuffer)).toBe(false);
  });

  it('sums a whole log by where the memory lives', () => {
    const tally = new BufferTally();
    for (const line of fixture('llama-logs/buffer-sizes-cuda.log').split('\n')) tally.add(line);
    expect(tally.lines).toBe(8);
    expect(tally.deviceBytes).toBe([3946.35, 512, 300.01, 1024].reduce((sum, mib) => sum + Math.round(mib * MIB), 0));
    expect(tally.hostBytes).toBe([250, 0.58, 16.01, 144.45].reduce((sum, mib) => sum + Math.round(mib * MIB), 0));
  });
});
