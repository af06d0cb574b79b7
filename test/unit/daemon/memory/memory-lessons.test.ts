// What the daemon learns about the CPU's extra weight buffers from a model's first load on the
// CPU: the store's ratios, shared among the load's new types by this CPU's prior.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Catalog, CatalogModel } from '../../../../core/catalog/catalog.js';
import { cpuBufferPrior } from '../../../../core/catalog/cpu-buffer-prior.js';
import { CpuBufferStore } from '../../../../core/catalog/cpu-buffers.js';
import { memoryLessons } from '../../../../core/daemon/memory/memory-lessons.js';
import type { BufferSize } from '../../../../core/engine/supervisor/memory/memory-measure.js';
import type { Endpoint } from '../../../../core/engine/supervisor/supervisor-types.js';

const MiB = 1024 * 1024;
const KEY = 'node-llama-cpp 3.21.1 · a CPU';
// A Q4_K_M's matrices: Q4_K (ggml type 12) and Q6_K (14); on x86 with AVX2 llama.cpp copies the Q4_K ones.
const model = { id: 'q4km', repack: true, cpuMatrixBytes: { '12': 445.5 * MiB, '14': 111.5 * MiB } } as unknown as CatalogModel;
const buffers: BufferSize[] = [
  { buffer: 'CPU_Mapped', purpose: 'model', bytes: 753.81 * MiB },
  { buffer: 'CPU_REPACK', purpose: 'model', bytes: 445.5 * MiB },
];
const at = { level: 'full' } as Endpoint;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-lessons-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('memoryLessons: the CPU\'s extra weight buffers', () => {
  it('teaches a Q4_K_M\'s first load on the CPU as this CPU\'s prior shares it: Q4_K its copy, Q6_K none', async () => {
    const cpuBuffers = await CpuBufferStore.open(join(dir, 'cpu-buffers.json'));
    let reloads = 0;
    const catalog = {
      resolve: (id: string) => (id === model.id ? model : undefined),
      learnFromMeasurement: async () => undefined,
      reload: async () => {
        reloads++;
      },
    } as unknown as Catalog;
    const learn = memoryLessons({
      catalog,
      cpuBuffers,
      cpuBufferKeyOf: () => KEY,
      cpuBufferPrior: cpuBufferPrior({ arch: 'x64', flags: ['avx2'] }),
      supervisor: { modelBuffers: () => buffers },
      controller: { placement: () => null },
      gpuMode: () => false,
      cpuOnly: () => true,
      runtimeBytes: () => 0,
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    });
    await learn(model.id, { bytes: 1364 * MiB, where: 'host' }, at);
    expect(cpuBuffers.ratios(KEY)).toEqual({ '12': 1, '14': 0 });
    expect(reloads).toBe(1);
  });
});
