// A streamed chat completion re-told as a Responses stream (core/router/responses/stream.ts):
// the events in OpenAI's order, each numbered and each valid by OpenAI's own ResponseStreamEvent
// schema (test/fixtures/openai-openapi/response-schemas.json), the same text and calls however
// the engine's bytes are cut, and an error event where the engine's stream fails.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ResponseObject, ResponseStreamEvent } from '../../../../core/contracts/protocols/openai-responses.js';
import { ChatStreamToResponses } from '../../../../core/router/responses/stream.js';
import type { ResponseFrame } from '../../../../core/router/responses/translate.js';
import { responseSchemaErrors, streamEventSchemaErrors } from '../../../support/openai-response-schemas.js';

const ENGINE = 'engine.gguf';
const FRAME: ResponseFrame = { id: 'resp_abc', createdAt: 100, model: null, request: { model: 'tiny', input: 'x' } };

function chunk(delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}, logprobs: unknown = null): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: ENGINE, choices: [{ index: 0, delta, finish_reason: finish, logprobs }], ...extra })}\n\n`;
}

const usageChunk = `data: ${JSON.stringify({ id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: ENGINE, choices: [], usage: { prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 } })}\n\n`;

function textStream(pieces: readonly string[], finish: 'stop' | 'length', reasoning: readonly string[] = []): string {
  const thought = reasoning.map((p) => chunk({ reasoning_content: p })).join('');
  return chunk({ role: 'assistant', content: null }) + thought + pieces.map((p) => chunk({ content: p })).join('') + chunk({}, finish) + usageChunk + 'data: [DONE]\n\n';
}

function translate(text: string, cuts: number[] = [], frame: ResponseFrame = FRAME): string {
  const bytes = Buffer.from(text);
  const translator = new ChatStreamToResponses(frame, 'small', () => 200);
  const bounds = [0, ...[...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b), bytes.length];
  let out = '';
  for (let i = 1; i < bounds.length; i++) out += translator.push(bytes.subarray(bounds[i - 1], bounds[i]));
  return out + translator.flush();
}

/** The events in SSE text, checking that each `event:` line names its data's type. */
function eventsOf(sse: string): ResponseStreamEvent[] {
  return sse
    .split('\n\n')
    .filter((block) => block !== '' && !block.startsWith(':'))
    .map((block) => {
      const [eventLine, dataLine, ...rest] = block.split('\n');
      expect(rest).toEqual([]);
      const data = JSON.parse((dataLine ?? '').slice('data: '.length)) as ResponseStreamEvent;
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
}

/** Every event valid by OpenAI's schema, numbered 0, 1, 2, … in order. */
function expectWellFormed(events: ResponseStreamEvent[]): void {
  for (const event of events) expect(streamEventSchemaErrors(event), event.type).toEqual([]);
  expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
}

describe('a chat stream as a Responses stream', () => {
  it('tells the text in OpenAI’s event order, and ends with the whole response', () => {
    const events = eventsOf(translate(textStream(['Hel', 'lo', '.'], 'stop')));
    expectWellFormed(events);
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[0]).toMatchObject({ response: { id: 'resp_abc', status: 'in_progress', model: ENGINE, output: [] } });
    expect(events.find((e) => e.type === 'response.output_text.done')).toMatchObject({ item_id: 'msg_abc', output_index: 0, content_index: 0, text: 'Hello.' });
    const completed = events.at(-1) as unknown as { response: ResponseObject };
    expect(responseSchemaErrors(completed.response)).toEqual([]);
    expect(completed.response).toMatchObject({
      status: 'completed',
      completed_at: 200,
      output: [{ type: 'message', id: 'msg_abc', status: 'completed', content: [{ type: 'output_text', text: 'Hello.' }] }],
      usage: { input_tokens: 11, output_tokens: 3, total_tokens: 14 },
    });
  });

  it('ends with response.incomplete at the length limit, named as the fallback when one answered', () => {
    const events = eventsOf(translate(textStream(['Hel'], 'length'), [], { ...FRAME, model: 'fallback' }));
    expectWellFormed(events);
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' }, model: 'fallback' } });
    expect(events.find((e) => e.type === 'response.output_item.done')).toMatchObject({ item: { status: 'incomplete' } });
  });

  it('ends a stream whose call the token limit cut with response.incomplete, the call incomplete, its arguments as written', () => {
    const sse =
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }] }) +
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":' } }] }) +
      chunk({ tool_calls: [{ index: 1, function: { arguments: '"Ro' } }] }) +
      chunk({}, 'length') +
      usageChunk +
      'data: [DONE]\n\n';
    const events = eventsOf(translate(sse));
    expectWellFormed(events);
    expect(events.flatMap((e) => (e.type === 'response.output_item.done' ? [e.item] : []))).toMatchObject([
      { type: 'function_call', call_id: 'call_a', arguments: '{"city":"Oslo"}', status: 'completed' },
      { type: 'function_call', call_id: 'call_b', arguments: '{"city":"Ro', status: 'incomplete' },
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'response.incomplete', response: { status: 'incomplete', output: [{ status: 'completed' }, { status: 'incomplete' }] } });
  });

  it('tells each tool call as a function_call item, its arguments in pieces, after the text before it', () => {
    const sse =
      chunk({ role: 'assistant', content: 'Calling.' }) +
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '"Oslo"}' } }] }) +
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'now', arguments: '{}' } }] }) +
      chunk({}, 'tool_calls') +
      usageChunk +
      'data: [DONE]\n\n';
    const events = eventsOf(translate(sse));
    expectWellFormed(events);
    expect(events.map((e) => e.type).slice(2)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.find((e) => e.type === 'response.function_call_arguments.done')).toMatchObject({ item_id: 'fc_abc_0', output_index: 1, name: 'weather', arguments: '{"city":"Oslo"}' });
    const completed = events.at(-1) as unknown as { response: ResponseObject };
    expect(completed.response.output).toEqual([
      { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Calling.', annotations: [], logprobs: [] }] },
      { type: 'function_call', id: 'fc_abc_0', call_id: 'call_a', name: 'weather', arguments: '{"city":"Oslo"}', status: 'completed' },
      { type: 'function_call', id: 'fc_abc_1', call_id: 'call_b', name: 'now', arguments: '{}', status: 'completed' },
    ]);
  });

  it('tells a thinking model’s reasoning_content as a reasoning item before the message, its text in pieces', () => {
    const sse =
      chunk({ role: 'assistant', content: null }) +
      chunk({ reasoning_content: 'The user ' }) +
      chunk({ reasoning_content: 'says hi.' }) +
      chunk({ content: 'Hello.' }) +
      chunk({}, 'stop') +
      usageChunk +
      'data: [DONE]\n\n';
    const events = eventsOf(translate(sse));
    expectWellFormed(events);
    expect(events.map((e) => e.type).slice(2)).toEqual([
      'response.output_item.added',
      'response.content_part.added',
      'response.reasoning_text.delta',
      'response.reasoning_text.delta',
      'response.reasoning_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2]).toMatchObject({ output_index: 0, item: { type: 'reasoning', id: 'rs_abc', summary: [], content: [], status: 'in_progress' } });
    expect(events[3]).toMatchObject({ item_id: 'rs_abc', output_index: 0, content_index: 0, part: { type: 'reasoning_text', text: '' } });
    expect(events.find((e) => e.type === 'response.reasoning_text.done')).toMatchObject({ item_id: 'rs_abc', output_index: 0, content_index: 0, text: 'The user says hi.' });
    expect(events.find((e) => e.type === 'response.output_text.delta')).toMatchObject({ item_id: 'msg_abc', output_index: 1 });
    const completed = events.at(-1) as unknown as { response: ResponseObject };
    expect(responseSchemaErrors(completed.response)).toEqual([]);
    expect(completed.response.output).toEqual([
      { type: 'reasoning', id: 'rs_abc', summary: [], content: [{ type: 'reasoning_text', text: 'The user says hi.' }], status: 'completed' },
      { type: 'message', id: 'msg_abc', status: 'completed', role: 'assistant', content: [{ type: 'output_text', text: 'Hello.', annotations: [], logprobs: [] }] },
    ]);
  });

  it('answers reasoning cut off at the length limit with an incomplete reasoning item and an empty message', () => {
    const events = eventsOf(translate(chunk({ reasoning_content: 'Hmm' }) + chunk({}, 'length') + 'data: [DONE]\n\n'));
    expectWellFormed(events);
    const last = events.at(-1) as unknown as { type: string; response: ResponseObject };
    expect(last.type).toBe('response.incomplete');
    expect(responseSchemaErrors(last.response)).toEqual([]);
    expect(last.response.output.map((item) => [item.type, item.status])).toEqual([
      ['reasoning', 'incomplete'],
      ['message', 'incomplete'],
    ]);
  });

  it('carries each chunk’s token log probabilities on its text delta, and all of them on the text’s done events', () => {
    const token = (text: string, logprob: number): Record<string, unknown> => ({ token: text, logprob, bytes: [...Buffer.from(text)], top_logprobs: [{ token: text, logprob, bytes: [...Buffer.from(text)] }] });
    const sse =
      chunk({ content: 'Hel' }, null, {}, { content: [token('Hel', -0.25)], refusal: null }) +
      chunk({ content: 'lo' }, null, {}, { content: [token('lo', -1)], refusal: null }) +
      chunk({}, 'stop') +
      'data: [DONE]\n\n';
    const events = eventsOf(translate(sse));
    expectWellFormed(events);
    const deltas = events.flatMap((e) => (e.type === 'response.output_text.delta' ? [e.logprobs] : []));
    expect(deltas).toEqual([[token('Hel', -0.25)], [token('lo', -1)]]);
    const all = [token('Hel', -0.25), token('lo', -1)];
    expect(events.find((e) => e.type === 'response.output_text.done')).toMatchObject({ text: 'Hello', logprobs: all });
    expect(events.find((e) => e.type === 'response.content_part.done')).toMatchObject({ part: { logprobs: all } });
    const completed = events.at(-1) as unknown as { response: ResponseObject };
    expect(responseSchemaErrors(completed.response)).toEqual([]);
    expect(completed.response.output[0]).toMatchObject({ type: 'message', content: [{ text: 'Hello', logprobs: all }] });
  });

  it('gives the same events however the engine’s bytes are cut', () => {
    const stream = textStream(['Hé', 'llo 🎉', ' wörld'], 'stop', ['Thïnk', 'ing 🤔']);
    const whole = translate(stream);
    expect(whole).toContain('response.reasoning_text.done');
    fc.assert(fc.property(fc.array(fc.nat(), { maxLength: 8 }), (cuts) => translate(stream, cuts) === whole));
  });

  it('keeps the engine’s keep-alives as comments, and answers an empty answer with one empty message', () => {
    const sse = translate(': keep-alive\n\n' + chunk({}, 'stop') + 'data: [DONE]\n\n');
    expect(sse.startsWith(': keep-alive\n\n')).toBe(true);
    const events = eventsOf(sse);
    expectWellFormed(events);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed', response: { output: [{ type: 'message', content: [{ type: 'output_text', text: '' }] }] } });
  });

  it('ends with an error event, numbered after the rest, where the engine fails or its stream breaks off', () => {
    const failed = eventsOf(translate(chunk({ content: 'Hi' }) + `data: ${JSON.stringify({ error: { code: 500, message: 'decode failed', type: 'server_error' } })}\n\n` + chunk({ content: 'late' })));
    expectWellFormed(failed);
    expect(failed.at(-1)).toMatchObject({ type: 'error', code: 'server_error', message: 'decode failed', param: null });
    const cut = eventsOf(translate(chunk({ content: 'Hi' })));
    expectWellFormed(cut);
    expect(cut.at(-1)).toMatchObject({ type: 'error', code: 'engine_stream_interrupted' });
    expect(cut.map((e) => e.type)).not.toContain('response.completed');
  });
});
