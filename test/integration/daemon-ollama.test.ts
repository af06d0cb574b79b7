// Apps written for Ollama, unchanged, against the real daemon: the `ollama` npm client, the AI
// SDK's ollama-ai-provider-v2 and LangChain's ChatOllama, pointed at llmtray's origin as they
// would be at Ollama's, on each engine (the embedded engine always; a real llama-server where
// LLMTRAY_LLAMA_SERVER names one, as daemon-clients-engines.test.ts runs both). Every answer
// is checked against the shapes of Ollama's docs/api.md (test/fixtures/ollama-api/shapes.json,
// its source inside). The models are generated with random weights, so what is checked is
// structure, counts and equality with /v1's answers, never content.
//
// Tools: Ollama's API has no tool choice, so a random-weight model asked with tools answers text
// or a call as it likes. A call is forced with `tool_choice: 'required'`, which
// ollama-ai-provider-v2 adds to Ollama's fields (honoured: core/router/ollama/fields.ts) and the
// `ollama` client passes on; on llama-server the tools model is also launched with the tool-call
// marker raised as its server's default (the nudge daemon-clients-engines.test.ts explains), since
// llama.cpp's grammar for a required call lets free text come first.
import { writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { join } from 'node:path';
import { ChatOllama } from '@langchain/ollama';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { generateText, streamText, tool } from 'ai';
import { Ollama } from 'ollama';
import { createOllama } from 'ollama-ai-provider-v2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { writeLlamaGguf } from '../../core/catalog/demo/gguf-writer.js';
import { llamaServerToolNudge } from '../../core/catalog/demo/spm-vocab.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { ollamaShapeErrors } from '../support/ollama-shapes.js';
import { ENGINES, enginesConfigLine, requireEngine } from '../support/engine-cases.js';

const WIDTH = DEMO_SHAPES['demo-tiny'].nEmbd;


const weather = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']), sunny: z.boolean() });
const weatherSchema = { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, sunny: { type: 'boolean' } }, required: ['city', 'sunny'], additionalProperties: false };
const getWeather = {
  type: 'function',
  function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] } }, required: ['city'] } },
};

describe.each(ENGINES)("Ollama's clients on the $engine engine", ({ engine, skip }) => {
  let daemon: DaemonProcess | undefined;
  let workDir: string | undefined;
  let ollama: Ollama;
  const toolsModel = engine === 'llama-server' ? 'tiny-nudged' : 'tiny';

  beforeAll(async () => {
    if (skip) return;
    requireEngine(engine);
    workDir = await makeDataDir();
    const model = join(workDir, 'demo-tiny.gguf');
    await writeLlamaGguf(model, DEMO_SHAPES['demo-tiny']);
    const configPath = join(workDir, 'config.yaml');
    await writeFile(
      configPath,
      [
        'budget: { reserve: 0 }',
        enginesConfigLine(engine),
        'modelDirs: []',
        'models:',
        `  - { id: tiny, path: ${JSON.stringify(model)}, ctx: 2048, engine: ${engine} }`,
        `  - { id: tiny-embed, path: ${JSON.stringify(model)}, ctx: 512, engine: ${engine}, embeddings: true }`,
        ...(engine === 'llama-server' ? [`  - { id: tiny-nudged, path: ${JSON.stringify(model)}, ctx: 2048, engine: ${engine}, engineArgs: { llama-server: ${JSON.stringify(llamaServerToolNudge())} } }`] : []),
        '',
      ].join('\n'),
    );
    daemon = await startDaemonProcess({ config: configPath, startTimeoutMs: 60_000 });
    ollama = new Ollama({ host: daemon.origin });
  });

  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
    if (workDir) await removeDataDir(workDir);
  });

  const running = (): DaemonProcess => {
    if (!daemon) throw new Error('the daemon did not start (see beforeAll)');
    return daemon;
  };

  it.skipIf(skip)('answers version, list and show as Ollama does, from the GGUF, without the admin token (which /api/state needs)', async () => {
    expect(ollamaShapeErrors('version', await ollama.version())).toEqual([]);
    const list = await ollama.list();
    expect(ollamaShapeErrors('tags', list)).toEqual([]);
    expect(list.models.map((m) => m.name).sort()).toEqual([...(engine === 'llama-server' ? ['tiny-nudged:latest'] : []), 'tiny-embed:latest', 'tiny:latest'].sort());
    const tiny = list.models.find((m) => m.name === 'tiny:latest');
    expect(tiny?.details).toMatchObject({ format: 'gguf', family: 'llama', families: ['llama'], quantization_level: 'F32' });
    expect(tiny?.digest).toMatch(/^[0-9a-f]{64}$/);
    const shown = await ollama.show({ model: 'tiny:latest' });
    expect(ollamaShapeErrors('show', shown)).toEqual([]);
    expect(shown.capabilities).toContain('completion');
    expect((shown.model_info as unknown as Record<string, unknown>)['general.architecture']).toBe('llama');
    expect((shown.model_info as unknown as Record<string, unknown>)['llama.block_count']).toBe(DEMO_SHAPES['demo-tiny'].nLayer);
    expect((await ollama.show({ model: 'tiny-embed' })).capabilities).toEqual(['embedding']);
    expect((await fetch(`${running().origin}/api/state`)).status).toBe(401);
  });

  it.skipIf(skip)("refuses an unknown model with Ollama's 404, which the client raises with its message", async () => {
    const error = await ollama.chat({ model: 'nope', messages: [{ role: 'user', content: 'hi' }], stream: false }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status_code: 404 });
    expect((error as Error).message).toMatch(/^model "nope" not found; llmtray serves: /);
    const raw = await fetch(`${running().origin}/api/show`, { method: 'POST', body: JSON.stringify({ model: 'nope' }) });
    expect(raw.status).toBe(404);
    expect(ollamaShapeErrors('error', await raw.json())).toEqual([]);
  });

  it.skipIf(skip)('answers chat whole and streamed, the final object with the counts and measured durations', async () => {
    const whole = await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], stream: false, options: { num_predict: 6, temperature: 0 } });
    expect(ollamaShapeErrors('chatFinal', whole)).toEqual([]);
    expect(whole).toMatchObject({ model: 'tiny', done: true, done_reason: 'length', eval_count: 6 });
    expect(whole.prompt_eval_count).toBeGreaterThan(0);
    for (const duration of [whole.total_duration, whole.prompt_eval_duration, whole.eval_duration]) expect(duration).toBeGreaterThan(0);
    // Measured on one clock from the request's arrival: the parts add up to the whole.
    expect(whole.total_duration).toBe(whole.load_duration + whole.prompt_eval_duration + whole.eval_duration);

    const parts = [];
    for await (const part of await ollama.chat({ model: 'tiny:latest', messages: [{ role: 'user', content: 'hello' }], stream: true, options: { num_predict: 6, temperature: 0 } })) parts.push(part);
    const final = parts.at(-1);
    for (const part of parts.slice(0, -1)) expect(ollamaShapeErrors('chat', part)).toEqual([]);
    expect(ollamaShapeErrors('chatFinal', final)).toEqual([]);
    expect(final).toMatchObject({ model: 'tiny:latest', done: true, done_reason: 'length', eval_count: 6 });
    // Greedy: the stream says the same text as the whole answer.
    expect(parts.map((p) => p.message.content).join('')).toBe(whole.message.content);
  });

  it.skipIf(skip)("gives each token's log-probability and its alternatives, whole and streamed", async () => {
    const whole = await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], stream: false, logprobs: true, top_logprobs: 2, options: { num_predict: 4, temperature: 0 } });
    expect(whole.logprobs).toHaveLength(4);
    for (const token of whole.logprobs ?? []) {
      expect(token.logprob).toBeLessThanOrEqual(0);
      expect(token.top_logprobs).toHaveLength(2);
    }
    expect(whole.logprobs?.map((t) => t.token).join('')).toBe(whole.message.content);
    const streamed = [];
    for await (const part of await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], stream: true, logprobs: true, top_logprobs: 2, options: { num_predict: 4, temperature: 0 } })) streamed.push(...(part.logprobs ?? []));
    // Greedy: the same tokens, one line's worth at a time.
    expect(streamed.map((t) => t.token)).toEqual(whole.logprobs?.map((t) => t.token));
    for (const token of streamed) expect(token.top_logprobs).toHaveLength(2);
  });

  it.skipIf(skip)('answers generate whole and streamed', async () => {
    const whole = await ollama.generate({ model: 'tiny', prompt: 'hello', system: 'be brief', stream: false, options: { num_predict: 5, temperature: 0 } });
    expect(ollamaShapeErrors('generateFinal', whole)).toEqual([]);
    expect(whole).toMatchObject({ done: true, done_reason: 'length', eval_count: 5 });
    const parts = [];
    for await (const part of await ollama.generate({ model: 'tiny', prompt: 'hello', system: 'be brief', stream: true, options: { num_predict: 5, temperature: 0 } })) parts.push(part);
    for (const part of parts.slice(0, -1)) expect(ollamaShapeErrors('generate', part)).toEqual([]);
    expect(ollamaShapeErrors('generateFinal', parts.at(-1))).toEqual([]);
    expect(parts.map((p) => p.response).join('')).toBe(whole.response);
  });

  it.skipIf(skip)('answers tools with each call whole, its arguments an object of the schema, whole and streamed', async () => {
    // Ollama's API has no tool choice; `tool_choice` is what ollama-ai-provider-v2 adds (honoured), sent here through the client as it passes the request on.
    const request = { model: toolsModel, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools: [getWeather], tool_choice: 'required', options: { num_predict: 100, temperature: 0 } };
    const whole = await ollama.chat({ ...request, stream: false } as Parameters<Ollama['chat']>[0] & { stream: false });
    expect(ollamaShapeErrors('chatTools', whole)).toEqual([]);
    expect(whole.message.tool_calls?.map((call) => call.function.name)).toEqual(['get_weather']);
    expect(weather.pick({ city: true }).safeParse(whole.message.tool_calls?.[0]?.function.arguments).success).toBe(true);
    const calls = [];
    for await (const part of await ollama.chat({ ...request, stream: true } as Parameters<Ollama['chat']>[0] & { stream: true })) calls.push(...(part.message.tool_calls ?? []));
    expect(calls).toEqual(whole.message.tool_calls);
  });

  it.skipIf(skip)('enforces a format schema as response_format is', async () => {
    const answer = await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'Weather in Oslo?' }], format: weatherSchema, stream: false, options: { num_predict: 100 } });
    expect(answer.done_reason, answer.message.content).toBe('stop');
    expect(weather.safeParse(JSON.parse(answer.message.content)).success, answer.message.content).toBe(true);
  });

  it.skipIf(skip)('refuses what it does not honour by name, in Ollama’s shape', async () => {
    const refused = await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], stream: false, options: { mirostat_tau: 5 } }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status_code: 400 });
    expect((refused as Error).message).toContain("'options.mirostat_tau'");
    const images = await ollama.chat({ model: 'tiny', messages: [{ role: 'user', content: 'what is this', images: ['iVBORw0KGgo='] }], stream: false }).catch((e: unknown) => e);
    expect((images as Error).message).toContain("'messages[0].images'");
    const context = await ollama.generate({ model: 'tiny', prompt: 'x', context: [1, 2], stream: false }).catch((e: unknown) => e);
    expect((context as Error).message).toContain('keeps no token context');
  });

  it.skipIf(skip)('gives /api/embed and the legacy /api/embeddings the vectors /v1/embeddings gives', async () => {
    const v1 = (await (await fetch(`${running().endpoint}/embeddings`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny-embed', input: ['hello', 'world'], encoding_format: 'float' }) })).json()) as { data: { embedding: number[] }[] };
    const embed = await ollama.embed({ model: 'tiny-embed', input: ['hello', 'world'] });
    expect(ollamaShapeErrors('embed', embed)).toEqual([]);
    expect(embed.embeddings.map((vector) => vector.length)).toEqual([WIDTH, WIDTH]);
    // Close, not equal bit for bit: two requests may be batched differently by the engine.
    for (const [i, vector] of embed.embeddings.entries()) vector.forEach((v, k) => expect(v).toBeCloseTo(v1.data[i]?.embedding[k] ?? Number.NaN, 5));
    expect(embed.prompt_eval_count).toBeGreaterThan(0);
    const legacy = await ollama.embeddings({ model: 'tiny-embed', prompt: 'hello' });
    expect(ollamaShapeErrors('embeddings', legacy)).toEqual([]);
    expect(legacy.embedding).toHaveLength(WIDTH);
    legacy.embedding.forEach((v, k) => expect(v).toBeCloseTo(v1.data[0]?.embedding[k] ?? Number.NaN, 5));
  });

  it.skipIf(skip)('loads with an empty prompt, lists the model in ps, and unloads it with keep_alive 0', async () => {
    const loaded = await ollama.generate({ model: 'tiny', prompt: '', keep_alive: '10m' });
    expect(loaded).toMatchObject({ done: true, done_reason: 'load' });
    const ps = await ollama.ps();
    expect(ollamaShapeErrors('ps', ps)).toEqual([]);
    const entry = ps.models.find((m) => m.name === 'tiny:latest');
    expect(entry?.size).toBeGreaterThan(0);
    // keep_alive 10m from the last use: it expires about ten minutes from now.
    const expiresIn = new Date(entry?.expires_at ?? 0).getTime() - Date.now();
    expect(expiresIn).toBeGreaterThan(9 * 60_000);
    expect(expiresIn).toBeLessThanOrEqual(10 * 60_000);

    const unloaded = await ollama.chat({ model: 'tiny', messages: [], keep_alive: 0 });
    expect(ollamaShapeErrors('unload', unloaded)).toEqual([]);
    expect(unloaded.done_reason).toBe('unload');
    // Waited for, not timed: the eviction ends when the engine is gone.
    while ((await ollama.ps()).models.some((m) => m.name === 'tiny:latest')) await new Promise((resolve) => setTimeout(resolve, 100));
    expect((await running().model('tiny')).status.state).toBe('idle');
  });

  it.skipIf(skip)("serves the AI SDK's generateText and streamText through ollama-ai-provider-v2", async () => {
    const provider = createOllama({ baseURL: `${running().origin}/api` });
    const text = await generateText({ model: provider('tiny'), prompt: 'hello', maxOutputTokens: 6, temperature: 0, maxRetries: 0 });
    expect(text.finishReason).toBe('length');
    expect(text.usage.outputTokens).toBe(6);
    const streamed = streamText({ model: provider('tiny'), prompt: 'hello', maxOutputTokens: 6, temperature: 0, maxRetries: 0 });
    expect(await streamed.text).toBe(text.text);
    expect((await streamed.usage).outputTokens).toBe(6);
    // A required tool: the call comes back whole, its arguments as the schema says.
    const called = await generateText({
      model: provider(toolsModel),
      prompt: 'Weather in Paris?',
      tools: { get_weather: tool({ description: 'The weather in a city', inputSchema: z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']) }) }) },
      toolChoice: 'required',
      temperature: 0,
      maxOutputTokens: 100,
      maxRetries: 0,
    });
    expect(called.toolCalls.map((c) => c.toolName)).toEqual(['get_weather']);
    expect(z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']) }).safeParse(called.toolCalls[0]?.input).success).toBe(true);
  });

  it.skipIf(skip)("serves LangChain's ChatOllama: invoke, bindTools with a tool's result sent back, withStructuredOutput", async () => {
    const chat = new ChatOllama({ model: 'tiny', baseUrl: running().origin, numPredict: 6, temperature: 0 });
    const answer = await chat.invoke('hello');
    expect(answer.response_metadata).toMatchObject({ done_reason: 'length' });
    expect(answer.usage_metadata?.output_tokens).toBe(6);

    // ChatOllama sends no tool choice (Ollama's API has none), so the random-weight model answers
    // text or a call as it likes: what holds is that the tools reach the engine and any call comes
    // back whole (the forced call is the `ollama` client's test above).
    const withTools = new ChatOllama({ model: toolsModel, baseUrl: running().origin, numPredict: 100, temperature: 0 }).bindTools([getWeather]);
    const reply = await withTools.invoke('Weather in Paris?');
    expect(reply.response_metadata['done']).toBe(true);
    for (const call of reply.tool_calls ?? []) expect(weather.pick({ city: true }).safeParse(call.args).success, JSON.stringify(call)).toBe(true);
    // A conversation with a call and its result goes back in the model's template.
    const after = await withTools.invoke([
      new HumanMessage('Weather in Paris?'),
      new AIMessage({ content: '', tool_calls: [{ id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }] }),
      new ToolMessage({ content: 'Sunny, 21 C', tool_call_id: 'call_1', name: 'get_weather' }),
    ]);
    expect(after.response_metadata['done']).toBe(true);

    const structured = await new ChatOllama({ model: 'tiny', baseUrl: running().origin, numPredict: 100 }).withStructuredOutput(weather).invoke('Weather in Lima?');
    expect(weather.safeParse(structured).success, JSON.stringify(structured)).toBe(true);
  });
});

describe("listen.ollamaPort: Ollama's port for apps with its address built in", () => {
  const started: DaemonProcess[] = [];
  const held: Server[] = [];
  afterAll(async () => {
    for (const daemon of started) {
      await daemon.stop();
      await removeDataDir(daemon.dataDir);
    }
    for (const server of held) await new Promise((resolve) => server.close(resolve));
  });

  /** A daemon with no models whose config asks for `ollamaPort`. */
  async function daemonWithOllamaPort(ollamaPort: number): Promise<DaemonProcess> {
    const dir = await makeDataDir();
    const config = join(dir, 'config.yaml');
    await writeFile(config, ['engines: { warmSpare: false }', 'modelDirs: []', 'models: []', `listen: { ollamaPort: ${ollamaPort} }`, ''].join('\n'));
    const daemon = await startDaemonProcess({ config });
    started.push(daemon);
    return daemon;
  }

  /** Waits for the daemon's log (stderr) to say `text`: the pipe may deliver it after daemon.json appears. */
  async function untilLogged(daemon: DaemonProcess, text: string): Promise<void> {
    while (!daemon.stderr().includes(text)) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  /** A loopback port held open by this test, as another program would hold 11434. */
  async function heldPort(): Promise<number> {
    const server = createServer();
    held.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it("serves Ollama's API on that port too, where it is free", async () => {
    // A port the test held and let go: free for the daemon to take.
    const free = await heldPort();
    await new Promise((resolve) => held.pop()?.close(resolve));
    const daemon = await daemonWithOllamaPort(free);
    const client = new Ollama({ host: `http://127.0.0.1:${free}` });
    expect(await client.version()).toEqual({ version: expect.any(String) as string });
    expect((await client.list()).models).toEqual([]);
    await untilLogged(daemon, `reach llmtray at http://127.0.0.1:${free} too`);
  });

  it('starts anyway where another program holds the port, and says where to point the apps', async () => {
    const taken = await heldPort();
    const daemon = await daemonWithOllamaPort(taken);
    await untilLogged(daemon, `listen.ollamaPort ${taken} is taken by another program`);
    expect((await new Ollama({ host: daemon.origin }).version()).version).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
