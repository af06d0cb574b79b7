// The CPU's extra weight buffers, for real: two Q4_0 models through the real daemon on this
// machine's CPU. The first one's load log teaches the daemon what this (engine build, CPU) puts
// beside the mapped file (CPU_REPACK on AVX2 and ARM, AMX on Xeons with AMX), kept in the data
// dir; the second model's estimate then holds what its own log says llama.cpp allocated there.
// Before that load, the prior from this CPU's flags prices them (cpu-buffer-prior.ts).
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { writeLlamaGguf } from '../../core/catalog/demo/gguf-writer.js';
import { cpuBufferPrior } from '../../core/catalog/cpu-buffer-prior.js';
import { CPU_BUFFERS_FILE_NAME, cpuExtraBytes, totalMatrixBytes } from '../../core/catalog/cpu-buffers.js';
import { thisCpuFeatures } from '../../core/common/this-cpu.js';
import { readGgufFacts } from '../../core/catalog/gguf-metadata.js';
import type { ModelLogsResponse } from '../../core/contracts/commands.js';
import { isCpuExtraBuffer, parseBufferSize } from '../../core/engine/supervisor/memory/memory-measure.js';
import { eventually, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const MiB = 1024 * 1024;
/** llama.cpp prints buffer sizes to two decimals of a MiB. */
const PRINTED = 0.005 * MiB;

let daemon: DaemonProcess;
let client: OpenAI;
let workDir: string;

beforeAll(async () => {
  workDir = await makeDataDir();
  const teacher = join(workDir, 'q4-chat.gguf');
  const learner = join(workDir, 'q4-small.gguf');
  await writeLlamaGguf(teacher, { ...DEMO_SHAPES['demo-chat'], name: 'q4-chat', fileType: 'q4_0' });
  await writeLlamaGguf(learner, { ...DEMO_SHAPES['demo-chat'], name: 'q4-small', nLayer: 4, nEmbd: 256, nHead: 4, nHeadKv: 2, nFf: 768, fileType: 'q4_0', seed: 77 });
  const configPath = join(workDir, 'config.yaml');
  await writeFile(
    configPath,
    [
      'budget: { reserve: 0 }',
      'engines: { warmSpare: false }',
      'modelDirs: []',
      'models:',
      `  - { id: q4-chat, path: ${JSON.stringify(teacher)}, ctx: 2048, engine: embedded }`,
      `  - { id: q4-small, path: ${JSON.stringify(learner)}, ctx: 2048, engine: embedded }`,
      '',
    ].join('\n'),
  );
  daemon = await startDaemonProcess({ config: configPath });
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await removeDataDir(workDir);
});

/** The model's weight buffers from its server's log: the mapped file, and this CPU's extra ones. */
async function weightBuffers(id: string): Promise<{ mapped: number; extra: number; extraTypes: string[] }> {
  const logs = (await (await daemon.api(`/api/models/${id}/logs`)).json()) as ModelLogsResponse;
  const sizes = logs.lines.map(parseBufferSize).filter((s) => s !== null && s.purpose === 'model');
  const extra = sizes.filter((s) => isCpuExtraBuffer(s!.buffer));
  return {
    mapped: sizes.filter((s) => !isCpuExtraBuffer(s!.buffer)).reduce((sum, s) => sum + s!.bytes, 0),
    extra: extra.reduce((sum, s) => sum + s!.bytes, 0),
    extraTypes: extra.map((s) => s!.buffer),
  };
}

/** x86-64 with AVX2 or ARM with NEON: where llama.cpp repacks Q4_0 (or puts it in AMX). */
async function cpuRepacksQ4_0(): Promise<boolean> {
  const info = await readFile('/proc/cpuinfo', 'utf8').catch(() => '');
  return /^flags\s*:.*\bavx2\b/m.test(info) || /^Features\s*:.*\basimd\b/m.test(info);
}

describe('the CPU\'s extra weight buffers in the estimate', () => {
  it('learns them from the first Q4_0 load on this CPU, and prices the next Q4_0 model with what llama.cpp then allocates for it', async () => {
    expect((await daemon.state()).budget.mode).toBe('cpu');
    const before = (await daemon.model('q4-small')).estimateBytes.full;

    await client.chat.completions.create({ model: 'q4-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const teacher = await eventually('q4-chat\'s buffer lines', async () => {
      const buffers = await weightBuffers('q4-chat');
      return buffers.mapped > 0 ? buffers : undefined;
    });
    if (await cpuRepacksQ4_0()) expect(teacher.extra, 'this CPU repacks Q4_0, so its llama.cpp prints an extra weight buffer').toBeGreaterThan(MiB);
    const stored = await eventually('the learned profile', async () => {
      const text = await readFile(join(daemon.dataDir, CPU_BUFFERS_FILE_NAME), 'utf8').catch(() => undefined);
      return text === undefined ? undefined : (JSON.parse(text) as { profiles: Record<string, { ratios: Record<string, number>; buffers: string[] }> });
    });
    const [profile] = Object.values(stored.profiles);
    expect(profile?.buffers.sort()).toEqual([...new Set(teacher.extraTypes)].sort());
    expect(profile?.ratios['2']).toBeDefined();

    const learned = await eventually('q4-small\'s estimate with the learned buffers', async () => {
      const full = (await daemon.model('q4-small')).estimateBytes.full;
      return teacher.extra === 0 || full !== before ? full : undefined;
    });
    await client.chat.completions.create({ model: 'q4-small', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    const own = await eventually('q4-small\'s buffer lines', async () => {
      const buffers = await weightBuffers('q4-small');
      return buffers.mapped > 0 ? buffers : undefined;
    });
    // The learned share of q4-small's Q4_0 matrices is what llama.cpp put beside its mapped file;
    // the card's estimate grew by at least that (and by the engine's runtime, learned meanwhile).
    const facts = await readGgufFacts(join(workDir, 'q4-small.gguf'));
    if (!facts.ok) throw new Error(facts.error);
    const matrices = totalMatrixBytes(facts.facts.cpuMatrixBytes!);
    const priced = cpuExtraBytes(profile?.ratios ?? {}, matrices);
    // Large by at most 5 %: the share is learned over all Q4_0 matrices, and llama.cpp leaves an
    // output whose rows do not fill its 8-row groups (358 tokens here) mapped only.
    expect(priced, `${priced} B priced against ${own.extra} B of ${own.extraTypes.join(', ')}`).toBeGreaterThanOrEqual(own.extra - 2 * PRINTED);
    expect(priced).toBeLessThanOrEqual(own.extra * 1.05 + 2 * PRINTED);
    // Before any load, this CPU's flags already priced it (cpu-buffer-prior.ts), on the large
    // side: every Q4_0 matrix, that output too.
    const prior = cpuExtraBytes(cpuBufferPrior(thisCpuFeatures()), matrices);
    expect(prior, `${prior} B priced before any load against ${own.extra} B`).toBeGreaterThanOrEqual(own.extra - 2 * PRINTED);
    // The learned share replaced the prior's in the card's estimate (which the engine's runtime,
    // learned meanwhile, raised as well).
    expect(learned - before).toBeGreaterThanOrEqual(priced - prior - 2 * PRINTED);
  }, 120_000);
});
