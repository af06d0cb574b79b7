// The everyday use of llmtray: two local apps using two models that do not fit the budget
// together, so every switch is a swap. Through the real demo daemon with the official openai
// client. Before, 84 of 200 such requests were refused with 503 "cannot be loaded now …
// held by active demo-tiny": the router took memory a request would free within milliseconds
// for memory that would never come. Room that will be made is waited for.
import { describe, expect, it } from 'vitest';
import { fileDaemon } from '../support/file-daemon.js';

const live = fileDaemon();

describe('two clients alternating two models that cannot share the budget', () => {
  it('get every answer: no request is refused while the other model is busy', async () => {
    const perClient = 12;
    const outcomes: { model: string; ok: boolean; error?: string }[] = [];
    const runClient = async (first: number): Promise<void> => {
      for (let i = 0; i < perClient; i++) {
        const model = (first + i) % 2 === 0 ? 'demo-chat' : 'demo-tiny';
        try {
          const reply = await live.client.chat.completions.create({ model, messages: [{ role: 'user', content: `request ${i}` }], max_tokens: 4 });
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
    expect(launchesIn(live.daemon.stderr())).toBeGreaterThan(2);
  }, 240_000);
});

describe('two clients, each on its own model, the two not fitting together', () => {
  it('are served in turns, not a swap per request: a client that sends its next request at once keeps its model for its turn', async () => {
    const perClient = 12;
    const before = live.daemon.stderr().length;
    const failures: string[] = [];
    const runClient = async (model: string): Promise<void> => {
      for (let i = 0; i < perClient; i++) {
        try {
          const reply = await live.client.chat.completions.create({ model, messages: [{ role: 'user', content: `request ${i}` }], max_tokens: 4 });
          if (reply.model !== model) failures.push(`${model}: answered by ${reply.model}`);
        } catch (error) {
          failures.push(`${model}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
    };
    await Promise.all([runClient('demo-chat'), runClient('demo-tiny')]);

    expect(failures).toEqual([]);
    // Each client's model turns idle between its requests while the other one waits: without the
    // turn's hold it was swapped out at nearly every chance the controller's pass got (7, 4 and 8
    // launches for these 24 requests in three runs here); with it, a client keeps its model for
    // its turn (2 s), and these 24 took 2 launches in each of three runs. At most one launch per
    // two requests a client sends leaves room for a slow machine, whose turns hold fewer requests.
    const launches = launchesIn(live.daemon.stderr().slice(before));
    expect(launches).toBeGreaterThan(0);
    expect(launches).toBeLessThanOrEqual(perClient / 2);
  }, 240_000);
});

function launchesIn(stderr: string): number {
  return stderr.split('\n').filter((line) => / launching demo-(chat|tiny) /.test(line)).length;
}
