// An answer the token limit cut is said, never dropped: a tool call cut midway comes back as the
// partial call (its name, its arguments so far) with the API's own word for the cut (chat
// `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"` with the incomplete tool_use
// last, Responses `status: "incomplete"` with the function_call item `incomplete`), streamed
// and not; a JSON answer cut short comes back as the text so far, `length`.
//
// Through the real daemon with the real SDKs, on each engine: the embedded engine always, a real
// llama-server where LLMTRAY_LLAMA_SERVER names one (skipped, and said so, where not). The model
// is the generated demo-tiny: random weights never close a free string, so a call whose
// argument is a free string (the README's `city: {type: "string"}`) always runs to the limit,
// which is the case a newcomer met as an empty answer. Greedy (temperature 0), so a stream and a
// whole answer to the same request are the same tokens and can be compared.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_SHAPES } from '../../core/catalog/demo/demo-models.js';
import { writeLlamaGguf } from '../../core/catalog/demo/gguf-writer.js';
import { spmVocab } from '../../core/catalog/demo/spm-vocab.js';
import { parsePartialJson } from '../../core/router/anthropic/partial-json.js';
import { makeDataDir, removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';
import { chatCompletionChunkSchemaErrors, chatCompletionSchemaErrors, responseSchemaErrors, streamEventSchemaErrors } from '../support/openai-response-schemas.js';
import { ENGINES, enginesConfigLine, requireEngine } from '../support/engine-cases.js';



/**
 * Few enough that no call's free string can end, enough that it has begun: the demo vocabulary
 * spells JSON nearly a character a token, and on llama-server the model writes the call's name
 * too (`<tool_call>{"name" : "get_weather" ,"arguments":{"city": "`, ~50 tokens).
 */
const LIMIT = 64;
const question = 'What is the weather in Oslo?';
const cityParameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
const weather = { type: 'function' as const, function: { name: 'get_weather', description: 'The weather in a city', parameters: cityParameters } };
const clock = { type: 'function' as const, function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } } };

/**
 * On llama-server a random-weight model writes free text before a call's marker (its grammar
 * for a forced call lets it; daemon-clients-engines.test.ts's header): the marker's token is
 * raised as a model trained for tools would weigh it, as the server's own default
 * (`--logit-bias`), so every API's request reaches the call. The embedded engine forces the
 * call itself and needs none.
 */
function nudgeArgs(): string[] {
  return ['--logit-bias', `${spmVocab().tokens.indexOf('<tool_call>')}+90`];
}

/** The first call of a chat answer, which must be a function call. */
function functionCall(call: OpenAI.ChatCompletionMessageToolCall | undefined): OpenAI.ChatCompletionMessageFunctionToolCall {
  if (call?.type !== 'function') throw new Error(`not a function call: ${JSON.stringify(call)}`);
  return call;
}

describe.each(ENGINES)('answers cut by the token limit on the $engine engine', ({ engine, skip }) => {
  let daemon: DaemonProcess | undefined;
  let workDir: string | undefined;
  let client: OpenAI;
  let anthropic: Anthropic;

  beforeAll(async () => {
    if (skip) return;
    requireEngine(engine);
    workDir = await makeDataDir();
    const model = join(workDir, 'demo-tiny.gguf');
    await writeLlamaGguf(model, DEMO_SHAPES['demo-tiny']);
    const configPath = join(workDir, 'config.yaml');
    const args = engine === 'llama-server' ? `, args: ${JSON.stringify(nudgeArgs())}` : '';
    await writeFile(
      configPath,
      [
        'budget: { reserve: 0 }',
        enginesConfigLine(engine),
        'modelDirs: []',
        'models:',
        `  - { id: tiny, path: ${JSON.stringify(model)}, ctx: 2048, engine: ${engine}${args} }`,
        '',
      ].join('\n'),
    );
    daemon = await startDaemonProcess({ config: configPath, startTimeoutMs: 60_000 });
    client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'any-key-works', maxRetries: 0 });
    // Anthropic's SDK adds /v1/messages to the base URL itself.
    anthropic = new Anthropic({ baseURL: daemon.origin, apiKey: 'any-key-works', maxRetries: 0 });
  });

  afterAll(async () => {
    await daemon?.stop();
    if (daemon) await removeDataDir(daemon.dataDir);
    if (workDir) await removeDataDir(workDir);
  });

  const namedCall: OpenAI.ChatCompletionCreateParamsNonStreaming = {
    model: 'tiny',
    messages: [{ role: 'user', content: question }],
    tools: [weather],
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
    max_tokens: LIMIT,
    temperature: 0,
  };

  it.skipIf(skip)('returns a named call cut midway as the partial call with finish_reason length, and streams the same', async () => {
    const answer = await client.chat.completions.create(namedCall);
    expect(chatCompletionSchemaErrors(answer).join('\n')).toBe('');
    const choice = answer.choices[0];
    expect(choice?.finish_reason, JSON.stringify(choice)).toBe('length');
    expect(choice?.message.tool_calls, JSON.stringify(choice)).toHaveLength(1);
    const call = functionCall(choice?.message.tool_calls?.[0]);
    expect(call.id).not.toBe('');
    expect(call.function.name).toBe('get_weather');
    // The arguments as far as they were written: the free string begun, never ended.
    expect(call.function.arguments.replaceAll(' ', '')).toMatch(/^\{"city":"/);
    expect(() => JSON.parse(call.function.arguments), call.function.arguments).toThrow();
    expect(answer.usage?.completion_tokens).toBe(LIMIT);

    const stream = client.chat.completions.stream({ ...namedCall, stream: true });
    const chunks: OpenAI.ChatCompletionChunk[] = [];
    stream.on('chunk', (chunk) => chunks.push(chunk));
    const streamed = await stream.finalChatCompletion();
    for (const chunk of chunks) expect(chatCompletionChunkSchemaErrors(chunk).join('\n'), JSON.stringify(chunk)).toBe('');
    expect(streamed.choices[0]?.finish_reason).toBe('length');
    expect(streamed.choices[0]?.message.tool_calls).toHaveLength(1);
    const streamedCall = functionCall(streamed.choices[0]?.message.tool_calls?.[0]);
    expect(streamedCall.function).toEqual(call.function);
  });

  it.skipIf(skip)('never answers a call cut inside its name with nothing: the name so far on the embedded engine, the text so far on llama-server', async () => {
    const answer = await client.chat.completions.create({ ...namedCall, tools: [weather, clock], tool_choice: 'required', max_tokens: engine === 'embedded' ? 1 : 12 });
    const choice = answer.choices[0];
    expect(choice?.finish_reason, JSON.stringify(choice)).toBe('length');
    if (engine === 'llama-server') {
      // llama-server (b1-80fb11a) holds a call back until its name is whole; a whole answer cut
      // before then carries what the model wrote as its text (its stream carries nothing: the
      // router has no text to give, a gap its README names).
      expect(choice?.message.tool_calls ?? [], JSON.stringify(choice)).toHaveLength(0);
      expect((choice?.message.content ?? '').replaceAll(' ', ''), JSON.stringify(choice)).toMatch(/^<tool_call>\{"name/);
      return;
    }
    // One token: the embedded engine writes the name under a grammar of the offered names, and
    // not even `get_` of either name is one token in the demo vocabulary.
    expect(choice?.message.tool_calls, JSON.stringify(choice)).toHaveLength(1);
    const call = functionCall(choice?.message.tool_calls?.[0]);
    expect(call.function.name).not.toBe('');
    expect(['get_weather', 'get_time'].some((name) => name.startsWith(call.function.name)), call.function.name).toBe(true);
    expect(call.function.arguments).toBe('');
  });

  it.skipIf(skip)('returns a JSON answer cut short as the text so far, json_object and json_schema alike, in the chat and the Responses API', async () => {
    const schema = { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'], additionalProperties: false };
    const formats: OpenAI.ChatCompletionCreateParams['response_format'][] = [{ type: 'json_object' }, { type: 'json_schema', json_schema: { name: 'weather', schema } }];
    const ask = `${question} Answer in JSON.`;
    for (const response_format of formats) {
      const answer = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: ask }], response_format, max_tokens: LIMIT, temperature: 0 });
      const choice = answer.choices[0];
      expect(choice?.finish_reason, JSON.stringify(choice)).toBe('length');
      const text = choice?.message.content ?? '';
      expect(text.trimStart(), JSON.stringify(choice)).toMatch(/^\{/);
      expect(() => JSON.parse(text), text).toThrow();
    }
    const response = await client.responses.create({ model: 'tiny', input: ask, text: { format: { type: 'json_schema', name: 'weather', schema, strict: true } }, max_output_tokens: LIMIT, temperature: 0 });
    expect(responseSchemaErrors(response).join('\n')).toBe('');
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    expect(response.output_text.trimStart(), JSON.stringify(response.output)).toMatch(/^\{/);
    expect(() => JSON.parse(response.output_text), response.output_text).toThrow();
  });

  it.skipIf(skip)('says max_tokens on the Messages API, the cut tool_use last with its input so far, streamed the same', async () => {
    const request: Anthropic.MessageCreateParamsNonStreaming = {
      model: 'tiny',
      max_tokens: LIMIT,
      tools: [{ name: 'get_weather', description: 'The weather in a city', input_schema: cityParameters as Anthropic.Tool.InputSchema }],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: question }],
      // The Messages API takes `temperature`; the SDK's types no longer list it.
      ...({ temperature: 0 } as Record<string, unknown>),
    };
    const message = await anthropic.messages.create(request);
    expect(message.stop_reason, JSON.stringify(message)).toBe('max_tokens');
    const last = message.content.at(-1);
    if (last?.type !== 'tool_use') throw new Error(`the last block is not a tool_use: ${JSON.stringify(message.content)}`);
    expect(last.name).toBe('get_weather');
    expect(last.id).not.toBe('');
    // The input as far as it was written: the string begun, read as it stands.
    expect(typeof (last.input as { city?: unknown }).city, JSON.stringify(last.input)).toBe('string');
    expect(message.usage.output_tokens).toBe(LIMIT);

    // The stream carries the same call: its partial_json, read as far as it goes, is the whole
    // answer's input. (The SDK's own reading of it, finalMessage's input, leaves out a string it
    // has not seen end, so it is not what is compared.)
    const stream = anthropic.messages.stream(request);
    let partialJson = '';
    stream.on('inputJson', (piece) => {
      partialJson += piece;
    });
    const streamed = await stream.finalMessage();
    expect(streamed.stop_reason).toBe('max_tokens');
    const streamedLast = streamed.content.at(-1);
    if (streamedLast?.type !== 'tool_use') throw new Error(`the last streamed block is not a tool_use: ${JSON.stringify(streamed.content)}`);
    expect(streamedLast.name).toBe('get_weather');
    expect(partialJson.trimStart()).toMatch(/^\{/);
    expect(parsePartialJson(partialJson), partialJson).toEqual(last.input);

    // `any`: a choice llama-server's own /v1/messages reads as meant, so there the request goes to
    // it untranslated (core/router/anthropic/route.ts); it too ends the cut call's tool_use with max_tokens
    // (its whole answer's input is {}: it does not read cut arguments).
    const any = await anthropic.messages.create({ ...request, tool_choice: { type: 'any' } });
    expect(any.stop_reason, JSON.stringify(any)).toBe('max_tokens');
    expect(any.content.at(-1), JSON.stringify(any.content)).toMatchObject({ type: 'tool_use', name: 'get_weather' });
  });

  it.skipIf(skip)('answers an incomplete Response with the cut function_call item incomplete, streamed the same', async () => {
    const request: OpenAI.Responses.ResponseCreateParamsNonStreaming = {
      model: 'tiny',
      input: question,
      tools: [{ type: 'function', name: 'get_weather', description: 'The weather in a city', parameters: cityParameters, strict: false }],
      tool_choice: { type: 'function', name: 'get_weather' },
      max_output_tokens: LIMIT,
      temperature: 0,
    };
    const response = await client.responses.create(request);
    expect(responseSchemaErrors(response).join('\n')).toBe('');
    expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
    const calls = response.output.filter((item) => item.type === 'function_call');
    expect(calls, JSON.stringify(response.output)).toHaveLength(1);
    expect(calls[0]).toMatchObject({ name: 'get_weather', status: 'incomplete' });
    expect(calls[0]?.arguments.replaceAll(' ', '')).toMatch(/^\{"city":"/);

    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await client.responses.create({ ...request, stream: true })) {
      expect(streamEventSchemaErrors(event), event.type).toEqual([]);
      events.push(event);
    }
    const end = events.at(-1);
    if (end?.type !== 'response.incomplete') throw new Error(`the stream ended with ${end?.type ?? 'nothing'}`);
    const streamedCalls = end.response.output.filter((item) => item.type === 'function_call');
    expect(streamedCalls).toHaveLength(1);
    expect(streamedCalls[0]).toMatchObject({ name: 'get_weather', status: 'incomplete', arguments: calls[0]?.arguments });
  });
});
