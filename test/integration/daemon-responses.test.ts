// `llmtray serve --demo` through OpenAI's Responses API, as an app written for it uses it: the
// official `openai` SDK's `client.responses` against the real daemon process, its real embedded
// engine and the generated demo models. The embedded engine speaks only chat completions, so
// every request here crosses the router's translation both ways; every answer and event is
// checked against OpenAI's published schemas (test/fixtures/openai-openapi/response-schemas.json).
//
// One daemon for the file; demo-tiny serves every test (loaded by the first).
import OpenAI, { BadRequestError } from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { fileDaemon } from '../support/file-daemon.js';
import { expectTokenLogprobs, type ChatTokenLogprob } from '../support/openai-logprobs.js';
import { responseSchemaErrors, streamEventSchemaErrors } from '../support/openai-response-schemas.js';

const live = fileDaemon();

/** The token log probabilities of a Response's (one) output text. */
function outputTextLogprobs(response: OpenAI.Responses.Response): ChatTokenLogprob[] {
  const parts = response.output.flatMap((item) => (item.type === 'message' ? item.content : []));
  expect(parts).toHaveLength(1);
  const part = parts[0];
  return part?.type === 'output_text' ? ((part.logprobs ?? []) as ChatTokenLogprob[]) : [];
}

describe('demo-tiny through the Responses API', () => {
  it('loads demo-tiny on the first request, by its alias, and answers a Response cut at max_output_tokens', async () => {
    const { data, response } = await live.client.responses.create({ model: 'tiny', instructions: 'Be brief.', input: 'Say hello.', max_output_tokens: 8 }).withResponse();
    expect(responseSchemaErrors(data)).toEqual([]);
    expect(data).toMatchObject({ object: 'response', model: 'demo-tiny', status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, instructions: 'Be brief.' });
    expect(data.output_text.length).toBeGreaterThan(0);
    expect(data.usage?.output_tokens).toBe(8);
    expect(data.usage?.input_tokens).toBeGreaterThan(0);
    expect(response.headers.get('x-llmtray-served-by')).toBe('demo-tiny');
  });

  it('streams the same text as the whole answer, as Responses events', async () => {
    const request = { model: 'demo-tiny', input: [{ role: 'user' as const, content: 'Stream please.' }], max_output_tokens: 24, temperature: 0 };
    const whole = await live.client.responses.create(request);
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await live.client.responses.create({ ...request, stream: true })) {
      expect(streamEventSchemaErrors(event), event.type).toEqual([]);
      events.push(event);
    }
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    expect(types.filter((t) => t === 'response.output_text.delta').length).toBeGreaterThan(1);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    const text = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.delta] : [])).join('');
    expect(text).toBe(whole.output_text);
    const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
    expect(last.response).toMatchObject({ model: 'demo-tiny', status: 'incomplete', usage: { output_tokens: 24, input_tokens: whole.usage?.input_tokens } });
    // The SDK's accumulator, which checks every event against the items announced before it, builds the same answer.
    const accumulated = await live.client.responses.stream(request).finalResponse();
    expect(accumulated).toMatchObject({ status: 'incomplete', output_text: whole.output_text });
  });

  it('answers include message.output_text.logprobs with every token’s log probability and top_logprobs alternatives', async () => {
    const request = { model: 'tiny', input: 'say something', max_output_tokens: 10, temperature: 0 } as const;
    const answer = await live.client.responses.create({ ...request, include: ['message.output_text.logprobs'], top_logprobs: 3 });
    expect(responseSchemaErrors(answer)).toEqual([]);
    expect(answer.top_logprobs).toBe(3);
    const tokens = outputTextLogprobs(answer);
    expect(tokens).toHaveLength(answer.usage?.output_tokens ?? -1);
    expect(tokens.map((t) => t.token).join('')).toBe(answer.output_text);
    expectTokenLogprobs(tokens, 3, true);
    for (const t of tokens) expect(t.top_logprobs).toHaveLength(3);
    // include alone: each token's own log probability, no alternatives; neither: none at all.
    const alone = outputTextLogprobs(await live.client.responses.create({ ...request, include: ['message.output_text.logprobs'] }));
    expect(alone.map((t) => [t.token, t.top_logprobs])).toEqual(tokens.map((t) => [t.token, []]));
    expect(outputTextLogprobs(await live.client.responses.create(request))).toEqual([]);
  });

  it('streams each text delta with its own tokens’ log probabilities, the same as the whole answer’s, and the SDK accumulates them', async () => {
    const request = { model: 'tiny', input: 'say something', max_output_tokens: 10, temperature: 0, top_logprobs: 2 } as const;
    const whole = outputTextLogprobs(await live.client.responses.create(request));
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const event of await live.client.responses.create({ ...request, stream: true })) {
      expect(streamEventSchemaErrors(event), event.type).toEqual([]);
      events.push(event);
    }
    const deltas = events.filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === 'response.output_text.delta');
    expect(deltas.length).toBeGreaterThan(1);
    for (const delta of deltas) expect(delta.logprobs.map((t) => t.token).join('')).toBe(delta.delta);
    const streamed = deltas.flatMap((d) => d.logprobs) as ChatTokenLogprob[];
    expect(streamed.map((t) => t.token)).toEqual(whole.map((t) => t.token));
    streamed.forEach((t, i) => expect(t.logprob).toBeCloseTo(whole[i]?.logprob ?? Number.NaN, 6));
    expectTokenLogprobs(streamed, 2, true);
    const done = events.find((e): e is OpenAI.Responses.ResponseTextDoneEvent => e.type === 'response.output_text.done');
    expect(done?.logprobs).toEqual(streamed);
    const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
    expect(outputTextLogprobs(last.response)).toEqual(streamed);
    const accumulated = await live.client.responses.stream(request).finalResponse();
    expect(outputTextLogprobs(accumulated).map((t) => t.token)).toEqual(whole.map((t) => t.token));
  });

  it('answers text.format json_schema with JSON that parses and matches the schema', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 12 }, count: { type: 'integer' }, ok: { type: 'boolean' } },
      required: ['name', 'count', 'ok'],
      additionalProperties: false,
    };
    const answer = await live.client.responses.create({
      model: 'tiny',
      input: 'describe it',
      max_output_tokens: 200,
      temperature: 0,
      text: { format: { type: 'json_schema', name: 'thing', schema, strict: true } },
    });
    expect(responseSchemaErrors(answer)).toEqual([]);
    expect(answer.status).toBe('completed');
    expect(answer.text?.format).toMatchObject({ type: 'json_schema', name: 'thing' });
    const value = JSON.parse(answer.output_text) as Record<string, unknown>;
    expect(Object.keys(value).sort(), answer.output_text).toEqual(['count', 'name', 'ok']);
    expect(typeof value['name']).toBe('string');
    expect((value['name'] as string).length).toBeLessThanOrEqual(12);
    expect(Number.isInteger(value['count'])).toBe(true);
    expect(typeof value['ok']).toBe('boolean');
  });

  it('serves the SDK’s structured outputs: responses.parse with a zod schema gives the parsed object', async () => {
    const Task = z.object({ title: z.string().max(10), done: z.boolean() });
    const parsed = await live.client.responses.parse({ model: 'tiny', input: 'a task', max_output_tokens: 200, temperature: 0, text: { format: zodTextFormat(Task, 'task') } });
    expect(parsed.status).toBe('completed');
    expect(Task.parse(parsed.output_parsed)).toEqual(parsed.output_parsed);
  });

  it('passes the engine’s own refusal on in OpenAI’s error shape: a schema keyword its grammar cannot enforce', async () => {
    const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]+$' } } };
    const error = await live.client.responses.create({ model: 'tiny', input: 'x', text: { format: { type: 'json_schema', name: 'n', schema } } }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).message).toContain("'pattern'");
    expect((error as BadRequestError).headers?.get('x-llmtray-error-source')).toBe('engine');
  });

  it('calls a function tool on the embedded engine when the tool choice requires it: a function_call item whose arguments match the schema', async () => {
    const response = await live.client.responses.create({
      model: 'tiny',
      input: 'What is the weather in Oslo?',
      // An enum: a random-weight demo model writes a free string until the token limit.
      tools: [{ type: 'function', name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Oslo', 'Lima'] } }, required: ['city'], additionalProperties: false }, strict: true }],
      tool_choice: 'required',
      max_output_tokens: 120,
    });
    expect(responseSchemaErrors(response)).toEqual([]);
    const calls = response.output.filter((item) => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    expect(calls[0]?.name).toBe('weather');
    const args = JSON.parse(calls[0]?.arguments ?? 'null') as { city?: unknown };
    expect(Object.keys(args)).toEqual(['city']);
    expect(['Oslo', 'Lima']).toContain(args.city);
    expect(calls[0]?.call_id).toMatch(/^call_/);
  });

  it('refuses a reasoning item given back with a 400 naming input: the embedded engine renders text only', async () => {
    const error = await live.client.responses
      .create({
        model: 'tiny',
        input: [
          { role: 'user', content: 'Hi.' },
          { type: 'reasoning', id: 'rs_1', summary: [], content: [{ type: 'reasoning_text', text: 'Greet them.' }] },
          { role: 'assistant', content: 'Hello.' },
          { role: 'user', content: 'Again.' },
        ],
      })
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).param).toBe('input');
    expect((error as BadRequestError).message).toContain("'demo-tiny'");
  });

  it('answers previous_response_id with a 400: responses are not kept', async () => {
    const error = await live.client.responses.create({ model: 'tiny', input: 'again', previous_response_id: 'resp_earlier' }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(BadRequestError);
    expect((error as BadRequestError).param).toBe('previous_response_id');
  });
});
