// Load progress in the stream, through the real router on loopback to a real HTTP engine
// (test/support/router-fake-engine.ts), with a scripted gateway whose cold model takes 3.5 s to
// load — long enough for several comments — or whose load ends in quarantine. Read with a raw
// SSE reader (comments and arrival times, which the SDKs hide) and with the official `openai`
// and `@anthropic-ai/sdk` clients (what an app sees). The same with the real daemon and its
// engines: daemon-load-progress.test.ts.
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { APIError } from 'openai';
import { describe, expect, it, vi } from 'vitest';
import type { RouterOptions } from '../../core/router/router.js';
import type { ScriptedModel } from '../support/scripted-gateway.js';
import { scriptedRouterHarness } from '../support/scripted-router.js';
import { postForLines, withoutComments, type SseAnswer } from '../support/sse-lines.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const LOAD_MS = 3_500;
/**
 * The contract is a comment at once and then at least every second. The router writes one every
 * 500 ms; the router and this reader share one process on two loaded cores, so a gap may run late
 * by a stall of that process. 1.5 s still fails a router that wrote one comment, or wrote only at
 * the end of the 3.5 s load.
 */
const MAX_GAP_MS = 1_500;

const routers = scriptedRouterHarness();

const LOADING_AT_40: Partial<ScriptedModel> = { loadMs: LOAD_MS, progress: { kind: 'loading', servedBy: 'cold', fraction: 0.4, estimated: false } };

async function startRouter(overrides: Partial<Record<string, Partial<ScriptedModel>>> = {}, options: Partial<RouterOptions> = {}) {
  const { router, gateway, origin } = await routers.start(overrides, options);
  return {
    url: router.url,
    gateway,
    openai: new OpenAI({ apiKey: 'client-own-key', baseURL: router.url, maxRetries: 0 }),
    anthropic: new Anthropic({ apiKey: 'client-own-key', baseURL: origin, maxRetries: 0 }),
  };
}

const chat = (model: string, stream: boolean, text = 'hello') => ({ model, stream, messages: [{ role: 'user', content: text }] });

/** Checks the comments of a cold stream: first, at once, at most MAX_GAP_MS apart, until the first event. */
function expectCommentsBeforeFirstEvent(answer: SseAnswer, pattern: RegExp): void {
  const firstEvent = answer.lines.findIndex((line) => !line.text.startsWith(':'));
  expect(firstEvent).toBeGreaterThan(0);
  const comments = answer.lines.slice(0, firstEvent);
  for (const comment of comments) expect(comment.text).toMatch(pattern);
  // 3.5 s of loading: a comment at once and then one at least every second makes four or more.
  expect(comments.length).toBeGreaterThanOrEqual(4);
  const times = [answer.sentAt, ...comments.map((c) => c.at), answer.lines[firstEvent]!.at];
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  expect(Math.max(...gaps), `gaps ${gaps.map((g) => Math.round(g)).join(', ')} ms`).toBeLessThan(MAX_GAP_MS);
  expect(answer.lines.slice(firstEvent).some((line) => line.text.startsWith(':'))).toBe(false);
}

describe('a streamed request that waits for its model', () => {
  it('gets progress comments at once and then at least every second until its first event, then exactly the warm answer', async () => {
    const { url } = await startRouter({ cold: LOADING_AT_40 });
    const warm = await postForLines(`${url}/chat/completions`, chat('small', true));
    const cold = await postForLines(`${url}/chat/completions`, chat('cold', true));
    expect(cold.status).toBe(200);
    expect(cold.headers['content-type']).toMatch(/^text\/event-stream/);
    expectCommentsBeforeFirstEvent(cold, /^: llmtray: loading cold, 40 %, \d+\.\d s$/);
    // The waited time counts up.
    const waited = cold.lines.filter((l) => l.text.startsWith(':')).map((l) => Number(/, (\d+\.\d) s$/.exec(l.text)![1]));
    expect(waited).toEqual([...waited].sort((a, b) => a - b));
    expect(waited[0]).toBe(0);
    // Nothing else was added: past the comments, the body is the warm one byte for byte.
    expect(withoutComments(cold.body)).toBe(warm.body);
  });

  it("is a stream like a warm one to the openai client: the same chunks, no extra deltas", async () => {
    const { openai } = await startRouter({ cold: LOADING_AT_40 });
    const collect = async (model: string) => {
      const chunks: unknown[] = [];
      for await (const chunk of await openai.chat.completions.create({ model, stream: true, messages: [{ role: 'user', content: 'hello' }] })) chunks.push(chunk);
      return chunks;
    };
    const warm = await collect('small');
    expect(await collect('cold')).toEqual(warm);
  });

  it('says what the wait is for while it waits for memory, and for a completion', async () => {
    const { url, gateway } = await startRouter({ blocked: { progress: { kind: 'memory', servedBy: 'blocked' } } });
    const answering = postForLines(`${url}/completions`, { model: 'blocked', prompt: 'once upon', stream: true });
    // Counted from the wait's start, not the request's: a request that reached the router late
    // on a busy machine got one comment before a timer started with it made the model ready.
    // The router's 500 ms comment timer is due before this one, so it writes its second first.
    await vi.waitFor(() => expect(gateway.waiting.get('blocked')).toBe(1), UNTIL_SEEN);
    setTimeout(() => gateway.setState('blocked', 'ready'), 1_200);
    const answer = await answering;
    const comments = answer.lines.filter((l) => l.text.startsWith(':'));
    expect(comments.length).toBeGreaterThanOrEqual(2);
    for (const comment of comments) expect(comment.text).toMatch(/^: llmtray: waiting for memory for blocked, \d+\.\d s$/);
    expect(answer.lines.at(-1)?.text).toBe('data: [DONE]');
  });

  it('reaches an Anthropic client as the same events as a warm stream, after the comments', async () => {
    const request = { model: 'cold', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hello' }], stream: true as const };
    // A router each: the first request loads the cold model for good.
    const { url } = await startRouter({ cold: LOADING_AT_40 });
    const raw = await postForLines(`${url.replace(/\/v1$/, '')}/v1/messages`, request);
    expectCommentsBeforeFirstEvent(raw, /^: llmtray: loading cold, 40 %, \d+\.\d s$/);
    expect(raw.lines.find((l) => !l.text.startsWith(':'))?.text).toBe('event: message_start');

    const { anthropic } = await startRouter({ cold: LOADING_AT_40 });
    const events: unknown[] = [];
    for await (const event of await anthropic.messages.create(request)) events.push(event);
    const warm: unknown[] = [];
    for await (const event of await anthropic.messages.create({ ...request, model: 'small' })) warm.push(event);
    expect(events).toEqual(warm);
  });
});

describe('a request that does not stream', () => {
  it('waits without a byte and gets the warm answer, unchanged', async () => {
    const { url } = await startRouter({ cold: LOADING_AT_40 });
    const warm = await postForLines(`${url}/chat/completions`, chat('small', false));
    const cold = await postForLines(`${url}/chat/completions`, chat('cold', false));
    expect(cold.status).toBe(200);
    expect(cold.headers['content-type']).toBe('application/json');
    expect(cold.body).toBe(warm.body);
    // Nothing was written while it waited: the body is the JSON answer alone.
    expect(cold.lines).toHaveLength(1);
  });
});

describe('a stream that fails after its comments went out', () => {
  const REASON = 'llama_model_load: error loading model: model is corrupted or incomplete';

  it('ends with an OpenAI error event saying the model was quarantined, which the openai client raises', async () => {
    const failing: Partial<ScriptedModel> = { loadMs: 1_200, loadFails: REASON };
    const { url } = await startRouter({ cold: failing });
    const raw = await postForLines(`${url}/chat/completions`, chat('cold', true));
    // The 200 went out with the first comment; the failure can only be an event now.
    expect(raw.status).toBe(200);
    expect(raw.lines[0]!.text).toMatch(/^: llmtray: loading cold, \d+\.\d s$/);
    const last = raw.lines.at(-1)!.text;
    expect(last.startsWith('data: ')).toBe(true);
    const { error } = JSON.parse(last.slice('data: '.length)) as { error: { code: string; type: string; message: string } };
    expect(error).toMatchObject({ code: 'model_quarantined', type: 'unavailable_error' });
    expect(error.message).toContain(REASON);
    expect(raw.lines.filter((l) => l.text.startsWith('data: '))).toHaveLength(1);

    // Again through the client, on a router whose model has not failed yet.
    const { openai } = await startRouter({ cold: failing });
    const stream = await openai.chat.completions.create({ model: 'cold', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    const failure = await (async () => {
      try {
        for await (const _chunk of stream) {
          // No chunk comes before the error.
          throw new Error('a chunk arrived before the error');
        }
      } catch (caught) {
        return caught;
      }
      return null;
    })();
    expect(failure).toBeInstanceOf(APIError);
    expect((failure as APIError).message).toContain(REASON);
    expect((failure as APIError).code).toBe('model_quarantined');
  });

  it('ends with an Anthropic error event, which the Anthropic client raises', async () => {
    const { url } = await startRouter({ cold: { loadMs: 1_200, loadFails: REASON } });
    const request = { model: 'cold', max_tokens: 16, messages: [{ role: 'user' as const, content: 'hello' }], stream: true as const };
    const raw = await postForLines(`${url.replace(/\/v1$/, '')}/v1/messages`, request);
    expect(raw.status).toBe(200);
    const events = raw.lines.filter((l) => !l.text.startsWith(':')).map((l) => l.text);
    expect(events[0]).toBe('event: error');
    expect(JSON.parse(events[1]!.slice('data: '.length))).toMatchObject({ type: 'error', error: { type: 'overloaded_error', details: { error_code: 'model_quarantined' } } });
    expect(events).toHaveLength(2);

    const { anthropic } = await startRouter({ cold: { loadMs: 1_200, loadFails: REASON } });
    await expect(
      (async () => {
        for await (const _event of await anthropic.messages.create(request)) throw new Error('an event arrived before the error');
      })(),
    ).rejects.toThrow(REASON);
  });

  it("ends with the engine's own refusal when the loaded engine refuses the request", async () => {
    const { url } = await startRouter({ cold: { loadMs: 1_200 } });
    const raw = await postForLines(`${url}/chat/completions`, chat('cold', true, 'mode:engine-400'));
    expect(raw.status).toBe(200);
    const data = raw.lines.filter((l) => l.text.startsWith('data: '));
    expect(data).toHaveLength(1);
    expect(JSON.parse(data[0]!.text.slice('data: '.length))).toEqual({
      error: { message: 'the request exceeds the available context size', type: 'invalid_request_error', param: null, code: 'context_length_exceeded' },
    });
  });

  it('ends with the 503 it would have had, as an event, when the wait runs out', async () => {
    const { url } = await startRouter({}, { activationWaitMs: 1_500 });
    const raw = await postForLines(`${url}/chat/completions`, chat('never', true));
    expect(raw.status).toBe(200);
    expect(raw.lines.filter((l) => l.text.startsWith(':')).length).toBeGreaterThanOrEqual(2);
    const { error } = JSON.parse(raw.lines.at(-1)!.text.slice('data: '.length)) as { error: { code: string; message: string } };
    expect(error.code).toBe('model_loading');
    expect(error.message).toMatch(/^Model 'never' is not ready after 1\.5 s/);
  });

  it('stops writing and stops waiting when the client leaves', async () => {
    const { url, gateway } = await startRouter();
    const abort = new AbortController();
    const response = await fetch(`${url}/chat/completions`, { method: 'POST', body: JSON.stringify(chat('never', true)), headers: { 'content-type': 'application/json' }, signal: abort.signal });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toMatch(/^: llmtray: /);
    abort.abort();
    await vi.waitFor(() => expect(gateway.waiting.get('never')).toBe(0), UNTIL_SEEN);
  });
});
