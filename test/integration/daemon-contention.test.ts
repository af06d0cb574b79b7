// The everyday use of llmtray: two local apps using two models that do not fit the budget
// together, so every switch is a swap. Through the real demo daemon with the official openai
// client. Before, 84 of 200 such requests were refused with 503 "cannot be loaded now …
// held by active demo-tiny": the router took memory a request would free within milliseconds
// for memory that would never come. Room that will be made is waited for.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess;
let client: OpenAI;

beforeAll(async () => {
  daemon = await startDaemonProcess();
  client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
});

describe('two clients alternating two models that cannot share the budget', () => {
  it('get every answer: no request is refused while the other model is busy', async () => {
    const perClient = 12;
    const outcomes: { model: string; ok: boolean; error?: string }[] = [];
    const runClient = async (first: number): Promise<void> => {
      for (let i = 0; i < perClient; i++) {
        const model = (first + i) % 2 === 0 ? 'demo-chat' : 'demo-tiny';
        try {
          const reply = await client.chat.completions.create({ model, messages: [{ role: 'user', content: `request ${i}` }], max_tokens: 4 });
          outcomes.push({ model, ok: reply.model === model });
        } catch (error) {
          outcomes.push({ model, ok: false, error: error instanceof Error ? error.message : String(error) });
        }
      }
    };
    await Promise.all([runClient(0), runClient(1)]);

    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    expect(outcomes).toHaveLength(2 * perClient);
    // The premise: the two really do not fit together, so the run was made of swaps.
    const launches = daemon.stderr().split('\n').filter((line) => / launching demo-(chat|tiny) /.test(line)).length;
    expect(launches).toBeGreaterThan(2);
  }, 240_000);
});
