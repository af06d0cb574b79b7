// A conversation survives its engine: the embedded engine as real processes from dist/, with
// --slot-save-path, real HTTP and the openai client, a generated tiny model. An engine is
// stopped (SIGTERM, as an eviction stops it) and another started on the same files; the
// returning conversation must give the tokens one that never left gives, with its prefix
// counted as cached, and a state made under another model file, context or KV type, a
// corrupt one, or a full disk must never be used nor fail the request.
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, open, readdir, rm, stat, truncate, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portOf, startEngine, stopEngine, type Engine } from '../support/embedded-engine-process.js';
import { testModelDir, tinyModel } from '../support/test-models.js';

const KEY = 'saved-conversations-key';
let workDir: string;
let model: string;
const running: Engine[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-saved-'));
  // A copy of its own: one test changes the file's mtime.
  model = join(testModelDir(), 'saved-tiny.gguf');
  await copyFile(await tinyModel(), model);
});
afterAll(async () => {
  await Promise.all(running.map((e) => stopEngine(e)));
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

interface Started { engine: Engine; client: OpenAI }

async function start(saveDir: string, extra: string[] = []): Promise<Started> {
  const engine = startEngine(['-m', model, '-c', '4096', '-np', '1', '-t', '1', '--port', '0', '--api-key', KEY, '--alias', 'tiny',
    '--slot-save-path', saveDir, '--slot-save-min-tokens', '64', ...extra]);
  running.push(engine);
  const base = `http://127.0.0.1:${await portOf(engine)}`;
  await engine.waitFor(/srv {2}llama_server: model loaded/);
  return { engine, client: new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0, timeout: 120_000 }) };
}

async function stop(s: Started): Promise<void> {
  await stopEngine(s.engine);
  running.splice(running.indexOf(s.engine), 1);
}

/** A first turn of some 300 tokens: long enough to be saved, cheap for the tiny model. */
const FIRST: OpenAI.ChatCompletionMessageParam[] = [
  { role: 'system', content: `You are a careful assistant. ${'Remember the list: alpha beta gamma delta epsilon zeta eta theta. '.repeat(12)}` },
  { role: 'user', content: 'Tell me about the list.' },
];

async function turn(client: OpenAI, messages: OpenAI.ChatCompletionMessageParam[]) {
  const r = await client.chat.completions.create({ model: 'tiny', messages, max_tokens: 16, temperature: 0 });
  return { text: r.choices[0]?.message.content ?? '', usage: r.usage };
}

/** The second turn after `answer`: the first turn, its answer, one more question. */
function secondTurn(answer: string): OpenAI.ChatCompletionMessageParam[] {
  return [...FIRST, { role: 'assistant', content: answer }, { role: 'user', content: 'And the third item?' }];
}

async function savedFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of await readdir(dir).catch(() => [] as string[])) {
    for (const name of await readdir(join(dir, sub)).catch(() => [] as string[])) if (name.endsWith('.state')) out.push(join(dir, sub, name));
  }
  return out;
}

/** Saves happen after the answer; its log line says when one is on disk. */
async function firstTurnSaved(s: Started): Promise<string> {
  const first = await turn(s.client, FIRST);
  await s.engine.waitFor(/conversations: slot 0: saved \d+ tokens/);
  return first.text;
}

describe('a conversation that leaves with its engine and comes back', () => {
  it('is restored into the slot: the same tokens at temperature 0 as one that never left, its prefix counted as cached', async () => {
    const dir = join(workDir, 'returns');
    // The conversation that never leaves its engine.
    const stay = await start(join(workDir, 'stays'));
    const firstAnswer = await firstTurnSaved(stay);
    const stayed = await turn(stay.client, secondTurn(firstAnswer));
    await stop(stay);

    const before = await start(dir);
    expect(await firstTurnSaved(before)).toBe(firstAnswer);
    await stop(before);
    expect(await savedFiles(dir)).toHaveLength(1);

    const after = await start(dir);
    const returned = await turn(after.client, secondTurn(firstAnswer));
    expect(returned.text).toBe(stayed.text);
    expect(after.engine.stderr()).toMatch(/conversations: slot 0: restored \d+ of \d+ prompt tokens/);
    const cached = returned.usage?.prompt_tokens_details?.cached_tokens ?? 0;
    // The first turn's prompt at least; the new question is not.
    expect(cached).toBeGreaterThan(250);
    expect(cached).toBeLessThan(returned.usage?.prompt_tokens ?? 0);
    // The engine that never left had it in memory: the same count.
    expect(cached).toBe(stayed.usage?.prompt_tokens_details?.cached_tokens);
    await stop(after);
  });

  it('is not restored for a request with cache_prompt false, which evaluates its whole prompt', async () => {
    const dir = join(workDir, 'uncached');
    const before = await start(dir);
    const firstAnswer = await firstTurnSaved(before);
    await stop(before);
    expect(await savedFiles(dir)).toHaveLength(1);

    const after = await start(dir);
    const request = { model: 'tiny', messages: secondTurn(firstAnswer), max_tokens: 16, temperature: 0, cache_prompt: false };
    const returned = await after.client.chat.completions.create(request as OpenAI.ChatCompletionCreateParamsNonStreaming);
    expect(after.engine.stderr()).not.toMatch(/restored/);
    expect(returned.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    await stop(after);
  });

  it('counts nothing as cached for a first prompt, with no saved state', async () => {
    const s = await start(join(workDir, 'fresh'));
    const first = await turn(s.client, FIRST);
    expect(first.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    await stop(s);
  });

  it.each([
    ['the model file changes (its mtime)', [] as string[], 'modelMtimeMs'],
    ['the context changes', ['-c', '2048'], 'contextPerSlot'],
    ['the KV type changes', ['-ctk', 'f32', '-ctv', 'f32'], 'kvType'],
  ])('discards the saved state when %s', async (_what, extra, field) => {
    const dir = join(workDir, `changed-${field}`);
    const before = await start(dir);
    const firstAnswer = await firstTurnSaved(before);
    await stop(before);
    expect(await savedFiles(dir)).toHaveLength(1);
    if (field === 'modelMtimeMs') await utimes(model, new Date(), new Date(Date.now() + 5000));

    const after = await start(dir, extra);
    expect(after.engine.stderr()).toMatch(new RegExp(`conversations: discarded 1 saved conversation\\(s\\) of .*: .*${field}`));
    const returned = await turn(after.client, secondTurn(firstAnswer));
    expect(after.engine.stderr()).not.toMatch(/restored/);
    expect(returned.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    await stop(after);
  });

  it('discards a corrupt saved state with a log line and answers as if there were none', async () => {
    const dir = join(workDir, 'corrupt');
    const before = await start(dir);
    const firstAnswer = await firstTurnSaved(before);
    await stop(before);
    const [file = ''] = await savedFiles(dir);
    // Its head (the token list) and size intact, KV data overwritten in the middle: llama.cpp
    // would load it, and the same state cut short aborts the process (GGML_ASSERT).
    const { size } = await stat(file);
    const handle = await open(file, 'r+');
    await handle.write(Buffer.alloc(4096, 0x5a), 0, 4096, Math.floor(size / 2));
    await handle.close();
    // One cut short, and one that is not a state at all, beside it.
    const folder = dirname(file);
    await copyFile(file, join(folder, 'cut.state'));
    await copyFile(file.replace(/\.state$/, '.sum'), join(folder, 'cut.sum'));
    await truncate(join(folder, 'cut.state'), Math.floor(size / 2));
    await writeFile(join(folder, 'garbage.state'), 'not a state file');

    const after = await start(dir);
    expect(after.engine.stderr()).toMatch(/conversations: discarded the saved conversation .*garbage\.state: corrupt: not a llama\.cpp sequence state/);
    expect(after.engine.stderr()).toMatch(/conversations: discarded the saved conversation .*cut\.state: corrupt: \d+ bytes, \d+ were saved/);
    const returned = await turn(after.client, secondTurn(firstAnswer));
    expect(after.engine.stderr()).toMatch(/conversations: discarded the saved conversation .* corrupt: its SHA-256 is not the one saved/);
    expect(returned.text.length).toBeGreaterThan(0);
    expect(returned.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
    await after.engine.waitFor(/conversations: slot 0: saved \d+ tokens/);
    expect(await savedFiles(dir)).toHaveLength(1); // the answer's own save, none of the three
    await stop(after);
  });
});

const isRoot = process.getuid?.() === 0;

describe.runIf(isRoot)('a save dir on a full disk (a real 4 MiB tmpfs, filled)', () => {
  let mountPoint: string;
  beforeAll(async () => {
    mountPoint = await mkdtemp(join(tmpdir(), 'llmtray-saved-full-'));
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', mountPoint]);
  });
  afterAll(async () => {
    execFileSync('umount', ['-l', mountPoint]);
    await rm(mountPoint, { recursive: true, force: true });
  });

  it('skips the save with a log line, and the request succeeds', async () => {
    const dir = join(mountPoint, 'conversations');
    await mkdir(dir);
    try {
      execFileSync('dd', ['if=/dev/zero', `of=${join(mountPoint, 'filler')}`, 'bs=64k'], { stdio: 'ignore' });
    } catch {
      // dd exits 1 on ENOSPC, which is the point.
    }
    const s = await start(dir);
    const first = await turn(s.client, FIRST);
    expect(first.text.length).toBeGreaterThan(0);
    await s.engine.waitFor(/conversations: not saving a conversation of \d+ tokens: the disk under .* has 0\.0 MiB free/);
    expect(await savedFiles(dir)).toHaveLength(0);
    // And the next one too.
    expect((await turn(s.client, secondTurn(first.text))).text.length).toBeGreaterThan(0);
    await stop(s);
  });
});
