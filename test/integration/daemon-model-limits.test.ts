// `parallel` and `queueLimit` per model, through the real daemon, its embedded engine and the
// official clients. demo-chat is configured to serve 1 request at once with 1 more waiting: four
// requests sent together give two answers and two 429s with Retry-After whose error names the
// model and the limits, on each API a client speaks (chat completions, Anthropic's messages, the
// Responses API), each SDK raising its own RateLimitError.
//
// The first request is held busy by stopping demo-chat's engine (SIGSTOP) before the four are
// sent, as daemon-placement.test.ts holds a model busy: while it is stopped nothing can be
// answered, so the two refusals the test waits for can only be the admission's, given at once
// (a wait would have run into the activation bound's 503 instead). SIGCONT then lets the two
// admitted requests finish, one after the other in the engine's one slot.
//
// Last, the definition: `-np` and `-c` on the engine's command line say the slots and their
// context, and a new `parallel` relaunches the idle engine with twice the context.
//
// On the embedded engine always; on a real llama-server too where LLMTRAY_LLAMA_SERVER names one
// (as llama-server-real.test.ts: reported skipped, not passed, without it).
import { readFile, rm, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDemoModels, type DemoModels } from '../../core/catalog/demo/demo-models.js';
import type { EngineKind } from '../../core/contracts/snapshot.js';
import type { ActivityAnswer, RequestRecord } from '../../core/contracts/requests/request-record.js';
import { ENGINES, LLAMA_SERVER, requireEngine } from '../support/engine-cases.js';
import { eventually, makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

const MODEL = 'demo-chat';
const CTX = 1024;


let workDir: string;
let models: DemoModels;
let daemon: DaemonProcess;
let openai: OpenAI;
let anthropic: Anthropic;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'llmtray-limits-'));
  models = await generateDemoModels(workDir);
}, 90_000);

afterAll(async () => {
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

/**
 * demo-chat on `engine`, pinned so its engine is up before the first test, with a hang limit far
 * past the test, since its engine is stopped with a request in flight on purpose.
 */
const config = (engine: EngineKind, parallel: number) => `modelDirs: []
engines:
  warmSpare: false
${engine === 'llama-server' ? `  llamaServer: ${JSON.stringify(LLAMA_SERVER)}\n` : ''}models:
  - id: ${MODEL}
    path: ${JSON.stringify(models.chat.path)}
    engine: ${engine}
    ctx: ${CTX}
    pinned: true
    hangLimit: 10m
    parallel: ${parallel}
    queueLimit: 1
`;

/** demo-chat's engine once it serves: its pid and its command line. */
async function servingEngine(): Promise<{ pid: number; argv: string[] }> {
  return eventually(`${MODEL}'s engine serving`, async () => {
    const view = await daemon.model(MODEL);
    const pid = view.upstream?.pid;
    if (pid === undefined || view.status.state !== 'ready') return undefined;
    return { pid, argv: (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0') };
  });
}

const flag = (argv: string[], name: string): string | undefined => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);

/** Resolves with the first `count` rejections among `requests`, in the order they came. */
function firstRejections(requests: Promise<unknown>[], count: number): Promise<unknown[]> {
  return new Promise((resolve) => {
    const rejections: unknown[] = [];
    for (const request of requests) {
      request.catch((error: unknown) => {
        rejections.push(error);
        if (rejections.length === count) resolve(rejections);
      });
    }
  });
}

/**
 * Sends four requests together while demo-chat's engine is stopped, waits for the two refusals,
 * lets the engine go on, and returns the refusals and the answers.
 */
async function fourTogether<T>(send: () => Promise<T>): Promise<{ refusals: unknown[]; answers: T[] }> {
  const { pid } = await servingEngine();
  process.kill(pid, 'SIGSTOP');
  let four: Promise<T>[];
  let refusals: unknown[];
  try {
    four = Array.from({ length: 4 }, send);
    refusals = await firstRejections(four, 2);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  const settled = await Promise.allSettled(four);
  const answers = settled.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  return { refusals, answers };
}

const LIMITS_WORDS = `Model '${MODEL}' serves 1 request at once (parallel) and 1 more may wait (queueLimit); 2 are ahead of this one (1 being served, 1 waiting). Retry in 1 s.`;

function expectOpenAIRefusal(error: unknown): void {
  expect(error).toBeInstanceOf(OpenAI.RateLimitError);
  const refusal = error as InstanceType<typeof OpenAI.RateLimitError>;
  expect(refusal.status).toBe(429);
  expect(refusal.headers?.get('retry-after')).toBe('1');
  expect(refusal.headers?.get('x-llmtray-error-source')).toBe('router');
  expect(refusal.code).toBe('model_queue_full');
  expect(refusal.type).toBe('requests');
  expect(refusal.error).toMatchObject({ message: LIMITS_WORDS });
}

const hello = [{ role: 'user' as const, content: 'Say hello.' }];

describe.each(ENGINES)(`${MODEL} on the $engine engine with parallel 1 and queueLimit 1`, ({ engine, skip }) => {
  let configPath: string;

  beforeAll(async () => {
    if (skip) return;
    requireEngine(engine);
    configPath = join(workDir, `${engine}.yaml`);
    await writeFile(configPath, config(engine, 1));
    daemon = await startDaemonProcess({ dataDir: await makeDataDir(), config: configPath });
    // No retries: the SDKs retry a 429 after its Retry-After by default, and the test reads the first answer.
    openai = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
    anthropic = new Anthropic({ baseURL: daemon.origin, apiKey: 'any-key-works', maxRetries: 0 });
  }, 90_000);

  afterAll(async () => {
    if (skip) return;
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
  });

  it.skipIf(skip)('runs its engine with one slot holding the whole context', async () => {
    const { argv } = await servingEngine();
    expect([flag(argv, '-np'), flag(argv, '-c')]).toEqual(['1', String(CTX)]);
  });

  it.skipIf(skip)('chat completions: four together give two answers and two 429s naming the limits', async () => {
    const { refusals, answers } = await fourTogether(() => openai.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 4 }));
    refusals.forEach(expectOpenAIRefusal);
    expect(answers.map((answer) => answer.choices[0]?.finish_reason)).toEqual(['length', 'length']);
  }, 120_000);

  it.skipIf(skip)('GET /api/activity lists all four: the answers with their first token, tokens and speed, the 429s with the limits’ words', async () => {
    const records = async (): Promise<RequestRecord[]> => ((await (await daemon.api('/api/activity')).json()) as ActivityAnswer).requests;
    const before = new Set((await records()).map((record) => record.id));
    await fourTogether(() => openai.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 4 }));
    // A record is written when its response closes, a moment after the client has read it.
    const four = await eventually('the four records', async () => {
      const fresh = (await records()).filter((record) => !before.has(record.id));
      return fresh.length === 4 ? fresh : undefined;
    });
    expect(four.map((record) => [record.model, record.route, record.status]).sort()).toEqual([
      [MODEL, '/v1/chat/completions', 200],
      [MODEL, '/v1/chat/completions', 200],
      [MODEL, '/v1/chat/completions', 429],
      [MODEL, '/v1/chat/completions', 429],
    ]);
    for (const answered of four.filter((record) => record.status === 200)) {
      expect(answered.firstTokenMs).toBeGreaterThan(0);
      expect(answered.completionTokens).toBe(4);
      expect(answered.tokensPerSecond).toBeGreaterThan(0);
    }
    for (const refused of four.filter((record) => record.status === 429)) expect(refused.error).toBe(LIMITS_WORDS);
  }, 120_000);

  it.skipIf(skip)('Anthropic’s messages: two answers and two rate_limit_errors naming the limits', async () => {
    const { refusals, answers } = await fourTogether(() => anthropic.messages.create({ model: MODEL, max_tokens: 4, messages: hello }));
    for (const error of refusals) {
      expect(error).toBeInstanceOf(Anthropic.RateLimitError);
      const refusal = error as InstanceType<typeof Anthropic.RateLimitError>;
      expect(refusal.headers?.get('retry-after')).toBe('1');
      expect(refusal.type).toBe('rate_limit_error');
      expect(refusal.errorCode).toBe('model_queue_full');
      expect(refusal.apiMessage).toBe(LIMITS_WORDS);
    }
    expect(answers.map((answer) => answer.stop_reason)).toEqual(['max_tokens', 'max_tokens']);
  }, 120_000);

  it.skipIf(skip)('the Responses API: two answers and two 429s naming the limits', async () => {
    const { refusals, answers } = await fourTogether(() => openai.responses.create({ model: MODEL, input: 'Say hello.', max_output_tokens: 16 }));
    refusals.forEach(expectOpenAIRefusal);
    expect(answers.map((answer) => answer.object)).toEqual(['response', 'response']);
  }, 120_000);

  it.skipIf(skip)('a new parallel is a new definition: the idle engine is relaunched with two slots of the same context each', async () => {
    const before = await servingEngine();
    await writeFile(configPath, config(engine, 2));
    const after = await eventually('the relaunched engine', async () => {
      const now = await servingEngine();
      return now.pid === before.pid ? undefined : now;
    }, 90_000);
    expect([flag(after.argv, '-np'), flag(after.argv, '-c')]).toEqual(['2', String(2 * CTX)]);
    expect((await daemon.model(MODEL)).limits).toEqual({ parallel: 2, queueLimit: 1 });
    const answer = await openai.chat.completions.create({ model: MODEL, messages: hello, max_tokens: 4 });
    expect(answer.choices[0]?.finish_reason).toBe('length');
  }, 120_000);
});
