// What form fillers and retrieval apps send, through the real daemon on the embedded engine and
// the generated demo models, with the client they are built on: LangChain's
// withStructuredOutput (by json_schema and by function calling) and OpenAIEmbeddings.
// Random-weight models write nonsense, so what is checked is the structure: an object of the
// schema, vectors of the model's width. (An Anthropic-style agent's tools, through
// `@anthropic-ai/sdk`, are in daemon-clients-engines.test.ts, on both engines.)
import { ChatOpenAI, OpenAIEmbeddings } from '@langchain/openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fileDaemon } from '../support/file-daemon.js';

const live = fileDaemon();

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
