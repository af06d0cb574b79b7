// A model file still being written into a model dir, through the real daemon: a download or a
// copy under way when the daemon starts and while it runs. Not offered until it stops growing
// (settling.ts) — but before, a request for it by the name it will have was told 404 "does not
// exist", which sends a person looking for a typo. Now it hears 503 with Retry-After: the file,
// its size so far, and that it is coming; once written, it is served under that name.
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels } from '../../core/catalog/demo/demo-models.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let workDir: string;
let daemon: DaemonProcess;
let model: Buffer;
let growing: string;
let written = 0;
let writing = true;
let writer: Promise<void>;

/** Appends the model a slice at a time, as a download does, until told to stop; then nothing. */
async function keepWriting(): Promise<void> {
  const slice = 4096;
  while (writing && written + slice < model.length) {
    await appendFile(growing, model.subarray(written, written + slice));
    written += slice;
    // Well under the settle time between writes, so it keeps growing however loaded the machine.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-being-written-'));
  const models = await generateDemoModels(workDir);
  model = await readFile(models.tiny.path);
  await mkdir(join(workDir, 'models'));
  growing = join(workDir, 'models', 'grow.gguf');
  await writeFile(growing, model.subarray(0, 4096));
  written = 4096;
  // Started before the daemon: the copy under way as it starts.
  writer = keepWriting();
  const configPath = join(workDir, 'config.yaml');
  await writeFile(configPath, `modelDirs: [${JSON.stringify(join(workDir, 'models'))}]\nengines:\n  warmSpare: false\n`);
  daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
}, 90_000);

afterAll(async () => {
  writing = false;
  await writer;
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

const post = (path: string, body: unknown) =>
  fetch(`${daemon.origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });

describe('a model file still being written', () => {
  it('is answered 503 with Retry-After naming the file and its size so far, on every API, and is served once written', async () => {
    const chat = await post('/v1/chat/completions', { model: 'grow', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
    expect(chat.status).toBe(503);
    expect(Number(chat.headers.get('retry-after'))).toBeGreaterThan(0);
    const error = ((await chat.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('model_being_written');
    expect(error.message).toMatch(new RegExp(`^Model 'grow' is a file still being written \\(\\d+(\\.\\d)? (KiB|MiB) so far\\): ${growing.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.`));

    // The Anthropic and Responses APIs take the same refusal, in their own error shapes.
    const messages = await post('/v1/messages', { model: 'grow', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }] });
    expect(messages.status).toBe(503);
    expect(((await messages.json()) as { error: { message: string } }).error.message).toMatch(/^Model 'grow' is a file still being written/);
    const responses = await post('/v1/responses', { model: 'grow', input: 'hi', max_output_tokens: 16 });
    expect(responses.status).toBe(503);
    expect(((await responses.json()) as { error: { message: string } }).error.message).toMatch(/^Model 'grow' is a file still being written/);

    // A name nothing is written under is still a 404.
    expect((await post('/v1/chat/completions', { model: 'nothing', messages: [{ role: 'user', content: 'hi' }] })).status).toBe(404);

    // The download finishes: the rest in one write, then nothing more.
    writing = false;
    await writer;
    await appendFile(growing, model.subarray(written));
    await answered();
  }, 120_000);
});

// `cp new.gguf grow.gguf` over a listed model writes the same inode in place: the engine that
// maps it must stop, and no launch may read it half written; said as being written too.
describe('a listed model file rewritten in place', () => {
  it('is answered the same 503 while it grows, then served again once written', async () => {
    await writeFile(growing, model.subarray(0, 4096));
    written = 4096;
    writing = true;
    writer = keepWriting();
    for (;;) {
      const chat = await post('/v1/chat/completions', { model: 'grow', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      const body = (await chat.json()) as { error?: { code: string } };
      // The rescan that sees the rewrite comes a moment after it began: answered until then.
      if (chat.status === 503 && body.error?.code === 'model_being_written') break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    writing = false;
    await writer;
    await appendFile(growing, model.subarray(written));
    await answered();
  }, 120_000);
});

/** Resolves once a chat for grow is answered; until then each refusal must be "being written". */
async function answered(): Promise<void> {
  const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
  for (;;) {
    try {
      const answer = await client.chat.completions.create({ model: 'grow', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 });
      expect(answer.choices[0]?.finish_reason).toBe('length');
      return;
    } catch (error) {
      // Until the rescan sees it settled: still "being written", never anything else.
      expect((error as { code?: string }).code).toBe('model_being_written');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}
