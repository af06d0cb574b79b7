// The CPU's extra weight buffers against the lines llama.cpp prints for them: an Intel Xeon's
// AMX buffer (the figures of issue 23) and an AMD EPYC's CPU_REPACK (captured here for Q4_0).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { cpuBufferLesson } from '../../../core/daemon/memory/cpu-buffer-learning.js';
import { cpuBufferPrior } from '../../../core/catalog/cpu-buffer-prior.js';
import { CpuBufferStore, learnCpuBufferRatios, totalMatrixBytes } from '../../../core/catalog/cpu-buffers.js';
import { DEMO_SHAPES } from '../../../core/catalog/demo/demo-models.js';
import { estimateFootprint } from '../../../core/catalog/footprint.js';
import { readGgufFacts, type GgufFacts } from '../../../core/catalog/gguf-metadata.js';
import { BufferTally, isCpuExtraBuffer, isDeviceBuffer, type BufferSize } from '../../../core/engine/supervisor/memory/memory-measure.js';
import { estimateOnCpu, footprintAt } from '../../../core/policy/levels.js';
import { modelWithShape, testModelDir } from '../../support/test-models.js';

const MiB = 1024 * 1024;
/** llama.cpp prints buffer sizes to two decimals of a MiB. */
const PRINTED = 0.005 * MiB;

function modelBuffers(fixture: string): BufferSize[] {
  const tally = new BufferTally();
  for (const line of readFileSync(new URL(`../../fixtures/llama-logs/${fixture}`, import.meta.url), 'utf8').split('\n')) tally.add(line);
  return tally.modelBuffers;
}

async function factsOf(shape: (typeof DEMO_SHAPES)['demo-chat']): Promise<GgufFacts> {
  const read = await readGgufFacts(await modelWithShape(shape));
  if (!read.ok) throw new Error(read.error);
  return read.facts;
}

const CASES = [
  { cpu: 'Intel Xeon with AMX, demo-chat f16', fixture: 'cpu-amx-xeon.log', extra: 'AMX', shape: DEMO_SHAPES['demo-chat'] },
  { cpu: 'AMD EPYC (AVX2), demo-chat q4_0', fixture: 'cpu-repack-epyc.log', extra: 'CPU_REPACK', shape: { ...DEMO_SHAPES['demo-chat'], name: 'demo-chat-q4_0', fileType: 'q4_0' as const } },
];

describe.each(CASES)('the CPU\'s extra weight buffers: $cpu', ({ fixture, extra, shape }) => {
  let facts: GgufFacts;
  let buffers: BufferSize[];
  beforeAll(async () => {
    facts = await factsOf(shape);
    buffers = modelBuffers(fixture);
  });

  it('reads the extra buffer as host memory beside the mapped file', () => {
    expect(buffers.map((b) => b.buffer).sort()).toEqual(['CPU_Mapped', extra].sort());
    expect(isCpuExtraBuffer(extra)).toBe(true);
    expect(isDeviceBuffer(extra)).toBe(false);
    const tally = new BufferTally();
    for (const b of buffers) tally.add(`load_tensors: ${b.buffer} model buffer size = ${(b.bytes / MiB).toFixed(2)} MiB`);
    expect(tally.deviceBytes).toBe(0);
  });

  it('learns it from the log, and the estimate on the CPU is the mapped file and the extra buffer as llama.cpp allocates them', () => {
    const lesson = cpuBufferLesson({ repack: true, cpuMatrixBytes: totalMatrixBytes(facts.cpuMatrixBytes!) }, null, buffers);
    expect(lesson?.extra.buffers).toEqual([extra]);
    const ratios = learnCpuBufferRatios({}, lesson!.bytesByType, lesson!.extra.bytes);
    const without = estimateFootprint({ path: 'm.gguf', facts, contextTokens: 2048, gpuLayers: 'all' });
    const learned = estimateFootprint({ path: 'm.gguf', facts, contextTokens: 2048, gpuLayers: 'all', cpuBufferRatios: ratios });
    if (!without.ok || !learned.ok) throw new Error('no estimate');
    const printed = buffers.reduce((sum, b) => sum + b.bytes, 0);
    const onCpu = estimateOnCpu(learned.estimate);
    expect(Math.abs(onCpu.weightsBytes - printed)).toBeLessThanOrEqual(2 * PRINTED);
    // Before: the mapped file alone, an extra buffer's worth under what llama.cpp holds.
    expect(printed - estimateOnCpu(without.estimate).weightsBytes).toBeGreaterThan(10 * MiB);
    // On a GPU the weights are the device's: no CPU buffer there.
    expect(footprintAt('full', learned.estimate).deviceBytes).toBe(footprintAt('full', without.estimate).deviceBytes);
    expect(footprintAt('full', onCpu).deviceBytes - footprintAt('full', without.estimate).deviceBytes).toBe(onCpu.weightsBytes - without.estimate.weightsBytes);
  });
});

describe('the store of learned ratios', () => {
  it('keeps them per (engine build, CPU) across restarts, learning only types it has not seen', async () => {
    const file = join(testModelDir(), 'cpu-buffers.json');
    const store = await CpuBufferStore.open(file);
    expect(await store.learn('build · cpu', { '2': 1000, '0': 0 }, { bytes: 500, buffers: ['CPU_REPACK'] })).toBe(true);
    expect(store.teaches('build · cpu', { '2': 10 })).toBe(false);
    expect(await store.learn('build · cpu', { '2': 1000 }, { bytes: 900, buffers: ['CPU_REPACK'] })).toBe(false);
    // A second type beside a known one gets what the known one does not explain.
    expect(await store.learn('build · cpu', { '2': 1000, '1': 2000 }, { bytes: 500, buffers: ['CPU_REPACK'] })).toBe(true);
    const again = await CpuBufferStore.open(file);
    expect(again.ratios('build · cpu')).toEqual({ '2': 0.5, '1': 0 });
    expect(again.ratios('other build · cpu')).toEqual({});
  });

  it('shares a load\'s extra buffers among the types it brings as the CPU\'s prior allows them, and by their bytes where the prior cannot say', () => {
    // A Q4_K_M's first load on x86 with AVX2: 445.5 MiB of Q4_K copied, its Q6_K not.
    const q4km = { '12': 445.5, '14': 111.5 };
    const avx2 = cpuBufferPrior({ arch: 'x64', flags: ['avx2'] });
    expect(learnCpuBufferRatios({}, q4km, 445.5, avx2)).toEqual({ '12': 1, '14': 0 });
    // A build that copied half of what the flags allow: Q4_K half, Q6_K still none.
    expect(learnCpuBufferRatios({}, q4km, 222.75, avx2)).toEqual({ '12': 0.5, '14': 0 });
    // Without a prior, or one that allows less than was copied (it is not the build's word): the average.
    expect(learnCpuBufferRatios({}, q4km, 445.5)).toEqual({ '12': 445.5 / 557, '14': 445.5 / 557 });
    expect(learnCpuBufferRatios({}, q4km, 500, avx2)).toEqual({ '12': 500 / 557, '14': 500 / 557 });
  });

  it('counts a draft\'s matrices with its model\'s, and learns nothing from a load that printed no weight buffers, with a projector, or with repacking off', () => {
    const model = { repack: true, cpuMatrixBytes: { '2': 100 } };
    const repack: BufferSize[] = [{ buffer: 'CPU_Mapped', purpose: 'model', bytes: 120 }, { buffer: 'CPU_REPACK', purpose: 'model', bytes: 90 }];
    expect(cpuBufferLesson({ ...model, draftId: 'd' }, { cpuMatrixBytes: { '2': 20, '1': 5 } }, repack)).toEqual({
      bytesByType: { '2': 120, '1': 5 },
      extra: { bytes: 90, buffers: ['CPU_REPACK'] },
    });
    expect(cpuBufferLesson({ ...model, draftId: 'd' }, null, repack)).toBeNull();
    expect(cpuBufferLesson(model, null, [])).toBeNull();
    expect(cpuBufferLesson({ ...model, projectorPath: '/m/mmproj.gguf' }, null, repack)).toBeNull();
    expect(cpuBufferLesson({ ...model, repack: false }, null, repack)).toBeNull();
  });
});
