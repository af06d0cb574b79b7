// One truthful memory picture on a machine without a GPU, through the real demo daemon: host
// RAM is the budget there, and an engine process costs its runtime on top of its model. Before,
// a card read "Footprint 9.9 MiB · measured 106 MiB" while the bar drew 106 MiB and the plan
// counted 9.9: three figures for one process. Now every model is priced with its engine's
// runtime (measured from the first engine of its kind), and the bar draws what the plan counted.
//
// The demo's models with the warm spare off: an engine adopted from the spare holds another RSS
// than one started fresh (its runtime started with no model; demo-chat's 10 MiB more here), so
// with it on, which engine is checked would depend on timing. The runtime is then learned from
// demo-tiny, the first model to be ready, not from a spare.
//
// Whatever this CPU's llama.cpp copies beside the mapped file (an Intel Xeon with AMX: an `AMX`
// buffer as large as demo-chat's blocks; an AMD EPYC: nothing at f16) is read from demo-chat's
// own log and must be what the daemon learned and priced, not a layout this test expects.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CPU_BUFFERS_FILE_NAME, cpuExtraBytes, totalMatrixBytes } from '../../core/catalog/cpu-buffers.js';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { readGgufFacts } from '../../core/catalog/gguf-metadata.js';
import type { ModelLogsResponse } from '../../core/contracts/commands.js';
import { isCpuExtraBuffer, parseBufferSize } from '../../core/engine/supervisor/memory/memory-measure.js';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { demoConfigText } from '../../core/daemon/demo-config.js';
import { MEASURE_INTERVAL_MS } from '../../core/engine/supervisor/memory/memory-loop.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess;
let client: OpenAI;
let workDir: string;
let models: DemoModels;

beforeAll(async () => {
  workDir = await makeDataDir();
  models = await generateDemoModels(workDir);
  const configPath = join(workDir, 'config.yaml');
  // No saved conversations: saving an idle slot of ~2,400 tokens (each sample below follows such
  // a prompt) held up to 15–25 MB more for a while (up to 229–239 MB sampled against estimates of
  // 211–217; 194–213 with saving off), which the estimate does not count yet (issue 26). This
  // check is of the model's footprint in use, which the plan must hold.
  await writeFile(configPath, demoConfigText(models, { warmSpare: false, savedConversations: false, reserveBytes: 0, fallbackAndAliases: false, broken: true, embed: false }));
  daemon = await startDaemonProcess({ config: configPath });
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await removeDataDir(workDir);
});

async function measured(id: string): Promise<Snapshot> {
  for (;;) {
    const state = await daemon.state();
    const model = state.models.find((m) => m.id === id);
    if (model?.measuredBytes != null && model.status.state === 'ready') return state;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('the memory picture on the CPU', () => {
  it('prices each model with its engine runtime, so its footprint and its measurement agree (within 10 % under, 15 % over), and the bar draws what the plan counted', async () => {
    expect((await daemon.state()).budget.mode).toBe('cpu');
    // The first engine of its kind teaches the runtime; the second model is the check.
    await client.chat.completions.create({ model: 'demo-tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    await measured('demo-tiny');
    await client.chat.completions.create({ model: 'demo-chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    await measured('demo-chat');
    // The footprint is what the model holds at its peak in use, which is what the plan must have
    // room for. A server touches its compute buffer (18 MiB of demo-chat's) only as whole
    // micro-batches run through it, and its RSS falls back by 10 to 20 MiB between requests (the
    // embedded engine's heap and freed batch buffers): one sample lands anywhere in that range,
    // 192 or 211 MB for the same estimate of 211 MB. So the check is against the largest of a
    // few samples, each taken after a prompt of well over one micro-batch.
    let state = await measured('demo-chat');
    let rss = 0;
    for (let round = 0; round < 3; round++) {
      await client.completions.create({ model: 'demo-chat', prompt: 'hello world '.repeat(200), max_tokens: 2 });
      await new Promise((resolve) => setTimeout(resolve, MEASURE_INTERVAL_MS + 500));
      state = await measured('demo-chat');
      rss = Math.max(rss, state.models.find((m) => m.id === 'demo-chat')?.measuredBytes ?? 0);
    }
    const chat = state.models.find((m) => m.id === 'demo-chat');
    const estimate = chat?.estimateBytes[chat.status.level ?? 'full'] ?? 0;
    // Priced too low is the dangerous side (a plan that admits what the machine cannot hold):
    // within 10 %. Priced high, by up to the compute buffer the samples may have missed (18 of
    // ~200 MiB; a full suite beside it read 193 MB against 213 MB): within 15 %. Either bound
    // catches what this test was written for, a footprint of 9.9 MiB on a process of 106 MiB.
    expect(rss, `estimate ${estimate} B against ${rss} B measured`).toBeLessThanOrEqual(estimate * 1.1);
    expect(estimate, `estimate ${estimate} B against ${rss} B measured`).toBeLessThanOrEqual(rss * 1.15);

    // The bar is the plan's own figures: what it counts for each resident model, and nothing for
    // a model that is not (demo-broken, quarantined or never loaded, holds no place).
    const onBar = new Map<string, number>();
    for (const holder of state.budget.holders) if (holder.modelId !== null) onBar.set(holder.modelId, (onBar.get(holder.modelId) ?? 0) + holder.bytes);
    const residentIds = new Set(state.models.filter((m) => m.upstream !== null).flatMap((m) => [m.id, ...(m.draftId === null ? [] : [m.draftId])]));
    for (const id of onBar.keys()) expect(residentIds.has(id), `${id} is on the bar but not resident`).toBe(true);
    expect(onBar.has('demo-broken')).toBe(false);
    const chatOnBar = (onBar.get('demo-chat') ?? 0) + (onBar.get('demo-draft') ?? 0);
    // The plan prices a running model by its last measurement: the bar is within the samples' spread of the peak.
    expect(Math.abs(chatOnBar - rss) / rss).toBeLessThanOrEqual(0.1);

    // What this CPU's llama.cpp printed beside demo-chat's and its draft's mapped files is what the
    // daemon learned for their type (f16) on this (engine build, CPU).
    const logs = (await (await daemon.api('/api/models/demo-chat/logs')).json()) as ModelLogsResponse;
    const printed = logs.lines
      .map(parseBufferSize)
      .filter((s) => s !== null && s.purpose === 'model' && isCpuExtraBuffer(s.buffer))
      .reduce((sum, s) => sum + s!.bytes, 0);
    const stored = JSON.parse(await readFile(join(daemon.dataDir, CPU_BUFFERS_FILE_NAME), 'utf8')) as { profiles: Record<string, { ratios: Record<string, number> }> };
    const ratios = Object.values(stored.profiles)[0]?.ratios ?? {};
    expect(ratios['1'], 'the f16 share was learned from demo-chat\'s load').toBeDefined();
    let matrices = 0;
    for (const path of [models.chat.path, models.draft.path]) {
      const facts = await readGgufFacts(path);
      if (!facts.ok) throw new Error(facts.error);
      matrices += cpuExtraBytes(ratios, totalMatrixBytes(facts.facts.cpuMatrixBytes!));
    }
    expect(Math.abs(matrices - printed)).toBeLessThanOrEqual(0.01 * 1024 * 1024);
  }, 120_000);
});
