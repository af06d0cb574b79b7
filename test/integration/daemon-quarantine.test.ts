// demo-broken through the real daemon: a corrupt GGUF (tensor data cut short) that can never
// load. Its first failure is `invalid`, so the recovery ladder quarantines it at once with
// llama.cpp's own reason instead of retrying it four times with backoff; from then on a request
// is refused at once with that reason, the CLI's `load` says so, and a person's retry lifts it.
//
// Its own daemon: a retried demo-broken is wanted again, which would disturb the swapping the
// other daemon files watch.
import OpenAI, { APIError } from 'openai';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/daemon-process.js';
import { fileDaemon } from '../support/file-daemon.js';

/** What llama.cpp says about demo-broken's truncated tensor data. */
const LLAMA_REASON = 'not within the file bounds';

const live = fileDaemon();

const ask = () => live.client.chat.completions.create({ model: 'demo-broken', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 });

describe('a model whose file can never load', () => {
  it('is quarantined at its first failure with llama.cpp\'s reason, and the first request gets 503', async () => {
    const error = await ask().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    const api = error as APIError;
    expect(api.status).toBe(503);
    expect(api.code).toBe('model_quarantined');
    expect(api.message).toContain(LLAMA_REASON);
    // OpenAI's SDKs retry a 503 unless told not to; retrying a quarantine cannot help.
    expect(api.headers?.get('x-should-retry')).toBe('false');

    const broken = await live.daemon.model('demo-broken');
    expect(broken.status.state).toBe('quarantined');
    expect(broken.status.recovery).toMatchObject({ kind: 'invalid', attempts: 1 });
    expect(broken.status.recovery.lastError).toContain(LLAMA_REASON);
    expect(broken.upstream).toBeNull();
    const metrics = await (await fetch(`${live.daemon.origin}/metrics`)).text();
    expect(metrics).toContain('llmtray_model_quarantined{model="demo-broken"} 1');
    // Were it retried as a crash (five launches, 15 s of backoff), the request's own 45 s
    // activation bound must fail this test first, with the product's words, not vitest's timeout.
  }, 90_000);

  it('refuses the next request at once with the reason: it neither waits nor asks for the model', async () => {
    const before = (await live.daemon.model('demo-broken')).lastUsed;
    const error = await ask().catch((e: unknown) => e);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).message).toContain(LLAMA_REASON);
    // DESIGN: "Quarantined: 503 at once". The router refuses a quarantine before it demands the
    // model or waits for it, so the refused request leaves no trace of a demand, and nothing launches.
    expect((await live.daemon.model('demo-broken')).lastUsed).toBe(before);
    expect(live.daemon.stderr().match(/launching demo-broken/g)).toHaveLength(1);
  });

  it('`llmtray load` exits 1 saying it is quarantined, with the reason', async () => {
    const result = await runCli(['load', 'demo-broken', '--data-dir', live.daemon.dataDir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('demo-broken is quarantined');
    expect(result.stderr).toContain(LLAMA_REASON);
  });

  it('a retry through the admin API lifts the quarantine', async () => {
    expect((await fetch(`${live.daemon.origin}/api/models/demo-broken/retry`, { method: 'POST' })).status).toBe(401);
    const res = await live.daemon.api('/api/models/demo-broken/retry', { method: 'POST' });
    expect(res.status).toBe(200);
    const result = (await res.json()) as { ok: boolean; message: string };
    expect(result.ok).toBe(true);
    expect(result.message).toContain('demo-broken');

    const broken = await live.daemon.model('demo-broken');
    expect(broken.status.state).not.toBe('quarantined');
    expect(broken.status.recovery.attempts).toBe(0);
    const models = (await live.client.models.list()).data as unknown as Array<{ id: string; state: string; reason: string | null }>;
    expect(models.find((m) => m.id === 'demo-broken')?.state).not.toBe('quarantined');
  });
});
