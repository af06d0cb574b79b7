// What agents and form fillers send, through the real daemon on the embedded engine and the
// generated demo models, with the clients those apps are built on: an Anthropic-style coding
// agent's tools through `@anthropic-ai/sdk` (the router translates Messages to a chat
// completion, and the engine calls the tool by grammar), LangChain's withStructuredOutput and
// OpenAIEmbeddings. Random-weight models write nonsense, so what is checked is the structure:
// a call of the named tool with an input its schema accepts, an object of the schema, vectors
// of the model's width.
import Anthropic from '@anthropic-ai/sdk';
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fileDaemon } from '../support/file-daemon.js';

const live = fileDaemon();

let anthropic: Anthropic;

beforeAll(async () => {
  anthropic = new Anthropic({ baseURL: live.daemon.origin, apiKey: 'any-key-works', maxRetries: 0 });
});

const cityInput = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']) });
const weatherTool: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima'] } }, required: ['city'] },
};

describe('an Anthropic-style agent’s tools on the default engine', () => {
  it('gets a tool_use block for the named tool, its input as the schema says', async () => {
    const message = await anthropic.messages.create({
      model: 'demo-tiny',
      max_tokens: 120,
      tools: [weatherTool],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: 'What is the weather in Oslo?' }],
    });
    expect(message.stop_reason).toBe('tool_use');
    const uses = message.content.filter((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    expect(uses).toHaveLength(1);
    expect(uses[0]?.name).toBe('get_weather');
    expect(cityInput.safeParse(uses[0]?.input).success, JSON.stringify(uses[0]?.input)).toBe(true);
  });

  it('streams the call as content_block_start and input_json_delta events, which the SDK assembles into the same shape', async () => {
    const stream = anthropic.messages.stream({
      model: 'demo-tiny',
      max_tokens: 120,
      tools: [weatherTool],
      tool_choice: { type: 'any' },
      messages: [{ role: 'user', content: 'Weather in Lima?' }],
    });
    const kinds: string[] = [];
    stream.on('streamEvent', (event) => kinds.push(event.type === 'content_block_delta' ? `delta:${event.delta.type}` : event.type));
    const message = await stream.finalMessage();
    expect(kinds).toContain('delta:input_json_delta');
    const use = message.content.find((block): block is Anthropic.ToolUseBlock => block.type === 'tool_use');
    expect(use?.name).toBe('get_weather');
    expect(cityInput.safeParse(use?.input).success, JSON.stringify(use?.input)).toBe(true);
  });

  it('continues after a tool_result, answering the turn', async () => {
    const message = await anthropic.messages.create({
      model: 'demo-tiny',
      max_tokens: 8,
      tools: [weatherTool],
      messages: [
        { role: 'user', content: 'What is the weather in Oslo?' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '-3 °C, snow' }] },
      ],
    });
    expect(message.role).toBe('assistant');
    expect(['max_tokens', 'end_turn', 'tool_use']).toContain(message.stop_reason);
  });
});

describe('LangChain on the default engine', () => {
  const chat = () => new ChatOpenAI({ model: 'demo-tiny', apiKey: 'any-key-works', configuration: { baseURL: live.daemon.endpoint }, maxTokens: 120, maxRetries: 0 });

  it('withStructuredOutput (json_schema) gives an object of the schema', async () => {
    const schema = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']), sunny: z.boolean() });
    const result = await chat().withStructuredOutput(schema, { method: 'jsonSchema', strict: true }).invoke('Describe the weather in Paris.');
    expect(schema.safeParse(result).success, JSON.stringify(result)).toBe(true);
  });

  it('withStructuredOutput (function calling) gives an object of the schema', async () => {
    const schema = z.object({ city: z.enum(['Paris', 'Oslo', 'Lima']) });
    const result = await chat().withStructuredOutput(schema, { method: 'functionCalling', name: 'pick_city' }).invoke('Pick a city.');
    expect(schema.safeParse(result).success, JSON.stringify(result)).toBe(true);
  });

  it('OpenAIEmbeddings gets vectors of the model’s width, the same for the same text, in both its batch and query calls', async () => {
    const embeddings = new OpenAIEmbeddings({ model: 'demo-tiny', apiKey: 'any-key-works', configuration: { baseURL: live.daemon.endpoint }, maxRetries: 0 });
    const [one, two] = await embeddings.embedDocuments(['hello', 'world']);
    const query = await embeddings.embedQuery('hello');
    expect(one?.length).toBeGreaterThan(0);
    expect(two).toHaveLength(one?.length ?? -1);
    expect(query).toHaveLength(one?.length ?? -1);
    // Unit length, as llama-server and OpenAI answer: a dot product is the cosine.
    for (const vector of [one ?? [], two ?? [], query]) expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
    query.forEach((value, i) => expect(value).toBeCloseTo(one?.[i] ?? Number.NaN, 5));
  });
});
