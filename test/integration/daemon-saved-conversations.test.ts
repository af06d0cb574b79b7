// A conversation kept across an eviction is said: the real daemon (`serve --demo`) and its
// embedded engine, a conversation long enough to be saved, then demo-tiny unloaded as the tray
// does it. /api/state must then show what was saved for demo-tiny, a model that no engine runs
// any more, and its total on disk beside the memory budget.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ModelView } from '../../core/contracts/snapshot.js';
import { removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

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

describe('saved conversations in /api/state', () => {
  it('shows none before any conversation, and the one kept once its model is evicted', async () => {
    const before = await daemon.state();
    expect(before.models.every((m) => m.savedConversations.count === 0)).toBe(true);
    expect(before.budget.savedConversationsBytes).toBe(0);

    // Over the engine's 256 tokens at which a conversation is worth a file, within demo-tiny's 2048.
    const system = `You are a careful assistant. ${'Remember the list: alpha beta gamma delta epsilon zeta eta theta. '.repeat(20)}`;
    const answer = await client.chat.completions.create({
      model: 'demo-tiny',
      messages: [{ role: 'system', content: system }, { role: 'user', content: 'Tell me about the list.' }],
      max_tokens: 8,
      temperature: 0,
    });
    expect(answer.usage?.prompt_tokens ?? 0).toBeGreaterThan(256);

    const unload = await daemon.api('/api/models/demo-tiny/unload', { method: 'POST' });
    expect(unload.ok).toBe(true);
    await vi.waitFor(async () => expect((await daemon.model('demo-tiny')).status.state).toBe('idle'), { timeout: 60_000, interval: 200 });

    // Read when the server stopped: no wait for the slow timer.
    await vi.waitFor(async () => expect(saved(await daemon.model('demo-tiny')).count).toBe(1), { timeout: 10_000, interval: 200 });
    const after = await daemon.state();
    const tiny = after.models.find((m) => m.id === 'demo-tiny');
    expect(tiny?.upstream).toBeNull();
    // The KV cache of some 300 tokens: more than the head's token list alone.
    expect(tiny?.savedConversations.bytes).toBeGreaterThan(300 * 4);
    expect(after.budget.savedConversationsBytes).toBe(tiny?.savedConversations.bytes);
    expect(after.models.filter((m) => m.id !== 'demo-tiny').every((m) => m.savedConversations.count === 0)).toBe(true);
  });
});
