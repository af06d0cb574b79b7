// A conversation kept across an eviction is said: the real daemon (`serve --demo`) and its
// embedded engine, a conversation long enough to be saved, then demo-tiny unloaded as the tray
// does it. /api/state must then show what was saved for demo-tiny, a model that no engine runs
// any more, and its total on disk beside the memory budget.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import type { ModelView } from '../../core/contracts/snapshot.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess;
let client: OpenAI;

beforeAll(async () => {
  daemon = await startDaemonProcess();
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0, timeout: 120_000 });
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
});

const saved = (model: ModelView): ModelView['savedConversations'] => model.savedConversations;

// Over the engine's 256 tokens at which a conversation is worth a file, within demo-tiny's 2048.
const SYSTEM = `You are a careful assistant. ${'Remember the list: alpha beta gamma delta epsilon zeta eta theta. '.repeat(20)}`;

/** One conversation of over 256 tokens with `model`, then the model unloaded as the tray does it, and idle again; resolves with its prompt's tokens. */
async function converseThenUnload(on: DaemonProcess, model: string): Promise<number> {
  const answer = await new OpenAI({ baseURL: on.endpoint, apiKey: 'any-key-works', maxRetries: 0, timeout: 120_000 }).chat.completions.create({
    model,
    messages: [{ role: 'system', content: SYSTEM }, { role: 'user', content: 'Tell me about the list.' }],
    max_tokens: 8,
    temperature: 0,
  });
  expect(answer.usage?.prompt_tokens ?? 0).toBeGreaterThan(256);
  const unload = await on.api(`/api/models/${model}/unload`, { method: 'POST' });
  expect(unload.ok).toBe(true);
  await vi.waitFor(async () => expect((await on.model(model)).status.state).toBe('idle'), { timeout: 60_000, interval: 200 });
  return answer.usage?.prompt_tokens ?? 0;
}

describe('saved conversations in /api/state', () => {
  it('shows none before any conversation, and the one kept once its model is evicted', async () => {
    const before = await daemon.state();
    expect(before.models.every((m) => m.savedConversations.count === 0)).toBe(true);
    expect(before.budget.savedConversationsBytes).toBe(0);

    await converseThenUnload(daemon, 'demo-tiny');

    // Read when the server stopped: no wait for the slow timer.
    await vi.waitFor(async () => expect(saved(await daemon.model('demo-tiny')).count).toBe(1), { timeout: 45_000, interval: 200 });
    const after = await daemon.state();
    const tiny = after.models.find((m) => m.id === 'demo-tiny');
    expect(tiny?.upstream).toBeNull();
    // The KV cache of its prompt: more than the head's token list alone.
    expect(tiny?.savedConversations.bytes).toBeGreaterThan(300 * 4);
    expect(after.budget.savedConversationsBytes).toBe(tiny?.savedConversations.bytes);
    expect(after.models.filter((m) => m.id !== 'demo-tiny').every((m) => m.savedConversations.count === 0)).toBe(true);
  });

  it("keeps none shorter than the config's savedConversationsMinTokens, which the engine is given", async () => {
    const dir = await makeDataDir();
    const models = await generateDemoModels(dir);
    const config = join(dir, 'config.yaml');
    await writeFile(
      config,
      `modelDirs: []\nengines:\n  warmSpare: false\n  savedConversationsMinTokens: 2000\nmodels:\n  - { id: tiny, path: ${JSON.stringify(models.tiny.path)}, ctx: 2048 }\n`,
    );
    const strict = await startDaemonProcess({ config });
    try {
      // Within the context of 2048, so shorter than the floor.
      expect(await converseThenUnload(strict, 'tiny')).toBeLessThan(2000);
      // The engine's launch line says what it was given; the same conversation the case above keeps is not kept.
      expect(await (await strict.api('/api/models/tiny/logs')).text()).toContain('--slot-save-min-tokens 2000');
      expect(saved(await strict.model('tiny')).count).toBe(0);
      expect((await strict.state()).budget.savedConversationsBytes).toBe(0);
    } finally {
      await strict.stop();
      await removeDataDir(strict.dataDir);
      await removeDataDir(dir);
    }
  });
});
