// The supervisor running the real embedded engine (dist/core/engine/embedded/main.js, built by
// `npm test`) on real generated GGUF models: the path every launch takes in production where no
// llama-server is installed.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LaunchError } from '../../core/engine/failure-classifier.js';
import type { LaunchSpec } from '../../core/engine/launch-spec.js';
import { defaultEngineCommand, embeddedEntryPath } from '../../core/engine/supervisor/engine-command.js';
import { isRunning, readCommandLine } from '../../core/engine/supervisor/process-tree.js';
import { Supervisor } from '../../core/engine/supervisor/supervisor.js';
import { corruptModel, modelWithShape, tinyModel } from '../support/test-models.js';
import type { ServerEvent } from '../../core/contracts/server-events.js';

/**
 * demo-chat's size: one thread evaluates a 512-token batch of it in several hundred ms, so a
 * ~6000-token prompt spends many seconds in a dozen batches before its first byte.
 */
const SLOW_PROMPT_SHAPE = { name: 'test-slow-prompt', nLayer: 8, nEmbd: 512, nHead: 8, nHeadKv: 4, nFf: 1408, contextLength: 8192, fileType: 'f16', seed: 11 } as const;

let dataDir: string;
let supervisor: Supervisor | undefined;
const models = new Map<string, string>();
/** The slow prompt's hang limit; the test sets it from a measured batch before it launches the model. */
let slowPromptLimitMs = 3_000;
/** A hang limit longer than the test: the calibration server's, which must finish the prompt it measures. */
const NEVER_JUDGED_MS = 10 * 60_000;

beforeAll(async () => {
  if (!existsSync(embeddedEntryPath())) throw new Error(`${embeddedEntryPath()} is missing: run npm run build first (npm test does)`);
  models.set('tiny', await tinyModel());
  models.set('broken', await corruptModel());
  models.set('slow-prompt', await modelWithShape(SLOW_PROMPT_SHAPE));
  models.set('slow-prompt-calibration', models.get('slow-prompt') as string);
});
beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-embedded-'));
  supervisor = await Supervisor.start({
    specFor: (modelId): LaunchSpec => ({
      modelId,
      engine: 'embedded',
      modelPath: models.get(modelId) ?? join(dataDir, 'absent.gguf'),
      contextTokens: modelId.startsWith('slow-prompt') ? 8192 : 512,
      gpuLayers: 0,
      threads: 1,
      aliases: [],
      extraArgs: [],
      env: {},
    }),
    engineCommand: defaultEngineCommand({ llamaServerPath: null }),
    footprint: () => 0,
    dataDir,
    // Far below the default, so a slow prompt that were judged by its silence alone would be
    // killed. The slow prompt's limit is two fifths of its time as this machine runs it now
    // (measured by the test), so a loaded machine stretches the limit with the batches. The
    // measurement itself is never judged: under 3 s, one of its batches beside busy loops was
    // taken for a hang and its server killed mid-prompt (fetch failed: other side closed).
    hangLimitMs: (spec) => (spec.modelId === 'slow-prompt' ? slowPromptLimitMs : spec.modelId === 'slow-prompt-calibration' ? NEVER_JUDGED_MS : 3_000),
  });
});
afterEach(async () => {
  await supervisor?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe('Supervisor with the embedded engine', () => {
  it('launches a real model, answers a chat completion, and stops', async () => {
    if (!supervisor) throw new Error('no supervisor');
    await supervisor.launch('tiny', 'full');
    const endpoint = supervisor.endpointFor('tiny');
    if (endpoint === null) throw new Error('ready but no endpoint');
    const response = await fetch(`http://127.0.0.1:${endpoint.port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${endpoint.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 }),
    });
    expect(response.status).toBe(200);
    // The engine read its key from the file the supervisor wrote: it is enforced, and not on the command line.
    expect((await fetch(`http://127.0.0.1:${endpoint.port}/v1/models`)).status).toBe(401);
    const commandLine = (await readCommandLine(endpoint.pid)) ?? '';
    expect(commandLine).toContain('--api-key-file');
    expect(commandLine).not.toContain(endpoint.apiKey);
    const keyFile = /--api-key-file (\S+)/.exec(commandLine)?.[1] ?? '';
    expect(existsSync(keyFile)).toBe(true);
    const body = (await response.json()) as { choices: { message: { role: string; content: string } }[] };
    expect(body.choices[0]?.message.role).toBe('assistant');
    expect(typeof body.choices[0]?.message.content).toBe('string');
    expect((await supervisor.measured('tiny'))?.bytes).toBeGreaterThan(0);
    expect(supervisor.logs('tiny').some((l) => /buffer size =/.test(l))).toBe(true);

    await supervisor.evict('tiny');
    expect(await isRunning(endpoint.pid)).toBe(false);
    expect(existsSync(keyFile)).toBe(false);
    expect(supervisor.status('tiny')?.exit).toEqual({ exitCode: 0, signal: null });
  });

  it("rejects a corrupt model as invalid (no retry can fix it) with llama.cpp's reason", async () => {
    if (!supervisor) throw new Error('no supervisor');
    const error = await supervisor.launch('broken', 'full').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LaunchError);
    expect(error).toMatchObject({ kind: 'invalid', exitCode: 1 });
    expect((error as LaunchError).reason).toMatch(/^tensor '[\w.]+' data is not within the file bounds, model is corrupted or incomplete$/);
  });

  it('rejects a missing model file as the machine in the way (it may come back), naming the file', async () => {
    if (!supervisor) throw new Error('no supervisor');
    await expect(supervisor.launch('absent', 'full')).rejects.toMatchObject({ kind: 'environment', reason: expect.stringMatching(/ENOENT.*absent\.gguf/) });
  });
});

/** A prompt of `n` words, about 6.8 tokens each on the generated vocabulary (75 words: one 512-token batch; 760: ten). */
const words = (n: number): string => Array.from({ length: n }, (_, i) => `word${i % 97}`).join(' ');

describe('hang detection on the embedded engine', () => {
  it('takes a long prompt being processed for progress, though no byte reaches the client for several hang limits', async () => {
    if (!supervisor) throw new Error('no supervisor');
    // The whole prompt's time on this machine as loaded now, through a server of its own (a
    // hang watch reads its limit at its first claim; a server of its own keeps no cache of it).
    // Its limit is two fifths of that: the client's silence, the whole prompt, outlasts it
    // 2.5 times, and the engine's slowest step, the last of its ~10 batches of 512 tokens
    // (attention grows with the position: about 2.5 times the first), stays near a third of it.
    // A limit of three first batches, measured alone, was as short as that last batch and was
    // struck with two busy processes beside the suite.
    const prompt = words(760);
    await supervisor.launch('slow-prompt-calibration', 'full');
    const calibration = supervisor.claim('slow-prompt-calibration');
    if (calibration === null) throw new Error('slow-prompt-calibration is not ready');
    const calibrationStarted = Date.now();
    const measured = await fetch(`http://127.0.0.1:${calibration.endpoint.port}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${calibration.endpoint.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 1, temperature: 0 }),
    });
    expect(measured.status).toBe(200);
    await measured.json();
    const promptMs = Date.now() - calibrationStarted;
    calibration.release();
    await supervisor.evict('slow-prompt-calibration');
    slowPromptLimitMs = Math.max(3_000, Math.round(promptMs * 0.4));

    const events: ServerEvent[] = [];
    supervisor.onServerEvent((event) => events.push(event));
    await supervisor.launch('slow-prompt', 'full');
    const claim = supervisor.claim('slow-prompt');
    if (claim === null) throw new Error('slow-prompt is not ready');
    const started = Date.now();
    // The answer's bytes come only after the whole prompt: the claim hears of no progress until then.
    const response = await fetch(`http://127.0.0.1:${claim.endpoint.port}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${claim.endpoint.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt, max_tokens: 1, temperature: 0 }),
    });
    const silentMs = Date.now() - started;
    const body = (await response.json()) as { usage: { prompt_tokens: number } };
    claim.release();
    expect(response.status).toBe(200);
    expect(body.usage.prompt_tokens).toBeGreaterThan(4_500);
    // The premise: the client heard nothing for longer than the hang limit (else this proves nothing).
    expect(silentMs).toBeGreaterThan(slowPromptLimitMs);
    expect(claim.lost.aborted).toBe(false);
    expect(events.map((e) => e.type)).toEqual(['ServerSpawned', 'ServerReady']);
  }, 120_000);
});
