// Every request seen: the real daemon (its embedded engine, the generated demo models) asked
// through the official clients — `openai` on chat completions and the Responses API,
// `@anthropic-ai/sdk` on the Messages API — each with a client key, and what it recorded read
// back through `GET /api/activity` (its filters), the admin event stream, /metrics and
// `llmtray activity` run as a person runs it.
//
// One daemon for the file, so the tests run in order: the first request loads demo-tiny (a
// wait for the load), the rest find it warm.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { NotFoundError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readEventStream } from '../../core/admin-client/event-stream-reader.js';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import type { AdminEvent } from '../../core/contracts/admin-events.js';
import type { ActivityAnswer, RequestRecord } from '../../core/contracts/requests/request-record.js';
import { demoConfigText } from '../../core/daemon/demo-config.js';
import { CLI_ENTRY, eventually, makeDataDir, removeDataDir, runCli, startDaemonProcess, type DaemonProcess, type DaemonExit } from '../support/daemon-process.js';

const EDITOR_KEY = 'activity-editor-key-0123456789';
/** activity.keepBodies: small enough that one test's prompt goes over it. */
const KEEP_BODIES = 2048;

let workDir: string;
let daemon: DaemonProcess;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-activity-'));
  const models = await generateDemoModels(workDir);
  const config = join(workDir, 'config.yaml');
  await writeFile(
    config,
    demoConfigText(models, { warmSpare: false, reserveBytes: 0, fallbackAndAliases: true, broken: false, embed: false }) +
      ['listen:', '  clientKeys:', `    - { name: editor, key: ${EDITOR_KEY} }`, 'activity:', '  keep: 50', `  keepBodies: ${KEEP_BODIES}`, ''].join('\n'),
  );
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config });
  openai = new OpenAI({ baseURL: daemon.endpoint, apiKey: EDITOR_KEY, maxRetries: 0 });
  anthropic = new Anthropic({ baseURL: daemon.origin, apiKey: EDITOR_KEY, maxRetries: 0 });
}, 90_000);

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function activity(query = ''): Promise<ActivityAnswer> {
  const res = await daemon.api(`/api/activity${query}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as ActivityAnswer;
}

/**
 * Runs `request`, then waits for its record: the one new record the daemon lists. A record is
 * written when the response closes, which may be a moment after the client has read all of it.
 */
async function recorded(request: () => Promise<unknown>): Promise<RequestRecord> {
  const before = new Set((await activity()).requests.map((r) => r.id));
  await request();
  return eventually('the request was recorded', async () => {
    const fresh = (await activity()).requests.filter((r) => !before.has(r.id));
    return fresh.length === 1 ? fresh[0] : undefined;
  });
}

describe('each request recorded, on each API, through its client', () => {
  it('a cold chat completion: it waited for the load, then the engine said its tokens, first token and speed', async () => {
    let usage: OpenAI.CompletionUsage | undefined;
    const record = await recorded(async () => {
      usage = (await openai.chat.completions.create({ model: 'tiny', max_tokens: 8, messages: [{ role: 'user', content: 'Say hello.' }] })).usage;
    });
    expect(record).toMatchObject({
      route: '/v1/chat/completions',
      model: 'demo-tiny',
      servedBy: 'demo-tiny',
      client: 'editor',
      status: 200,
      stream: false,
      waited: 'load',
      promptTokens: usage?.prompt_tokens,
      completionTokens: 8,
      error: null,
    });
    expect(record.waitMs).toBeGreaterThan(0);
    // Its first token came after the load it waited for, and before its end.
    expect(record.firstTokenMs).toBeGreaterThanOrEqual(record.waitMs);
    expect(record.firstTokenMs).toBeLessThanOrEqual(record.durationMs);
    expect(record.tokensPerSecond).toBeGreaterThan(0);
    expect(record.bodies?.request).toContain('"model":"tiny"');
    expect(record.bodies?.answer).toContain('"completion_tokens":8');
  });

  it('a streamed chat completion on a warm model: no wait, its first token from the stream, its prompt from the cache the second time', async () => {
    const request = { model: 'demo-tiny', max_tokens: 16, temperature: 0, messages: [{ role: 'user' as const, content: 'Count to ten.' }] };
    const first = await recorded(async () => {
      for await (const _chunk of await openai.chat.completions.create({ ...request, stream: true }));
    });
    expect(first).toMatchObject({ route: '/v1/chat/completions', model: 'demo-tiny', status: 200, stream: true, waited: null, waitMs: 0, completionTokens: 16, error: null });
    expect(first.firstTokenMs).toBeGreaterThan(0);
    expect(first.firstTokenMs).toBeLessThan(first.durationMs);
    expect(first.tokensPerSecond).toBeGreaterThan(0);
    const again = await recorded(async () => {
      for await (const _chunk of await openai.chat.completions.create({ ...request, stream: true }));
    });
    expect(again.promptTokens).toBe(first.promptTokens);
    expect(again.cachedTokens).toBeGreaterThan(0);
  });

  it("the Messages API, whole and streamed: Anthropic's usage (the cache's tokens counted apart) is the record's", async () => {
    let message: Anthropic.Message | undefined;
    const whole = await recorded(async () => {
      message = await anthropic.messages.create({ model: 'tiny', max_tokens: 6, messages: [{ role: 'user', content: 'Hi there.' }] });
    });
    expect(whole).toMatchObject({ route: '/v1/messages', model: 'demo-tiny', servedBy: 'demo-tiny', client: 'editor', status: 200, stream: false, completionTokens: 6, error: null });
    expect(whole.promptTokens).toBe((message?.usage.input_tokens ?? 0) + (message?.usage.cache_read_input_tokens ?? 0));
    expect(whole.firstTokenMs).toBeGreaterThan(0);
    const streamed = await recorded(async () => {
      for await (const _event of await anthropic.messages.create({ model: 'tiny', max_tokens: 6, stream: true, messages: [{ role: 'user', content: 'Hi again.' }] }));
    });
    expect(streamed).toMatchObject({ route: '/v1/messages', stream: true, status: 200, completionTokens: 6 });
    expect(streamed.firstTokenMs).toBeGreaterThan(0);
    expect(streamed.tokensPerSecond).toBeGreaterThan(0);
  });

  it('the Responses API', async () => {
    let response: OpenAI.Responses.Response | undefined;
    const record = await recorded(async () => {
      response = await openai.responses.create({ model: 'tiny', input: 'One word, please.', max_output_tokens: 5 });
    });
    expect(record).toMatchObject({ route: '/v1/responses', model: 'demo-tiny', status: 200, client: 'editor', completionTokens: response?.usage?.output_tokens, error: null });
    expect(record.tokensPerSecond).toBeGreaterThan(0);
  });

  it('a refusal, with the words its client was told, under the name it asked for', async () => {
    let refusal: unknown;
    const record = await recorded(async () => {
      refusal = await openai.chat.completions.create({ model: 'no-such-model', messages: [{ role: 'user', content: 'x' }] }).catch((error: unknown) => error);
    });
    expect(refusal).toBeInstanceOf(NotFoundError);
    expect(record).toMatchObject({ route: '/v1/chat/completions', model: 'no-such-model', servedBy: null, status: 404, waited: null, firstTokenMs: null, completionTokens: null });
    expect(record.error).toBe((refusal as NotFoundError).message.replace(/^404 /, ''));
    expect(record.error).toContain("Model 'no-such-model' does not exist");
  });

  it('a client that leaves mid-answer: 499, and why', async () => {
    const record = await recorded(async () => {
      const abort = new AbortController();
      const stream = await openai.chat.completions.create({ model: 'tiny', max_tokens: 400, stream: true, messages: [{ role: 'user', content: 'Write a long story.' }] }, { signal: abort.signal });
      try {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) abort.abort();
      } catch {
        // The abort ends the iteration with an error on the client's side; the daemon's record is what is checked.
      }
    });
    expect(record).toMatchObject({ status: 499, stream: true, error: 'the client left before its answer was complete' });
  });

  it('keeps only the first activity.keepBodies bytes of a body, and says it was cut', async () => {
    // A long end-user id (inert: nothing local reads it) makes the body long while the prompt stays short.
    const record = await recorded(() => openai.chat.completions.create({ model: 'tiny', max_tokens: 1, user: 'u'.repeat(KEEP_BODIES), messages: [{ role: 'user', content: 'Hi.' }] }));
    expect(record.status).toBe(200);
    expect(record.bodies?.truncated).toBe(true);
    expect(Buffer.byteLength(record.bodies?.request ?? '')).toBeLessThanOrEqual(KEEP_BODIES);
    expect(record.bodies?.request.startsWith('{')).toBe(true);
  });
});

describe('where the records are seen', () => {
  it('GET /api/activity: newest first, filtered by model (an alias too), status and client; what it holds said', async () => {
    const all = await activity();
    expect(all.keep).toBe(50);
    expect(all.keepBodiesBytes).toBe(KEEP_BODIES);
    const ats = all.requests.map((r) => r.at);
    expect(ats).toEqual([...ats].sort((a, b) => b - a));
    const tiny = (await activity('?model=tiny')).requests;
    expect(tiny.length).toBeGreaterThan(5);
    expect(tiny.every((r) => r.model === 'demo-tiny')).toBe(true);
    expect((await activity('?status=4xx')).requests.map((r) => r.status)).toEqual([499, 404]);
    expect((await activity('?status=404')).requests.map((r) => r.model)).toEqual(['no-such-model']);
    expect((await activity('?client=editor')).requests).toHaveLength(all.requests.length);
    expect((await activity('?client=local')).requests).toEqual([]);
  });

  it('refuses a filter it cannot read, and one it does not take, by name', async () => {
    const bad = await daemon.api('/api/activity?status=teapot');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { message: string } }).error.message).toBe("getActivity: status: expected an HTTP status (429) or a class of them (4xx), got 'teapot'");
    const unknown = await daemon.api('/api/activity?colour=red');
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toBe("getActivity has no parameter 'colour'; it takes model, status, client");
  });

  it('the event stream carries each record as its request ends', async () => {
    const abort = new AbortController();
    const res = await daemon.api('/api/events', { signal: abort.signal, headers: { accept: 'text/event-stream' } });
    const seen: RequestRecord[] = [];
    let live: () => void = () => {};
    const isLive = new Promise<void>((resolve) => (live = resolve));
    void readEventStream(res.body!, (message) => {
      const event = JSON.parse(message.data) as AdminEvent;
      if (event.type === 'SnapshotUpdated') live();
      if (event.type === 'RequestRecorded') seen.push(event.record);
    }).catch(() => undefined);
    try {
      await isLive;
      const record = await recorded(() => openai.completions.create({ model: 'tiny', prompt: 'Once', max_tokens: 3 }));
      expect(record.route).toBe('/v1/completions');
      const event = await eventually('its RequestRecorded came', async () => seen.find((r) => r.id === record.id));
      expect(event).toEqual(record);
    } finally {
      abort.abort();
    }
  });

  it("/metrics: each model's requests by status, and histograms of first token, speed and wait", async () => {
    const records = (await activity('?model=demo-tiny')).requests;
    const text = await (await fetch(`${daemon.origin}/metrics`)).text();
    const sample = (name: string): number => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(sample('llmtray_requests_total{model="demo-tiny",status="200"}')).toBe(records.filter((r) => r.status === 200).length);
    expect(sample('llmtray_requests_total{model="demo-tiny",status="499"}')).toBe(1);
    expect(sample('llmtray_request_first_token_seconds_count{model="demo-tiny"}')).toBe(records.filter((r) => r.firstTokenMs !== null).length);
    expect(sample('llmtray_request_tokens_per_second_count{model="demo-tiny"}')).toBe(records.filter((r) => r.tokensPerSecond !== null).length);
    // The cold request's wait (the load) is over 10 ms; the warm ones' are not.
    expect(sample('llmtray_request_wait_seconds_bucket{model="demo-tiny",le="0.01"}')).toBe(records.filter((r) => r.servedBy !== null && r.waitMs <= 10).length);
    expect(text).not.toContain('model="no-such-model"');
  });
});

describe('llmtray activity', () => {
  const cli = (...args: string[]) => runCli(['activity', ...args, '--data-dir', daemon.dataDir]);

  it('prints the requests, the newest last, and the summary per model; --model takes an alias; -n shows fewer', async () => {
    const held = (await activity()).requests;
    const printed = await cli('--model', 'tiny');
    expect(printed.code, printed.stderr).toBe(0);
    const rows = printed.stdout.split('\n').filter((line) => /^\d\d:\d\d:\d\d\s+r\d+/.test(line));
    const tiny = held.filter((r) => r.model === 'demo-tiny');
    expect(rows.map((row) => row.split(/\s+/)[1])).toEqual(tiny.slice(0, 20).map((r) => r.id).reverse());
    const failed = tiny.filter((r) => r.status >= 400 || r.error !== null).length;
    expect(printed.stdout).toMatch(new RegExp(`\\ndemo-tiny\\s+${tiny.length}\\s+${failed}\\s`));
    const fewer = await cli('-n', '1', '--status', '4xx');
    expect(fewer.stdout).toContain('(the last 1 of 2 requests held');
    const refused = await cli('--status', 'teapot');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("getActivity: status: expected an HTTP status (429) or a class of them (4xx), got 'teapot'");
  });

  it('-f prints each request as it ends, once, and exits 0 on Ctrl-C', async () => {
    const child = spawn(process.execPath, [CLI_ENTRY, 'activity', '-f', '-n', '1', '--data-dir', daemon.dataDir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    const exited = new Promise<DaemonExit>((done) => child.once('exit', (code, signal) => done({ code, signal })));
    try {
      await eventually('the table is printed', async () => (stdout.includes('SPEED P50') ? true : undefined));
      const record = await recorded(() => anthropic.messages.create({ model: 'tiny', max_tokens: 2, messages: [{ role: 'user', content: 'Followed?' }] }));
      const line = await eventually('its line is printed', async () => stdout.split('\n').find((l) => l.includes(` ${record.id}  `)));
      expect(line).toContain('200  demo-tiny  /v1/messages  editor');
      expect(stdout.split('\n').filter((l) => l.includes(` ${record.id}  `))).toHaveLength(1);
      child.kill('SIGINT');
      expect(await exited).toEqual({ code: 0, signal: null });
    } finally {
      child.kill('SIGKILL');
    }
  });
});
