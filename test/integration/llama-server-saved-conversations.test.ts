// A conversation survives its llama-server's eviction: the real daemon with a real llama-server
// (LLMTRAY_LLAMA_SERVER; unset, the suite is reported skipped), the openai client, a generated
// tiny model. Once the server is idle a moment, the daemon asks llama-server to save its slots
// (`/slots/{id}?action=save`), so the eviction after it saves nothing; once the model is back, the returning prompt's saved prefix is
// restored (`?action=restore`) before the request goes on. The answer must be the one the server
// that never left gives, at temperature 0, with the prefix counted as cached.
import { existsSync } from 'node:fs';
import { open, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { writeLlamaGguf } from '../../core/catalog/demo/gguf-writer.js';
import type { ModelLogsResponse } from '../../core/contracts/commands.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const LLAMA_SERVER = process.env['LLMTRAY_LLAMA_SERVER'];

/** A first turn of some 400 tokens: over the 256 at which a conversation is worth a file. */
const FIRST: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: `You are a careful assistant. ${'Remember the list: alpha beta gamma delta epsilon zeta eta theta. '.repeat(20)}` },
  { role: 'user', content: 'Tell me about the list.' },
];

function secondTurn(answer: string): OpenAI.ChatCompletionMessageParam[] {
  return [...FIRST, { role: 'assistant', content: answer }, { role: 'user', content: 'And the third item?' }];
}

describe.skipIf(LLAMA_SERVER === undefined)('a conversation on a real llama-server, evicted and back (LLMTRAY_LLAMA_SERVER)', () => {
  let daemon: DaemonProcess | undefined;
  let workDir: string | undefined;
  let client: OpenAI;

  beforeAll(async () => {
    if (!existsSync(LLAMA_SERVER ?? '')) throw new Error(`LLMTRAY_LLAMA_SERVER names '${LLAMA_SERVER ?? ''}', which does not exist`);
    workDir = await makeDataDir();
    const model = join(workDir, 'tiny.gguf');
    await writeLlamaGguf(model, DEMO_SHAPES['demo-tiny']);
    const configPath = join(workDir, 'config.yaml');
    await writeFile(
      configPath,
      [
        'budget: { reserve: 0 }',
        `engines: { warmSpare: false, llamaServer: ${JSON.stringify(LLAMA_SERVER)} }`,
        'modelDirs: []',
        'models:',
        `  - { id: tiny, path: ${JSON.stringify(model)}, ctx: 2048, engine: llama-server }`,
        '',
      ].join('\n'),
    );
    daemon = await startDaemonProcess({ config: configPath, startTimeoutMs: 60_000 });
    client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0, timeout: 120_000 });
  });

  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
    if (workDir) await removeDataDir(workDir);
  });

  const running = (): DaemonProcess => {
    if (!daemon) throw new Error('the daemon did not start (see beforeAll)');
    return daemon;
  };

  async function turn(messages: OpenAI.ChatCompletionMessageParam[]) {
    const r = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 16, temperature: 0 });
    return { text: r.choices[0]?.message.content ?? '', usage: r.usage };
  }

  async function serverLog(): Promise<string> {
    const tail = (await (await running().api('/api/models/tiny/logs')).json()) as ModelLogsResponse;
    return tail.lines.join('\n');
  }

  /** The second turn, as the first test asked it: the conversation the folder keeps. */
  let second: OpenAI.ChatCompletionMessageParam[] | undefined;

  async function evicted(): Promise<void> {
    const unload = await running().api('/api/models/tiny/unload', { method: 'POST' });
    expect(unload.ok).toBe(true);
    await vi.waitFor(async () => expect((await running().model('tiny')).status.state).toBe('idle'), { timeout: 60_000, interval: 200 });
  }

  it('is saved while the server idles, so the eviction saves nothing, shown in /api/state, and restored: the same tokens at temperature 0 as one that never left, its prefix cached', async () => {
    const first = await turn(FIRST);
    expect(first.usage?.prompt_tokens ?? 0).toBeGreaterThan(256);
    second = secondTurn(first.text);
    await turn(second);
    // The same question again on the server that never left: its slot holds the conversation.
    const stayed = await turn(second);
    expect(stayed.usage?.prompt_tokens_details?.cached_tokens ?? 0).toBeGreaterThan(0);

    // Saved while the server is idle, before any eviction asks for it…
    await vi.waitFor(async () => expect(await serverLog()).toMatch(/conversations: slot \d+: saved \d+ tokens/), { timeout: 30_000, interval: 200 });
    // …so that the eviction has nothing left to save.
    await evicted();
    const log = await serverLog();
    expect(log).toMatch(/conversations: slot \d+: unchanged since it was saved, nothing to save before the eviction/);
    expect(log.match(/conversations: slot \d+: saved \d+ tokens/g)).toHaveLength(1);
    await vi.waitFor(async () => expect((await running().model('tiny')).savedConversations.count).toBe(1), { timeout: 45_000, interval: 200 });

    // Back: a fresh server, whose slots hold nothing of it but what is restored.
    const returned = await turn(second);
    expect(await serverLog()).toMatch(/conversations: slot \d+: restored \d+ of \d+ prompt tokens/);
    expect(returned.text).toBe(stayed.text);
    const cached = returned.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    // The first turn's prompt at least.
    expect(cached).toBeGreaterThan(first.usage?.prompt_tokens ?? 0);
    expect(cached).toBe(stayed.usage?.prompt_tokens_details?.cached_tokens);
  });

  it('never loads a saved state whose bytes changed on disk: the request is answered without it, the file discarded and said', async () => {
    if (second === undefined) throw new Error('no conversation (see the test before)');
    await evicted();
    const root = join(running().dataDir, 'conversations');
    const states: string[] = [];
    for (const dir of await readdir(root)) {
      for (const name of await readdir(join(root, dir)).catch(() => [] as string[])) if (name.endsWith('.state')) states.push(join(root, dir, name));
    }
    expect(states.length).toBeGreaterThan(0);
    // The same size, other bytes in the KV data: only the digest can tell.
    for (const path of states) {
      const file = await open(path, 'r+');
      await file.write(Buffer.from([0xde, 0xad, 0xbe, 0xef]), 0, 4, Math.floor((await stat(path)).size / 2));
      await file.close();
    }
    const answer = await turn(second);
    expect(answer.usage?.completion_tokens ?? 0).toBeGreaterThan(0);
    expect(answer.usage?.prompt_tokens_details?.cached_tokens ?? 0).toBe(0);
    expect(await serverLog()).toMatch(/conversations: discarded the saved conversation \S+ \(\d+ tokens\): corrupt: its SHA-256 is not the one saved/);
  });
});
