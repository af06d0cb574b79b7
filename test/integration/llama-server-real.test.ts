// A real llama.cpp llama-server, opt-in: set LLMTRAY_LLAMA_SERVER to its binary to run this
// suite (`LLMTRAY_LLAMA_SERVER=/path/to/llama-server npx vitest run test/integration/llama-server-real.test.ts`).
// Unset, the suite is reported as skipped, not passed (the README's `npm test` on a machine
// without one). Set, it must pass: an empty value, a missing file or a broken build fails it
// rather than skipping it. `.ci/run` builds one (CPU) from the llama.cpp source
// node-llama-cpp ships (scripts/build-llama-server.sh), sets the variable, and fails when the
// build does.
//
// What only a real build can tell: that the argv argvFor builds from the probed --help is one
// it accepts at every level, that its ready line wakes the supervisor, that it reads the key
// from --api-key-file, that llama.cpp's own failure line reaches the classifier, and that a build
// with Anthropic's Messages API is found to serve it and gets those requests as they are.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LaunchError } from '../../core/engine/failure-classifier.js';
import { readsApiKeyFile, type LaunchSpec } from '../../core/engine/launch-spec.js';
import { probeCapabilities, type EngineCapabilities } from '../../core/engine/llama-server/capabilities.js';
import { defaultEngineCommand } from '../../core/engine/supervisor/engine-command.js';
import { isRunning, readCommandLine } from '../../core/engine/supervisor/process-tree.js';
import { Supervisor } from '../../core/engine/supervisor/supervisor.js';
import { placementArgs } from '../../core/engine/placement-args.js';
import { removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { corruptModel, TINY_SHAPE, tinyModel } from '../support/test-models.js';
import type { LaunchLevel } from '../../core/contracts/launch-level.js';
import type { Placement } from '../../core/contracts/plan.js';
import type { ActivityAnswer } from '../../core/contracts/requests/request-record.js';

const LLAMA_SERVER = process.env['LLMTRAY_LLAMA_SERVER'];
const binary = LLAMA_SERVER ?? '';

/** Fails the suite's first hook with what is wrong with the setting. */
function requireBinary(): void {
  if (!existsSync(binary)) throw new Error(`LLMTRAY_LLAMA_SERVER names '${binary}', which does not exist`);
}

describe.skipIf(LLAMA_SERVER === undefined)('a real llama-server (LLMTRAY_LLAMA_SERVER)', () => {
  const models = new Map<string, string>();
  let capabilities: EngineCapabilities;
  let dataDir: string;
  let supervisor: Supervisor | undefined;

  beforeAll(async () => {
    requireBinary();
    capabilities = await probeCapabilities(binary);
    models.set('tiny', await tinyModel());
    models.set('broken', await corruptModel());
    // The tiny model as an embedding model (what a GGUF with a pooling, or the config's
    // `embeddings: true`, makes of it).
    models.set('embedder', await tinyModel());
  });
  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'llmtray-llama-server-'));
    supervisor = await Supervisor.start({
      specFor: (modelId): LaunchSpec => ({
        modelId,
        engine: 'llama-server',
        modelPath: models.get(modelId) ?? join(dataDir, 'absent.gguf'),
        contextTokens: 1024,
        gpuLayers: 'all',
        // What the catalog reads from the header: 'partial' puts half of these on the device.
        layers: TINY_SHAPE.nLayer,
        threads: 1,
        // One slot: recent builds default to several, which would split the small context.
        parallel: 1,
        aliases: [],
        extraArgs: [],
        env: {},
        // Its GGUF names no pooling, as a chat model marked `embeddings: true` in the config.
        ...(modelId === 'embedder' ? { embeddings: { modelPools: false } } : {}),
      }),
      engineCommand: defaultEngineCommand({ llamaServerPath: binary }),
      footprint: () => 0,
      dataDir,
    });
  });
  afterEach(async () => {
    await supervisor?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('probes what the build accepts from its --help', () => {
    for (const flag of ['-m', '-c', '-ngl', '--host', '--port', '--alias', '--api-key']) expect(capabilities.flags.has(flag), flag).toBe(true);
    expect(capabilities.version).not.toBeNull();
  });

  it.each<LaunchLevel>(['full', 'partial', 'minimal'])('launches a tiny model at %s, answers a chat completion with its key only, and stops', async (level) => {
    if (!supervisor) throw new Error('no supervisor');
    await supervisor.launch('tiny', level);
    const endpoint = supervisor.endpointFor('tiny');
    if (endpoint === null) throw new Error('ready but no endpoint');
    expect(endpoint.level).toBe(level);
    const commandLine = (await readCommandLine(endpoint.pid)) ?? '';
    const all = capabilities.gpuLayersAll ? 'all' : '999';
    // At partial, half the blocks and the output layer, which -ngl counts as one more.
    expect(commandLine).toContain(`-ngl ${level === 'minimal' ? '0' : level === 'partial' ? TINY_SHAPE.nLayer / 2 + 1 : all} `);
    if (readsApiKeyFile(capabilities)) expect(commandLine).not.toContain(endpoint.apiKey);

    const url = `http://127.0.0.1:${endpoint.port}/v1/chat/completions`;
    const body = JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 });
    expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(401);
    const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${endpoint.apiKey}`, 'content-type': 'application/json' }, body });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as { choices: { message: { role: string; content: string } }[] };
    expect(answer.choices[0]?.message.role).toBe('assistant');
    expect(typeof answer.choices[0]?.message.content).toBe('string');

    await supervisor.evict('tiny');
    expect(await isRunning(endpoint.pid)).toBe(false);
    expect(supervisor.endpointFor('tiny')).toBeNull();
    if (readsApiKeyFile(capabilities)) expect(await readdir(join(dataDir, 'engine-keys'))).toEqual([]);
  });

  it('launches an embedding model with --embeddings, so /v1/embeddings answers instead of a 501', async () => {
    if (!supervisor) throw new Error('no supervisor');
    await supervisor.launch('embedder', 'full');
    const endpoint = supervisor.endpointFor('embedder');
    if (endpoint === null) throw new Error('ready but no endpoint');
    const client = new OpenAI({ apiKey: endpoint.apiKey, baseURL: `http://127.0.0.1:${endpoint.port}/v1`, maxRetries: 0 });
    // The SDK's default encoding is base64, which llama-server decodes as the SDK expects.
    const answer = await client.embeddings.create({ model: 'embedder', input: 'hello' });
    expect(answer.data[0]?.embedding).toHaveLength(TINY_SHAPE.nEmbd);
    await supervisor.evict('embedder');
  });

  it.each<[string, Placement]>([
    ['one GPU', { kind: 'gpu', devices: [{ index: 0, layers: TINY_SHAPE.nLayer, bytes: 1 }], cpuMoeLayers: 0, hostBytes: 0 }],
    ['a layer split', { kind: 'split', devices: [{ index: 0, layers: 1, bytes: 1 }, { index: 1, layers: TINY_SHAPE.nLayer - 1, bytes: 1 }], cpuMoeLayers: 0, hostBytes: 0 }],
    ['part on the CPU', { kind: 'partial', devices: [{ index: 0, layers: 1, bytes: 1 }], cpuMoeLayers: 0, hostBytes: 1 }],
  ])('takes the flags of a placement on %s, and serves (a CPU build places it all on the CPU)', async (_what, placement) => {
    if (!supervisor) throw new Error('no supervisor');
    await supervisor.launch('tiny', 'full', placement);
    const endpoint = supervisor.endpointFor('tiny');
    if (endpoint === null) throw new Error('ready but no endpoint');
    const commandLine = (await readCommandLine(endpoint.pid)) ?? '';
    for (const arg of placementArgs(placement, capabilities)) expect(commandLine).toContain(arg);
    const response = await fetch(`http://127.0.0.1:${endpoint.port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${endpoint.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 2 }),
    });
    expect(response.status).toBe(200);
    await supervisor.evict('tiny');
  });

  it("rejects a corrupt model as invalid (no retry can fix it) with llama.cpp's reason", async () => {
    if (!supervisor) throw new Error('no supervisor');
    const error = await supervisor.launch('broken', 'full').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LaunchError);
    expect(error).toMatchObject({ kind: 'invalid' });
    expect((error as LaunchError).reason).toMatch(/data is not within the file bounds/);
  });
});

describe.skipIf(LLAMA_SERVER === undefined)('the daemon with a real llama-server on PATH (LLMTRAY_LLAMA_SERVER)', () => {
  let daemon: DaemonProcess | undefined;
  beforeAll(requireBinary);
  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
  });

  it('finds it, runs demo-chat on it with its draft, and answers through the router', async () => {
    daemon = await startDaemonProcess({ env: { PATH: `${dirname(binary)}${delimiter}${process.env['PATH'] ?? ''}` }, startTimeoutMs: 60_000 });
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
    const answer = await client.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 });
    expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
    const chat = await daemon.model('demo-chat');
    expect(chat.engine).toBe('llama-server');
    expect(chat.status.state).toMatch(/^(ready|active)$/);
    // The draft rides in the same llama-server process: its command line names both files.
    const pid = chat.upstream?.pid;
    expect(pid).toBeTypeOf('number');
    const commandLine = (await readCommandLine(pid ?? 0)) ?? '';
    expect(commandLine).toContain(binary);
    expect(commandLine).toMatch(/-md \S*demo-draft\.gguf/);
  });

  it('never answers a json_object request with free text: a JSON object, or the build’s own refusal (it ignored the field before)', async () => {
    if (!daemon) throw new Error('no daemon');
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
    const outcome = await client.chat.completions
      .create({ model: 'chat', messages: [{ role: 'user', content: 'Answer in JSON.' }], max_tokens: 32, response_format: { type: 'json_object' } })
      .then((answer) => ({ answer }), (error: unknown) => ({ error }));
    if ('answer' in outcome) {
      const text = outcome.answer.choices[0]?.message.content ?? '';
      // Cut at the token limit, it is the start of an object; finished, a whole one.
      if (outcome.answer.choices[0]?.finish_reason === 'length') expect(text.trimStart().startsWith('{'), text).toBe(true);
      else expect(typeof JSON.parse(text), text).toBe('object');
    } else {
      expect(outcome.error).toBeInstanceOf(OpenAI.APIError);
      expect((outcome.error as InstanceType<typeof OpenAI.APIError>).status).toBe(400);
    }
  });

  it('answers a json_schema request with JSON under the schema (its grammar could not start on the demo vocabulary before: "Failed to initialize samplers")', async () => {
    if (!daemon) throw new Error('the daemon did not start (see the test before)');
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
    const schema = { type: 'object', properties: { city: { type: 'string', maxLength: 8 }, days: { type: 'integer' } }, required: ['city', 'days'], additionalProperties: false };
    const answer = await client.chat.completions.create({
      model: 'chat',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      max_tokens: 200,
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema, strict: true } },
    });
    const text = answer.choices[0]?.message.content ?? '';
    expect(answer.choices[0]?.finish_reason, text).toBe('stop');
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(parsed).sort()).toEqual(['city', 'days']);
    expect(typeof parsed['city']).toBe('string');
    expect(Number.isInteger(parsed['days'])).toBe(true);
  });

  it('passes Anthropic’s Messages API through to it as it is, when the build serves it: answers, streams and counts', async () => {
    if (!daemon) throw new Error('the daemon did not start (see the test before)');
    // The supervisor asked the server when it became ready; builds from before llama.cpp's own
    // /v1/messages (PR #17570) are translated instead, and this case says which this one is.
    const logs = (await (await daemon.api('/api/models/demo-chat/logs')).json()) as { lines: string[] };
    expect(logs.lines.join('\n'), 'this llama-server build does not serve /v1/messages').toContain("serves Anthropic's /v1/messages itself");

    const client = new Anthropic({ baseURL: daemon.origin, apiKey: 'unused', maxRetries: 0 });
    const textOf = (message: Anthropic.Message): string => message.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
    // Greedy, so the stream and the stopped answer can be compared with the free one; the SDK's
    // types no longer list temperature, but it sends it.
    const request = { model: 'chat', max_tokens: 32, temperature: 0, system: 'Be brief.', messages: [{ role: 'user', content: 'Once upon a time' }] } as Anthropic.MessageCreateParamsNonStreaming;
    const { data: free, response } = await client.messages.create(request).withResponse();
    expect(response.headers.get('x-llmtray-served-by')).toBe('demo-chat');
    expect(free).toMatchObject({ type: 'message', role: 'assistant', stop_reason: 'max_tokens' });
    const text = textOf(free);
    expect(text.length).toBeGreaterThan(12);

    // Only llama-server's own Messages API names the stop sequence that ended an answer: the
    // chat API the translation goes through cannot say it (core/router/anthropic/translate.ts).
    const stop = text.slice(8, 10);
    const stopped = await client.messages.create({ ...request, stop_sequences: [stop] });
    expect(stopped.stop_sequence).toBe(stop);
    expect(textOf(stopped)).toBe(text.slice(0, text.indexOf(stop)));

    const events: Anthropic.RawMessageStreamEvent[] = [];
    for await (const event of await client.messages.create({ ...request, stream: true })) events.push(event);
    expect(events[0]?.type).toBe('message_start');
    expect(events.map((e) => e.type).slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(events.map((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? e.delta.text : '')).join('')).toBe(text);

    // Its own count_tokens: the prompt a message pays for, evaluated or read from its cache.
    const counted = await client.messages.countTokens({ model: 'chat', system: 'Be brief.', messages: [{ role: 'user', content: 'Once upon a time' }] });
    expect(counted.input_tokens).toBe(free.usage.input_tokens + (free.usage.cache_read_input_tokens ?? 0));
  });

  it("records each request with what llama-server said it cost: its timings on chat completions, its own usage on the Messages API", async () => {
    if (!daemon) throw new Error('the daemon did not start (see the test before)');
    const { requests } = (await (await daemon.api('/api/activity?model=demo-chat')).json()) as ActivityAnswer;
    // The oldest of each kind (the list is newest first): the first chat ('hi', 8 tokens), the first whole message and the streamed one (32 each).
    const chat = requests.filter((r) => r.route === '/v1/chat/completions' && r.status === 200 && !r.stream).at(-1);
    expect(chat).toMatchObject({ servedBy: 'demo-chat', completionTokens: 8, error: null });
    expect(chat?.promptTokens).toBeGreaterThan(0);
    expect(chat?.cachedTokens).not.toBeNull();
    // A whole answer's first token: sent, plus llama-server's timings.prompt_ms; its speed is llama-server's predicted_per_second.
    expect(chat?.firstTokenMs).toBeGreaterThan(0);
    expect(chat?.tokensPerSecond).toBeGreaterThan(0);
    const whole = requests.filter((r) => r.route === '/v1/messages' && r.status === 200 && !r.stream).at(-1);
    const streamed = requests.filter((r) => r.route === '/v1/messages' && r.status === 200 && r.stream).at(-1);
    for (const record of [whole, streamed]) {
      expect(record).toMatchObject({ completionTokens: 32, error: null });
      expect(record?.promptTokens).toBeGreaterThan(0);
    }
    expect(streamed?.firstTokenMs).toBeGreaterThan(0);
    expect(streamed?.tokensPerSecond).toBeGreaterThan(0);
  });

  it('answers its refusal of a prompt over the context in OpenAI’s shape and, on /v1/messages, in Anthropic’s', async () => {
    if (!daemon) throw new Error('the daemon did not start (see the test before)');
    // demo-chat has 8192 tokens of context; every word is at least one token.
    const long = Array.from({ length: 12_000 }, (_, i) => `w${i}`).join(' ');
    const openai = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0 });
    const refusal = await openai.chat.completions.create({ model: 'chat', messages: [{ role: 'user', content: long }], max_tokens: 2 }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(OpenAI.BadRequestError);
    const error = refusal as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error.code).toBe('context_length_exceeded');
    expect(error.type).toBe('invalid_request_error');
    expect(error.param).toBe('messages');
    expect(error.message).toMatch(/exceeds the available context size/);

    const anthropic = new Anthropic({ baseURL: daemon.origin, apiKey: 'unused', maxRetries: 0 });
    const native = await anthropic.messages.create({ model: 'chat', max_tokens: 4, messages: [{ role: 'user', content: long }] }).catch((e: unknown) => e);
    expect(native).toBeInstanceOf(Anthropic.BadRequestError);
    expect((native as InstanceType<typeof Anthropic.BadRequestError>).errorCode).toBe('context_length_exceeded');
  });
});
