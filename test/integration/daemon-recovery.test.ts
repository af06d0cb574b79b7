// Recovery through the real daemon, as a local app sees it with the official openai client:
// an engine frozen with SIGSTOP mid-answer (streamed and not), a model that crashes on every
// launch next to one in use, and a quarantined model that must hold no place in the plan.
//
// Its own config: chat (demo-chat) with a 2 s hang limit, so a hang is judged within the test;
// crasher (demo-chat's file with a flag the engine refuses, so every launch crashes), of a
// higher priority than chat, so that only the rule for failing models keeps it from chat's room;
// broken (the corrupt demo model). The budget holds chat or crasher, not both.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI, { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catalog } from '../../core/catalog/catalog.js';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import { footprintAt } from '../../core/policy/levels.js';
import { RUNTIME_PRIOR_BYTES } from '../../core/engine/runtime-overhead.js';
import { isRunning } from '../../core/engine/supervisor/process-tree.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let workDir: string;
let daemon: DaemonProcess;
let client: OpenAI;

function configText(models: DemoModels, limitBytes: number | null): string {
  return `modelDirs: []
budget:
  reserve: 0
${limitBytes === null ? '' : `  limit: ${limitBytes}\n`}models:
  - id: chat
    path: ${JSON.stringify(models.chat.path)}
    ctx: 4096
    hangLimit: 2s
    idleTtl: 10m
  - id: crasher
    path: ${JSON.stringify(models.chat.path)}
    ctx: 4096
    priority: 1
    args: ["--no-such-flag"]
  - id: broken
    path: ${JSON.stringify(models.broken.path)}
    ctx: 2048
`;
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-recovery-'));
  const models = await generateDemoModels(workDir);
  const configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, configText(models, null));
  // The budget from the catalog's own estimate, as the demo does: chat, or crasher, never both.
  // On this machine (no GPU) each model is priced with its engine's own cost, the embedded engine's.
  const catalog = await Catalog.open({ configPath, dataDir: workDir });
  const estimate = catalog.resolve('chat')?.estimate;
  if (estimate == null) throw new Error('no estimate for chat');
  const chatBytes = footprintAt('full', estimate).deviceBytes + RUNTIME_PRIOR_BYTES.host.embedded;
  await writeFile(configPath, configText(models, Math.floor(chatBytes * 1.5)));
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/** chat's engine pid, once it serves. */
async function chatPid(): Promise<number> {
  for (;;) {
    const pid = (await daemon.model('chat')).upstream?.pid;
    if (pid !== undefined) return pid;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('an engine that stops making progress (SIGSTOP)', () => {
  it('ends the client stream with an engine_hung error, kills the stopped process, counts a hang, and serves the next request on a fresh engine', async () => {
    await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 2 });
    const stopped = await chatPid();
    const stream = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'Write a long story.' }], max_tokens: 2000, stream: true });
    const failure = await (async () => {
      try {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) process.kill(stopped, 'SIGSTOP');
        return null;
      } catch (error) {
        return error;
      }
    })();
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toMatch(/made no progress and was stopped/);
    expect((failure as APIError).message).toMatch(/its health probe did not answer/);

    const next = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'again' }], max_tokens: 4 });
    expect(next.model).toBe('chat');
    expect(await chatPid()).not.toBe(stopped);
    expect(await isRunning(stopped)).toBe(false);
    expect(daemon.stderr()).toMatch(/chat's server ended on its own \(hang\): it made no progress for \d+(\.\d)? s with 1 request in flight/);
  }, 90_000);

  it('answers a request that is not streamed with 504 engine_hung in OpenAI\'s error shape', async () => {
    await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 2 });
    const stopped = await chatPid();
    const answer = client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'Write a long story.' }], max_tokens: 2000 }).catch((e: unknown) => e);
    // Once the request is claimed on the engine (active), freeze it.
    for (;;) {
      if ((await daemon.model('chat')).inFlight > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    process.kill(stopped, 'SIGSTOP');
    const error = await answer;
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ status: 504, code: 'engine_hung', type: 'engine_error' });
    // The client hears first; the kill follows (SIGTERM, then SIGKILL after the grace).
    while (await isRunning(stopped)) await new Promise((resolve) => setTimeout(resolve, 50));
  }, 90_000);
});

describe('a model that fails on every launch', () => {
  it('never evicts a model in use for its retries', async () => {
    await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'warm up' }], max_tokens: 2 });
    const evictionsOfChat = (): number => daemon.stderr().split('\n').filter((line) => line.includes('evicting chat')).length;
    // crasher is asked for once: of a higher priority and not failed yet, so it wins the room
    // once and chat goes; then it crashes, and from there on it is only retried.
    const gaveUp = new AbortController();
    const crasher = client.chat.completions
      .create({ model: 'crasher', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }, { signal: gaveUp.signal })
      .catch((e: unknown) => e);
    for (;;) {
      const status = (await daemon.model('crasher')).status;
      if (status.recovery.attempts >= 1) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const evictedBefore = evictionsOfChat();
    // chat is used while crasher waits to be retried (its backoff is 1 s): chat comes back and stays.
    for (let i = 0; i < 6; i++) {
      const reply = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: `turn ${i}` }], max_tokens: 4 });
      expect(reply.model).toBe('chat');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    expect(evictionsOfChat()).toBe(evictedBefore);
    const crasherView = await daemon.model('crasher');
    expect(crasherView.status.recovery.kind).toBe('crash');
    expect(crasherView.status.recovery.lastError).toMatch(/invalid argument: --no-such-flag/);
    expect(crasherView.status.unschedulableReason).toMatch(/held by chat/);
    gaveUp.abort();
    await crasher;
  }, 120_000);
});

describe('a quarantined model', () => {
  it('holds no place in the plan: it is never in plan.launch, no other reason names it, and a wanted model comes at once', async () => {
    const refused = await client.chat.completions.create({ model: 'broken', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 503, code: 'model_quarantined' });
    const reply = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(reply.model).toBe('chat');
    const state = await daemon.state();
    expect(state.plan?.launch).not.toContain('broken');
    expect(state.plan?.unschedulable.map((u) => u.modelId)).not.toContain('broken');
    for (const model of state.models) expect(model.status.unschedulableReason ?? '').not.toContain('broken');
    expect(state.models.find((m) => m.id === 'broken')?.status.state).toBe('quarantined');
  }, 90_000);
});
