// Engines that reach ready and never prove healthy, through the real daemon with a stand-in
// llama-server (test/support/stand-in-llama-server.ts): one aborts at its first request (what
// a CUDA fault at the first decode looks like), one exits with code 0 right after it is ready.
// Before, ready reset the recovery ladder: the first got 502 after 502 with its recovery at
// one attempt, the second was relaunched about 200 times in four minutes with no request at
// all. Now each death counts, five park the model with llama.cpp's reason, and every later
// request is refused at once with it. A healthy model beside them serves throughout.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { writeStandInLlamaServer } from '../support/stand-in-llama-server.js';

let workDir: string;
let daemon: DaemonProcess;
let client: OpenAI;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-unproven-'));
  const models = await generateDemoModels(workDir);
  const llamaServer = await writeStandInLlamaServer(workDir);
  const configPath = join(workDir, 'config.yaml');
  const model = (id: string, args: string[], extra = '') =>
    `  - id: ${id}\n    path: ${JSON.stringify(models.tiny.path)}\n    ctx: 2048\n    engine: llama-server\n    args: ${JSON.stringify(args)}\n${extra}`;
  await writeFile(
    configPath,
    [
      'modelDirs: []',
      'engines:',
      `  llamaServer: ${JSON.stringify(llamaServer)}`,
      '  warmSpare: false',
      'models:',
      model('dies-at-first-request', ['--fake-abort-at-first-request']),
      // Pinned: wanted forever with no request, as a person's pinned model is. A second after
      // it says it listens: 50 ms was, with two busy processes beside the suite, sometimes
      // before the daemon's own checks of a new server had ended, a death while loading.
      model('exits-when-ready', ['--fake-exit-after', '1000', '--fake-exit-with', '0'], '    pinned: true\n'),
      model('healthy', []),
    ].join('\n'),
  );
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function untilState(id: string, state: string): Promise<void> {
  for (;;) {
    if ((await daemon.model(id)).status.state === state) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** The error a request for `model` is answered with (it must be one). */
async function refusal(model: string): Promise<APIError> {
  const error = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof APIError)) throw new Error(`expected an API error for ${model}, got ${String(error)}`);
  return error;
}

describe('a model whose engine dies at every first request', () => {
  it('is quarantined after five deaths with the engine’s own reason, and then refused at once with it', async () => {
    const answers: APIError[] = [];
    // Each request meets a ready engine that dies on it, and is sent once more to a fresh one.
    while ((await daemon.model('dies-at-first-request')).status.state !== 'quarantined') {
      answers.push(await refusal('dies-at-first-request'));
      expect(answers.length, 'still not quarantined after 5 requests (10 deaths)').toBeLessThanOrEqual(5);
    }
    const view = await daemon.model('dies-at-first-request');
    expect(view.status.recovery).toMatchObject({ kind: 'crash', attempts: 5, nextAction: 'quarantine' });
    expect(view.status.recovery.lastError).toMatch(/CUDA error: an illegal memory access was encountered/);
    // Before the last: 502s that say what happened, neither promising a restart that never comes.
    for (const answer of answers.slice(0, -1)) {
      expect(answer.status).toBe(502);
      expect(answer.message).toMatch(/did not answer .*, and neither did a fresh one it was sent to again\. Each death before an answer counts/);
    }

    const started = Date.now();
    const refused = await refusal('dies-at-first-request');
    expect(refused.status).toBe(503);
    expect(refused.message).toMatch(/quarantined/);
    expect(refused.message).toMatch(/CUDA error: an illegal memory access was encountered/);
    const launchesThen = countLaunches('dies-at-first-request');
    // Refused without a launch: nothing more was started for it.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(countLaunches('dies-at-first-request')).toBe(launchesThen);
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 180_000);
});

describe('a pinned model whose engine exits with code 0 right after it is ready', () => {
  it('is quarantined after five, saying it exited on its own after it was ready, and is not relaunched', async () => {
    await untilState('exits-when-ready', 'quarantined');
    const view = await daemon.model('exits-when-ready');
    expect(view.status.recovery).toMatchObject({ kind: 'crash', attempts: 5 });
    expect(view.status.recovery.lastError).toMatch(/exited with code 0 on its own after it was ready/);
    const launches = countLaunches('exits-when-ready');
    expect(launches).toBe(5);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(countLaunches('exits-when-ready')).toBe(launches);
    expect((await refusal('exits-when-ready')).status).toBe(503);
  }, 180_000);
});

describe('a healthy model beside them', () => {
  it('serves, and its answer is what proves it healthy', async () => {
    const answer = await client.chat.completions.create({ model: 'healthy', messages: [{ role: 'user', content: 'ping' }], max_tokens: 2 });
    expect(answer.choices[0]?.message.content).toBe('echo: ping');
    expect((await daemon.model('healthy')).status.recovery.attempts).toBe(0);
  });
});

/** How many times the daemon launched `modelId`, from its log. */
function countLaunches(modelId: string): number {
  return daemon.stderr().split('\n').filter((line) => line.includes(`launching ${modelId} at the`)).length;
}
