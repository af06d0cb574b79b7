// What apps send, through the real daemon, with the real clients, on each engine: the embedded
// engine always, and a real llama-server where LLMTRAY_LLAMA_SERVER names one (`.ci/run` builds
// one and sets it; unset, that half is reported skipped, not passed). One suite for both: an app
// cannot tell which engine answers, so both obey the same contract, and every answer is checked
// against OpenAI's published response schemas (test/fixtures/openai-openapi/response-schemas.json).
//
// A compact set, one request per behaviour: a chat completion with logprobs, the same streamed
// with usage (every chunk validated), json_schema from the openai SDK, the AI SDK's
// generateObject and LangChain's withStructuredOutput, embeddings as floats and as the SDK's
// default base64 (and the AI SDK's embed), a Response, tools through the openai SDK, the AI SDK,
// LangChain and @anthropic-ai/sdk, a named tool of two. The models are the generated demo-tiny (random weights), so
// what is checked is structure, never content.
//
// Tools too, with one nudge on llama-server: its grammar for `tool_choice: required` lets free
// text come before the call (llama.cpp's autoparser: `root ::= <generation prompt> until-…?
// tool-calls`), where a trained model writes the call's marker at once and a random-weight one
// writes text to the token limit. So on llama-server the requests raise the demo vocabulary's
// one-token `<tool_call>` marker and its end of text with `logit_bias` (TOOL_NUDGE), as a
// model trained for tools would weigh them; the call's JSON is still llama.cpp's grammar's. The
// embedded engine enforces the call itself and refuses `logit_bias` by name, so it gets none.
// The tool requests are greedy (temperature 0): sampled, the random-weight model now and then
// made a second call or wrote a call's JSON to the token limit (seen under load).
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { embed, generateObject, generateText, tool } from 'ai';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { writeBertGguf, type BertModelShape } from '../../core/catalog/demo/bert-gguf-writer.js';
import { writeLlamaGguf } from '../../core/catalog/demo/gguf-writer.js';
import { llamaServerToolNudge, spmVocab } from '../../core/catalog/demo/spm-vocab.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { chatCompletionChunkSchemaErrors, chatCompletionSchemaErrors, embeddingsSchemaErrors, responseSchemaErrors } from '../support/openai-response-schemas.js';
import { ENGINES, enginesConfigLine, requireEngine } from '../support/engine-cases.js';

const WIDTH = DEMO_SHAPES['demo-tiny'].nEmbd;
/** A BERT-style encoder whose GGUF names mean pooling, as bge or MiniLM do. */
const ENCODER: BertModelShape = { name: 'test-encoder', nLayer: 2, nEmbd: 96, nHead: 4, nFf: 384, contextLength: 512, pooling: 'mean', seed: 11 };


describe.each(ENGINES)('the real clients on the $engine engine', ({ engine, skip }) => {
  let daemon: DaemonProcess | undefined;
  let workDir: string | undefined;
  let client: OpenAI;

  beforeAll(async () => {
    if (skip) return;
    requireEngine(engine);
    workDir = await makeDataDir();
    const model = join(workDir, 'demo-tiny.gguf');
    await writeLlamaGguf(model, DEMO_SHAPES['demo-tiny']);
    const encoder = join(workDir, 'encoder.gguf');
    await writeBertGguf(encoder, ENCODER);
    const configPath = join(workDir, 'config.yaml');
    await writeFile(
      configPath,
      [
        'budget: { reserve: 0 }',
        enginesConfigLine(engine),
        'modelDirs: []',
        'models:',
        `  - { id: tiny, path: ${JSON.stringify(model)}, ctx: 2048, engine: ${engine} }`,
        // The same file as an embedding model: llama-server is started with --embeddings for it.
        `  - { id: tiny-embed, path: ${JSON.stringify(model)}, ctx: 512, engine: ${engine}, embeddings: true }`,
        // An embedding model by its GGUF's pooling, with no `embeddings:` in the config.
        `  - { id: encoder, path: ${JSON.stringify(encoder)}, ctx: 512, engine: ${engine} }`,
        // Anthropic's API has no logit_bias to send the nudge (see the header) with, so on
        // llama-server its tool requests go to the same file launched with the nudge as the
        // server's own default (`--logit-bias`, which a request's logit_bias would replace).
        ...(engine === 'llama-server' ? [`  - { id: tiny-nudged, path: ${JSON.stringify(model)}, ctx: 2048, engine: ${engine}, engineArgs: { llama-server: ${JSON.stringify(llamaServerToolNudge())} } }`] : []),
        '',
      ].join('\n'),
    );
    daemon = await startDaemonProcess({ config: configPath, startTimeoutMs: 60_000 });
    client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
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

  it.skipIf(skip)('answers a chat completion with logprobs in the shape of CreateChatCompletionResponse', async () => {
    const { data: answer, response } = await client.chat.completions
      .create({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 6, logprobs: true, top_logprobs: 2 })
      .withResponse();
    expect(response.headers.get('x-llmtray-served-by')).toBe('tiny');
    expect((await running().model('tiny')).engine).toBe(engine);
    expect(chatCompletionSchemaErrors(answer).join('\n')).toBe('');
    expect(answer.choices[0]?.logprobs?.content?.length).toBeGreaterThan(0);
    expect(answer.choices[0]?.logprobs?.content?.[0]?.top_logprobs).toHaveLength(2);
  });

  it.skipIf(skip)('streams chunks each in the shape of CreateChatCompletionStreamResponse, usage last', async () => {
    const stream = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 6, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) expect(chatCompletionChunkSchemaErrors(chunk).join('\n'), JSON.stringify(chunk)).toBe('');
    expect(chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter((f) => f !== null)).toEqual(['length']);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(6);
  });

  // No integer: zod writes z.number().int() with a `minimum`, which the embedded engine's grammar
  // cannot enforce and refuses by name (embedded-engine-formats), where llama-server takes it.
  const weather = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']), sunny: z.boolean() });
  const weatherSchema = { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, sunny: { type: 'boolean' } }, required: ['city', 'sunny'], additionalProperties: false };

  it.skipIf(skip)('answers the openai SDK’s json_schema with an object of the schema', async () => {
    const answer = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'Weather in Oslo?' }],
      max_tokens: 100,
      response_format: { type: 'json_schema', json_schema: { name: 'weather', schema: weatherSchema, strict: true } },
    });
    expect(chatCompletionSchemaErrors(answer).join('\n')).toBe('');
    const text = answer.choices[0]?.message.content ?? '';
    expect(answer.choices[0]?.finish_reason, text).toBe('stop');
    expect(weather.safeParse(JSON.parse(text)).success, text).toBe(true);
  });

  it.skipIf(skip)('gives the AI SDK’s generateObject and LangChain’s withStructuredOutput objects of their zod schema', async () => {
    const provider = createOpenAICompatible({ name: 'llmtray', baseURL: running().endpoint, apiKey: 'any-key-works', supportsStructuredOutputs: true });
    const { object } = await generateObject({ model: provider.chatModel('tiny'), schema: weather, prompt: 'Weather in Lima?', maxOutputTokens: 100, maxRetries: 0 });
    expect(weather.safeParse(object).success, JSON.stringify(object)).toBe(true);
    const chat = new ChatOpenAI({ model: 'tiny', apiKey: 'any-key-works', configuration: { baseURL: running().endpoint }, maxTokens: 100, maxRetries: 0 });
    const structured = await chat.withStructuredOutput(weather, { method: 'jsonSchema', strict: true }).invoke('Weather in Paris?');
    expect(weather.safeParse(structured).success, JSON.stringify(structured)).toBe(true);
  });

  it.skipIf(skip)('answers embeddings as floats in the shape of CreateEmbeddingResponse, and as the base64 the SDK, LangChain and the AI SDK decode to the same', async () => {
    const floats = await client.embeddings.create({ model: 'tiny-embed', input: ['hello', 'world'], encoding_format: 'float' });
    expect(embeddingsSchemaErrors(floats).join('\n')).toBe('');
    expect(floats.data.map((d) => d.embedding.length)).toEqual([WIDTH, WIDTH]);
    expect(floats.usage.prompt_tokens).toBeGreaterThan(0);
    // The SDK's default is base64, which it decodes: the same vectors.
    const decoded = await client.embeddings.create({ model: 'tiny-embed', input: ['hello', 'world'] });
    for (const [i, item] of decoded.data.entries()) {
      expect(item.embedding).toHaveLength(WIDTH);
      item.embedding.forEach((v, k) => expect(v).toBeCloseTo(floats.data[i]?.embedding[k] ?? Number.NaN, 5));
    }
    const langchain = new OpenAIEmbeddings({ model: 'tiny-embed', apiKey: 'any-key-works', configuration: { baseURL: running().endpoint }, maxRetries: 0 });
    const query = await langchain.embedQuery('hello');
    query.forEach((v, k) => expect(v).toBeCloseTo(floats.data[0]?.embedding[k] ?? Number.NaN, 5));
    const provider = createOpenAICompatible({ name: 'llmtray', baseURL: running().endpoint, apiKey: 'any-key-works' });
    const viaAiSdk = await embed({ model: provider.textEmbeddingModel('tiny-embed'), value: 'hello', maxRetries: 0 });
    expect(viaAiSdk.embedding).toHaveLength(WIDTH);
    viaAiSdk.embedding.forEach((v, k) => expect(v).toBeCloseTo(floats.data[0]?.embedding[k] ?? Number.NaN, 5));
  });

  it.skipIf(skip)('serves a BERT-style encoder with mean pooling: vectors of its width, unit length, a batch as its texts one by one', async () => {
    const batch = await client.embeddings.create({ model: 'encoder', input: ['hello world', 'retrieval'], encoding_format: 'float' });
    expect(embeddingsSchemaErrors(batch).join('\n')).toBe('');
    expect(batch.data.map((d) => d.embedding.length)).toEqual([ENCODER.nEmbd, ENCODER.nEmbd]);
    for (const { embedding } of batch.data) expect(Math.hypot(...embedding)).toBeCloseTo(1, 4);
    // [CLS] h e l l o w o r l d [SEP], [CLS] r e t r i e v a l [SEP]: one token per character.
    expect(batch.usage.prompt_tokens).toBe(12 + 11);
    const [first, second] = await Promise.all(['hello world', 'retrieval'].map((input) => client.embeddings.create({ model: 'encoder', input })));
    for (const [i, single] of [first, second].entries()) single?.data[0]?.embedding.forEach((v, k) => expect(v).toBeCloseTo(batch.data[i]?.embedding[k] ?? Number.NaN, 4));
    expect(batch.data[0]?.embedding).not.toEqual(batch.data[1]?.embedding);
  });

  // The nudge (see the header): the marker first, then the end of text once the call is closed.
  const nudge = engine === 'llama-server' ? { logit_bias: { [spmVocab().tokens.indexOf('<tool_call>')]: 90, [spmVocab().eosId]: 100 } } : {};
  /** For the APIs that have no logit_bias (Anthropic's, Responses): the model with the nudge as its server's default. */
  const toolsModel = engine === 'llama-server' ? 'tiny-nudged' : 'tiny';
  const cityArgs = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']), celsius: z.boolean() });
  const getWeather = {
    type: 'function' as const,
    function: { name: 'get_weather', description: 'The weather in a city', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] }, celsius: { type: 'boolean' } }, required: ['city', 'celsius'] } },
  };
  const getTime = { type: 'function' as const, function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: { zone: { type: 'string', enum: ['UTC', 'CET'] } }, required: ['zone'] } } };

  it.skipIf(skip)('answers the openai SDK’s required tool with one call matching its schema, in the shape of CreateChatCompletionResponse', async () => {
    const answer = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Weather in Oslo?' }], tools: [getWeather], tool_choice: 'required', max_tokens: 150, temperature: 0, ...nudge });
    expect(chatCompletionSchemaErrors(answer).join('\n')).toBe('');
    const choice = answer.choices[0];
    expect(choice?.finish_reason, JSON.stringify(choice)).toBe('tool_calls');
    expect(choice?.message.tool_calls).toHaveLength(1);
    const call = choice?.message.tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('no function call');
    expect(call.function.name).toBe('get_weather');
    expect(cityArgs.safeParse(JSON.parse(call.function.arguments)).success, call.function.arguments).toBe(true);
  });

  it.skipIf(skip)('streams a required call, each chunk in the shape of CreateChatCompletionStreamResponse, that the SDK reassembles', async () => {
    const stream = client.chat.completions.stream({ model: 'tiny', messages: [{ role: 'user', content: 'What time is it?' }], tools: [getTime, getWeather], tool_choice: 'required', max_tokens: 150, temperature: 0, ...nudge });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    stream.on('chunk', (chunk) => chunks.push(chunk));
    const done = await stream.finalChatCompletion();
    for (const chunk of chunks) expect(chatCompletionChunkSchemaErrors(chunk).join('\n'), JSON.stringify(chunk)).toBe('');
    expect(done.choices[0]?.finish_reason).toBe('tool_calls');
    const calls = done.choices[0]?.message.tool_calls ?? [];
    expect(calls).toHaveLength(1);
    const call = calls[0];
    if (call?.type !== 'function') throw new Error('no function call');
    const args: unknown = JSON.parse(call.function.arguments);
    if (call.function.name === 'get_weather') expect(cityArgs.safeParse(args).success, call.function.arguments).toBe(true);
    else expect(call.function.name === 'get_time' && ['UTC', 'CET'].includes((args as { zone?: string }).zone ?? ''), call.function.arguments).toBe(true);
  });

  it.skipIf(skip)('serves the AI SDK’s generateText with a zod tool and LangChain’s bindTools, each a valid call', async () => {
    const provider = createOpenAICompatible({ name: 'llmtray', baseURL: running().endpoint, apiKey: 'any-key-works' });
    const result = await generateText({
      model: provider.chatModel('tiny'),
      tools: { get_weather: tool({ description: 'The weather in a city', inputSchema: cityArgs }) },
      toolChoice: 'required',
      prompt: 'What is the weather in Lima?',
      maxOutputTokens: 150,
      temperature: 0,
      maxRetries: 0,
      providerOptions: { llmtray: nudge },
    });
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]?.toolName).toBe('get_weather');
    expect(result.toolCalls[0]?.invalid ?? false).toBe(false);
    expect(cityArgs.safeParse(result.toolCalls[0]?.input).success).toBe(true);
    const chat = new ChatOpenAI({ model: 'tiny', apiKey: 'any-key-works', configuration: { baseURL: running().endpoint }, maxTokens: 150, temperature: 0, maxRetries: 0, ...(engine === 'llama-server' ? { logitBias: nudge.logit_bias } : {}) });
    const message = await chat.bindTools([getWeather], { tool_choice: 'required' }).invoke('Weather in Paris?');
    expect(message.tool_calls).toHaveLength(1);
    expect(message.tool_calls?.[0]?.name).toBe('get_weather');
    expect(cityArgs.safeParse(message.tool_calls?.[0]?.args).success).toBe(true);
  });

  it.skipIf(skip)('calls the function tool_choice names, of two, in both the chat and the Responses API', async () => {
    const answer = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'What time is it?' }],
      tools: [getWeather, getTime],
      tool_choice: { type: 'function', function: { name: 'get_time' } },
      max_tokens: 150,
      temperature: 0,
      ...nudge,
    });
    const calls = answer.choices[0]?.message.tool_calls ?? [];
    expect(answer.choices[0]?.finish_reason, JSON.stringify(answer.choices[0])).toBe('tool_calls');
    // That function only; more than one call of it is the client's to allow (parallel_tool_calls), as OpenAI's.
    expect(calls.length).toBeGreaterThan(0);
    expect(new Set(calls.map((call) => (call.type === 'function' ? call.function.name : call.type)))).toEqual(new Set(['get_time']));
    const response = await client.responses.create({
      model: toolsModel,
      input: 'Weather in Oslo?',
      tools: [{ type: 'function', name: 'get_time', parameters: getTime.function.parameters, strict: false }, { type: 'function', name: 'get_weather', parameters: getWeather.function.parameters, strict: false }],
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: 150,
      temperature: 0,
    });
    expect(responseSchemaErrors(response).join('\n')).toBe('');
    const named = response.output.filter((item) => item.type === 'function_call').map((item) => item.name);
    expect(named.length).toBeGreaterThan(0);
    expect(new Set(named)).toEqual(new Set(['get_weather']));
  });

  it.skipIf(skip)('refuses a tool_choice naming a function that is not among the tools, naming the field', async () => {
    const refused = await client.chat.completions
      .create({ model: 'tiny', messages: [{ role: 'user', content: 'hi' }], tools: [getWeather], tool_choice: { type: 'function', function: { name: 'get_tide' } }, max_tokens: 4 })
      .then(() => null, (error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toContain('get_tide');
  });

  describe('@anthropic-ai/sdk’s tools', () => {
    const anthropic = () => new Anthropic({ baseURL: running().origin, apiKey: 'any-key-works', maxRetries: 0 });
    // Greedy: a sampled run of the random-weight model now and then wrote the call's JSON to the
    // token limit. The Messages API takes `temperature`; the SDK's types (1.14) no longer list it.
    const greedy: Record<string, unknown> = { temperature: 0 };
    const anthropicTool = (fn: typeof getWeather | typeof getTime): Anthropic.Tool => ({ name: fn.function.name, description: fn.function.description, input_schema: fn.function.parameters as Anthropic.Tool.InputSchema });

    it.skipIf(skip)('gets a tool_use block for the tool tool_choice names, of two, its input as the schema says', async () => {
      const message = await anthropic().messages.create({
        model: toolsModel,
        max_tokens: 150,
        ...greedy,
        tools: [anthropicTool(getWeather), anthropicTool(getTime)],
        tool_choice: { type: 'tool', name: 'get_time' },
        messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
      });
      expect(message.stop_reason, JSON.stringify(message.content)).toBe('tool_use');
      const uses = message.content.filter((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
      expect(uses.length).toBeGreaterThan(0);
      expect(new Set(uses.map((use) => use.name))).toEqual(new Set(['get_time']));
      expect(['UTC', 'CET']).toContain((uses[0]?.input as { zone?: string }).zone);
    });

    it.skipIf(skip)('streams a call for tool_choice any as content_block_start and input_json_delta events, which the SDK assembles', async () => {
      const stream = anthropic().messages.stream({
        model: toolsModel,
        max_tokens: 150,
        ...greedy,
        tools: [anthropicTool(getWeather)],
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'Weather in Lima?' }],
      });
      const kinds: string[] = [];
      stream.on('streamEvent', (event) => kinds.push(event.type === 'content_block_delta' ? `delta:${event.delta.type}` : event.type));
      const message = await stream.finalMessage();
      expect(kinds).toContain('delta:input_json_delta');
      expect(message.stop_reason).toBe('tool_use');
      const use = message.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
      expect(use?.name).toBe('get_weather');
      expect(cityArgs.safeParse(use?.input).success, JSON.stringify(use?.input)).toBe(true);
    });

    it.skipIf(skip)('continues after a tool_result, the history in the model’s template', async () => {
      const history: Anthropic.MessageParam[] = [
        { role: 'user', content: 'What is the weather in Oslo?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo', celsius: true } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '-3 °C, snow' }] },
      ];
      const after = await anthropic().messages.create({ model: 'tiny', max_tokens: 8, tools: [anthropicTool(getWeather)], messages: history });
      expect(after.role).toBe('assistant');
      expect(['max_tokens', 'end_turn', 'tool_use']).toContain(after.stop_reason);
    });
  });

  it.skipIf(skip)('answers responses.create in the shape of Response', async () => {
    const response = await client.responses.create({ model: 'tiny', input: 'hello', max_output_tokens: 16 });
    expect(responseSchemaErrors(response).join('\n')).toBe('');
    expect(response.output_text.length).toBeGreaterThan(0);
  });
});
