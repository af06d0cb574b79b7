// Each request's record as the router writes it (core/router/http/request-trace.ts), for the
// endings the demo daemon cannot be made to show at will: a fallback's answer, a wait for room
// that runs out, an engine's refusal in its own words, an engine found hung, a body over the
// limit. The `openai` SDK → the router, recording → the HTTP fake engine, on a scripted gateway
// (test/support/openai-router.ts); the records are caught as the daemon's recorder gets them.
import { describe, expect, it, vi } from 'vitest';
import type { RequestRecord } from '../../core/contracts/requests/request-record.js';
import type { RequestRecorder } from '../../core/router/http/request-trace.js';
import { caught, openAIRouters, rawRequest } from '../support/openai-router.js';
import { UNTIL_SEEN } from '../support/wait-bounds.js';

const { startRouter } = openAIRouters();

/** A recorder that keeps every record, and a router that writes to it. */
async function recordingRouter(options: { activationWaitMs?: number; bodyLimitBytes?: number; keepBodiesBytes?: number } = {}) {
  const records: RequestRecord[] = [];
  const requests: RequestRecorder = { record: (record) => records.push(record), keepBodiesBytes: () => options.keepBodiesBytes ?? 0 };
  const started = await startRouter({ requests, ...(options.activationWaitMs === undefined ? {} : { activationWaitMs: options.activationWaitMs }), ...(options.bodyLimitBytes === undefined ? {} : { bodyLimitBytes: options.bodyLimitBytes }) });
  return { ...started, records };
}

describe('the record of each request', () => {
  it("names the model asked for and the fallback that answered, with the engine's usage", async () => {
    const { client, records } = await recordingRouter();
    await client.chat.completions.create({ model: 'big', messages: [{ role: 'user', content: 'hello' }] });
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]).toMatchObject({ route: '/v1/chat/completions', model: 'big', servedBy: 'small', client: 'local', status: 200, waited: null, promptTokens: 3, completionTokens: 2, error: null });
    expect(records[0]?.id).toMatch(/^r\d+$/);
  });

  it('says a cold model was waited for to load, and for how long', async () => {
    const { client, records } = await recordingRouter();
    await client.chat.completions.create({ model: 'cold', messages: [{ role: 'user', content: 'hello' }] });
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]).toMatchObject({ model: 'cold', servedBy: 'cold', waited: 'load', status: 200 });
    // The scripted load takes 20 ms.
    expect(records[0]?.waitMs).toBeGreaterThanOrEqual(15);
  });

  it('says a request waited for room until its bound, and the 503 its client was told', async () => {
    const { client, records } = await recordingRouter({ activationWaitMs: 300 });
    const refusal = await caught(client.chat.completions.create({ model: 'blocked', messages: [{ role: 'user', content: 'hello' }] }));
    expect(refusal.status).toBe(503);
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]).toMatchObject({ model: 'blocked', servedBy: null, waited: 'room', status: 503, firstTokenMs: null });
    expect(records[0]?.waitMs).toBeGreaterThanOrEqual(250);
    expect(records[0]?.error).toBe(refusal.message.replace(/^503 /, ''));
  });

  it("keeps an engine's refusal in its own words", async () => {
    const { client, records } = await recordingRouter();
    const refusal = await caught(client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:engine-400' }] }));
    expect(refusal.status).toBe(400);
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]).toMatchObject({ status: 400, servedBy: 'small' });
    expect(records[0]?.error).toContain('exceeds the available context size');
  });

  it('says a stream ended by a hung engine ended with a 504, though its status line said 200', async () => {
    const { client, gateway, records } = await recordingRouter();
    const stream = await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'mode:hang' }], stream: true });
    const reading = (async () => {
      for await (const _chunk of stream);
    })().catch((error: unknown) => error);
    await vi.waitFor(() => expect(gateway.inFlight('small')).toBe(1), UNTIL_SEEN);
    gateway.loseEngine('small', 'it made no progress for 60 s');
    await reading;
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]).toMatchObject({ status: 504, stream: true });
    expect(records[0]?.error).toContain('it made no progress for 60 s');
    expect(records[0]?.firstTokenMs).toBeGreaterThanOrEqual(0);
  });

  it('records a body over the limit, before any model is known', async () => {
    const { port, records } = await recordingRouter({ bodyLimitBytes: 64 });
    const answer = await rawRequest(port, { path: '/v1/chat/completions', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'small', messages: [{ role: 'user', content: 'x'.repeat(200) }] }) });
    expect(answer.status).toBe(413);
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]).toMatchObject({ status: 413, model: null, servedBy: null });
  });

  it('keeps the bodies only where asked, the answer as it came from the engine', async () => {
    const { client, records } = await recordingRouter({ keepBodiesBytes: 4096 });
    await client.chat.completions.create({ model: 'small', messages: [{ role: 'user', content: 'keep me' }] });
    await vi.waitFor(() => expect(records).toHaveLength(1), UNTIL_SEEN);
    expect(records[0]?.bodies).toMatchObject({ truncated: false });
    expect(JSON.parse(records[0]?.bodies?.request ?? '')).toMatchObject({ model: 'small', messages: [{ role: 'user', content: 'keep me' }] });
    expect(JSON.parse(records[0]?.bodies?.answer ?? '')).toMatchObject({ usage: { prompt_tokens: 3, completion_tokens: 2 } });
  });
});
