// Load progress in the stream with the real daemon (`llmtray serve --demo` as a child) and its
// real embedded engines: a cold demo-chat read raw (comment lines and when they came) and through
// the official `openai` client, against a warm run of the same greedy request; the snapshot the
// dashboard and the tray read while it waits (/api/state), against its comments; the corrupt
// demo-broken, whose load fails after the comments went out. The router's behaviour in every
// case, with a slow scripted load: router-load-progress.test.ts.
//
// One daemon for the file; the tests run in order and each leaves the state the next starts from.
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { isServing } from '../../core/contracts/model-status.js';
import type { ModelView } from '../../core/contracts/snapshot.js';
import { eventually, sleep } from '../support/daemon-process.js';
import { fileDaemon } from '../support/file-daemon.js';
import { postForLines, type SseAnswer } from '../support/sse-lines.js';

const live = fileDaemon();

/** Greedy, so a cold and a warm run must produce the same tokens. */
const GREEDY = { model: 'demo-chat', stream: true, temperature: 0, max_tokens: 12, messages: [{ role: 'user', content: 'Count to five.' }] };

/**
 * The contract is a comment at once and then at least every second; the daemon writes one every
 * 500 ms. The daemon, the engine it is loading and this test share two loaded cores, so a gap
 * may run late by a stall of the daemon; 1.5 s still fails a daemon that wrote one comment or
 * only wrote when the load ended.
 */
const MAX_GAP_MS = 1_500;
const COMMENT = /^: llmtray: (waiting to load demo-chat|waiting for memory for demo-chat|loading demo-chat(, \d+ %)?), \d+\.\d s$/;

interface Chunk {
  choices: { delta: { content?: string; reasoning_content?: string } }[];
}

const chunksOf = (answer: SseAnswer): Chunk[] =>
  answer.lines.filter((l) => l.text.startsWith('data: {')).map((l) => JSON.parse(l.text.slice('data: '.length)) as Chunk);
const contentOf = (chunks: readonly Chunk[]): string[] => chunks.map((c) => c.choices[0]?.delta.content ?? '');

async function unloaded(modelId: string): Promise<void> {
  expect((await live.daemon.api(`/api/models/${modelId}/unload`, { method: 'POST' })).status).toBe(200);
  await eventually(`${modelId} is unloaded`, async () => {
    const model = await live.daemon.model(modelId);
    return model.upstream === null && model.loading === null ? true : undefined;
  });
}

describe('a streamed request for a cold model', () => {
  it('gets progress comments before its first data line, at most a second apart, and then the content of a warm run', async () => {
    expect((await live.daemon.model('demo-chat')).upstream).toBeNull();
    const cold = await postForLines(`${live.daemon.endpoint}/chat/completions`, GREEDY);
    expect(cold.status).toBe(200);
    const firstData = cold.lines.findIndex((l) => l.text.startsWith('data:'));
    expect(firstData).toBeGreaterThan(0);
    const comments = cold.lines.slice(0, firstData);
    for (const comment of comments) expect(comment.text).toMatch(COMMENT);
    // Its first load: any percent is the engine's own (there is no last load to estimate from).
    expect(comments.some((c) => c.text.includes('~'))).toBe(false);
    const times = [cold.sentAt, ...comments.map((c) => c.at), cold.lines[firstData]!.at];
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(Math.max(...gaps), `gaps ${gaps.map((g) => Math.round(g)).join(', ')} ms`).toBeLessThan(MAX_GAP_MS);
    expect(cold.lines.slice(firstData).some((l) => l.text.startsWith(':'))).toBe(false);

    const warm = await postForLines(`${live.daemon.endpoint}/chat/completions`, GREEDY);
    expect(warm.lines[0]?.text.startsWith('data:')).toBe(true);
    const coldChunks = chunksOf(cold);
    // Same tokens, same number of deltas: nothing of the wait went into the answer.
    expect(contentOf(coldChunks)).toEqual(contentOf(chunksOf(warm)));
    expect(coldChunks.some((c) => c.choices[0]?.delta.reasoning_content !== undefined)).toBe(false);
    expect(cold.lines.at(-1)?.text).toBe('data: [DONE]');
  });

  it("is seen by the dashboard and the tray as the comments say it: /api/state read during the wait carries the engine's fraction", async () => {
    await unloaded('demo-chat');
    const reads: { sentAt: number; at: number; model: ModelView }[] = [];
    let waiting = true;
    const reading = (async () => {
      // A pause between reads, so the reads do not take the cores the load needs.
      for (; waiting; await sleep(50)) {
        const sentAt = performance.now();
        const model = await live.daemon.model('demo-chat');
        reads.push({ sentAt, at: performance.now(), model });
      }
    })();
    const cold = await postForLines(`${live.daemon.endpoint}/chat/completions`, GREEDY).finally(() => (waiting = false));
    await reading;
    const firstData = cold.lines.findIndex((l) => l.text.startsWith('data:'));
    expect(firstData).toBeGreaterThan(0);
    const dataAt = cold.lines[firstData]!.at;
    // The comments that give the engine's own percent (an estimate says '~').
    const enginePercents = cold.lines.slice(0, firstData).flatMap((l) => {
      const m = /^: llmtray: loading demo-chat, (\d+) %/.exec(l.text);
      return m === null ? [] : [{ at: l.at, percent: Number(m[1]) }];
    });
    // A read sent after such a comment arrived was answered after the comment was written, so the
    // fraction it carries is that one or a later one (a load's fraction only grows). Only that
    // bound: a read's answer and a comment on another socket may arrive in either order.
    let loadingReads = 0;
    for (const read of reads.filter((r) => r.at < dataAt)) {
      const before = enginePercents.filter((c) => c.at < read.sentAt).at(-1);
      if (before === undefined) continue;
      const { loading, status } = read.model;
      if (loading === null) {
        // The load ended while the answer's first token was on its way.
        expect(isServing(status.state), `state ${status.state} while the stream waited`).toBe(true);
        continue;
      }
      loadingReads += 1;
      expect(status.state).toBe('loading');
      expect(loading.fraction, 'the snapshot lacks the fraction the comments gave').not.toBeNull();
      expect(Math.floor(loading.fraction! * 100)).toBeGreaterThanOrEqual(before.percent);
    }
    // Three such comments are a second of load, with reads (one every 50 ms or so) well inside it.
    if (enginePercents.length >= 3) expect(loadingReads).toBeGreaterThan(0);
  });

  it('streams to the openai client exactly as a warm run does', async () => {
    await unloaded('demo-chat');
    const collect = async (): Promise<string[]> => {
      const deltas: string[] = [];
      for await (const chunk of await live.client.chat.completions.create({ ...GREEDY, stream: true } as OpenAI.ChatCompletionCreateParamsStreaming)) {
        deltas.push(chunk.choices[0]?.delta.content ?? '');
      }
      return deltas;
    };
    const cold = await collect();
    expect(cold.join('')).not.toBe('');
    expect(await collect()).toEqual(cold);
  });
});

describe('a request that does not stream', () => {
  it('gets its JSON answer alone, however long the load', async () => {
    await unloaded('demo-chat');
    const cold = await postForLines(`${live.daemon.endpoint}/chat/completions`, { ...GREEDY, stream: false });
    expect(cold.status).toBe(200);
    expect(cold.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(cold.body) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).not.toBe('');
  });
});

describe('a stream whose load fails after the comments went out', () => {
  it("ends with the quarantine and llama.cpp's reason as an error event, which the openai client raises", async () => {
    const raw = await postForLines(`${live.daemon.endpoint}/chat/completions`, { ...GREEDY, model: 'demo-broken' });
    expect(raw.status).toBe(200);
    expect(raw.lines[0]!.text).toMatch(/^: llmtray: (waiting to load|loading) demo-broken/);
    const data = raw.lines.filter((l) => l.text.startsWith('data:'));
    expect(data).toHaveLength(1);
    const { error } = JSON.parse(data[0]!.text.slice('data: '.length)) as { error: { code: string; message: string } };
    expect(error.code).toBe('model_quarantined');
    const reason = (await live.daemon.model('demo-broken')).status.recovery.lastError;
    expect(reason).toBeTruthy();
    expect(error.message).toContain(reason);

    // Lifted, it fails the same way again; this time through the client.
    expect((await live.daemon.api('/api/models/demo-broken/retry', { method: 'POST' })).status).toBe(200);
    const failure = await (async () => {
      try {
        for await (const _chunk of await live.client.chat.completions.create({ ...GREEDY, model: 'demo-broken' } as OpenAI.ChatCompletionCreateParamsStreaming)) {
          throw new Error('a chunk arrived from a model that cannot load');
        }
      } catch (caught) {
        return caught;
      }
      return null;
    })();
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).code).toBe('model_quarantined');
    expect((failure as APIError).message).toContain(reason);
  });
});
