import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AnthropicStreamEvent } from '../../../../core/contracts/protocols/anthropic.js';
import { ChatStreamToMessages, type ChatStreamOptions } from '../../../../core/router/anthropic/stream.js';

const ENGINE = 'engine.gguf';
const OPTIONS: ChatStreamOptions = { model: null, servedBy: 'small' };

/** One OpenAI chunk as llama-server writes it. */
function chunk(delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: ENGINE, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
}

/** A whole OpenAI stream: the role chunk, a chunk per piece, the finish with usage, [DONE]. */
function openAIStream(pieces: readonly string[], finish: 'stop' | 'length', usage = { prompt_tokens: 11, completion_tokens: pieces.length, total_tokens: 11 + pieces.length }): string {
  return chunk({ role: 'assistant', content: null }) + pieces.map((p) => chunk({ content: p })).join('') + chunk({}, finish, { usage }) + 'data: [DONE]\n\n';
}

/** Feeds `text` to a fresh translator cut at `cuts` (byte offsets) and returns everything it wrote, flush included. */
function translate(text: string, cuts: number[] = [], options: ChatStreamOptions = OPTIONS): string {
  const bytes = Buffer.from(text);
  const translator = new ChatStreamToMessages(options);
  const bounds = [0, ...[...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b), bytes.length];
  let out = '';
  for (let i = 1; i < bounds.length; i++) out += translator.push(bytes.subarray(bounds[i - 1], bounds[i]));
  return out + translator.flush();
}

/** The Anthropic events in SSE text, checking that each `event:` line names its data's type. */
function eventsOf(sse: string): AnthropicStreamEvent[] {
  return sse
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      const [eventLine, dataLine, ...rest] = block.split('\n');
      expect(rest).toEqual([]);
      expect(eventLine).toMatch(/^event: /);
      const data = JSON.parse((dataLine ?? '').slice('data: '.length)) as AnthropicStreamEvent;
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
}

const textOf = (events: readonly AnthropicStreamEvent[]): string =>
  events.map((e) => (e.type === 'content_block_delta' && e.delta.type === 'text_delta' ? String(e.delta['text']) : '')).join('');

describe('ChatStreamToMessages', () => {
  it('tells parallel tool calls as one tool_use block each, in order, whatever the chunk cuts, their arguments joined to the JSON sent', () => {
    const stream =
      chunk({ role: 'assistant', content: 'Two calls.' }) +
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '{"pa' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'th":"/a"}' } }] }) +
      chunk({ tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'list', arguments: '{}' } }] }) +
      chunk({}, 'tool_calls', { usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } }) +
      'data: [DONE]\n\n';
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 6 }), (cuts) => {
        const events = eventsOf(translate(stream, cuts));
        const starts = events.filter((e) => e.type === 'content_block_start');
        expect(starts.map((e) => [e.index, e.content_block])).toEqual([
          [0, { type: 'text', text: '' }],
          [1, { type: 'tool_use', id: 'call_a', name: 'read', input: {} }],
          [2, { type: 'tool_use', id: 'call_b', name: 'list', input: {} }],
        ]);
        const json = (index: number): string =>
          events.map((e) => (e.type === 'content_block_delta' && e.index === index && e.delta.type === 'input_json_delta' ? String(e.delta['partial_json']) : '')).join('');
        expect(JSON.parse(json(1))).toEqual({ path: '/a' });
        expect(JSON.parse(json(2))).toEqual({});
        expect(events.filter((e) => e.type === 'content_block_stop').map((e) => e.index)).toEqual([0, 1, 2]);
        expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'tool_use' } });
      }),
    );
  });

  it('ends a stream whose call the token limit cut with max_tokens, not tool_use, its partial_json as written', () => {
    const stream =
      chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 'read', arguments: '' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":"/b/lo' } }] }) +
      chunk({}, 'length', { usage: { prompt_tokens: 5, completion_tokens: 9, total_tokens: 14 } }) +
      'data: [DONE]\n\n';
    const events = eventsOf(translate(stream));
    const json = events.map((e) => (e.type === 'content_block_delta' && e.delta.type === 'input_json_delta' ? String(e.delta['partial_json']) : '')).join('');
    expect(json).toBe('{"path":"/b/lo');
    expect(events.find((e) => e.type === 'content_block_start')).toMatchObject({ content_block: { type: 'tool_use', id: 'call_a', name: 'read' } });
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'max_tokens' } });
  });

  it('tells a chat stream as Anthropic’s event sequence, with the stop reason and the usage at the end', () => {
    const events = eventsOf(translate(openAIStream(['Hel', 'lo'], 'length')));
    expect(events.map((e) => e.type)).toEqual([
      'message_start',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0]).toMatchObject({ message: { id: 'chatcmpl-7', type: 'message', role: 'assistant', content: [], model: ENGINE, stop_reason: null } });
    expect(events[1]).toEqual({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } });
    expect(textOf(events)).toBe('Hello');
    expect(events[5]).toEqual({ type: 'message_delta', delta: { stop_reason: 'max_tokens', stop_sequence: null }, usage: { output_tokens: 2, input_tokens: 11 } });
  });

  it('reads end_turn for a stop, and counts cached prompt tokens apart from input_tokens', () => {
    const usage = { prompt_tokens: 40, completion_tokens: 1, total_tokens: 41, prompt_tokens_details: { cached_tokens: 30 } };
    const events = eventsOf(translate(openAIStream(['x'], 'stop', usage)));
    expect(events.find((e) => e.type === 'message_delta')).toMatchObject({ delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 1, input_tokens: 10 } });
  });

  it('takes the usage from OpenAI’s own usage chunk (include_usage: no choices) after the finish', () => {
    const stream =
      chunk({ content: 'a' }) + chunk({}, 'stop') + `data: ${JSON.stringify({ id: 'c', model: ENGINE, choices: [], usage: { prompt_tokens: 5, completion_tokens: 1 } })}\n\n` + 'data: [DONE]\n\n';
    expect(eventsOf(translate(stream)).find((e) => e.type === 'message_delta')).toMatchObject({ usage: { output_tokens: 1, input_tokens: 5 } });
  });

  it('names the fallback in message_start when told to, the engine’s model otherwise', () => {
    const stream = openAIStream(['a'], 'stop');
    expect(eventsOf(translate(stream, [], { model: 'small', servedBy: 'small' }))[0]).toMatchObject({ message: { model: 'small' } });
    expect(eventsOf(translate(stream))[0]).toMatchObject({ message: { model: ENGINE } });
  });

  it('writes no content block for an answer without text, but still the whole message', () => {
    const events = eventsOf(translate(chunk({ role: 'assistant', content: '' }) + chunk({}, 'length') + 'data: [DONE]\n\n'));
    expect(events.map((e) => e.type)).toEqual(['message_start', 'message_delta', 'message_stop']);
    expect(events[1]).toMatchObject({ usage: { output_tokens: 0 } });
  });

  it('turns the engine’s keep-alive comments into ping events and ignores event:/id: lines', () => {
    const stream = ':\n\n' + 'event: chunk\nid: 4\n' + chunk({ content: 'a' }) + ': ping\n\n' + chunk({}, 'stop') + 'data: [DONE]\n\n';
    expect(eventsOf(translate(stream)).map((e) => e.type)).toEqual([
      'ping',
      'message_start',
      'content_block_start',
      'content_block_delta',
      'ping',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
  });

  it('ends with an error event, and nothing after it, when the engine reports an error mid-stream', () => {
    const stream = chunk({ content: 'partial' }) + `data: ${JSON.stringify({ error: { code: 500, message: 'decode failed', type: 'server_error' } })}\n\n` + chunk({ content: 'never' }) + 'data: [DONE]\n\n';
    const events = eventsOf(translate(stream));
    expect(events.map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta', 'error']);
    expect(events.at(-1)).toEqual({ type: 'error', error: { type: 'api_error', message: 'decode failed', details: { error_code: 'server_error' } }, request_id: null });
  });

  it('ends with an error event, not message_stop, when the engine’s stream ends without finishing the answer', () => {
    const events = eventsOf(translate(chunk({ content: 'cut' })));
    expect(events.at(-1)).toMatchObject({ type: 'error', error: { type: 'api_error', details: { error_code: 'engine_stream_interrupted' } } });
    expect(events.some((e) => e.type === 'message_stop')).toBe(false);
    expect((events.at(-1) as { error: { message: string } }).error.message).toContain("'small'");
  });

  it('finishes a stream that ended after its finish_reason even without [DONE], and a last event without its blank line', () => {
    const withoutDone = chunk({ content: 'a' }) + chunk({}, 'stop').trimEnd();
    expect(eventsOf(translate(withoutDone)).map((e) => e.type).at(-1)).toBe('message_stop');
  });

  it('emits each event as soon as the engine’s chunk completes it', () => {
    const translator = new ChatStreamToMessages(OPTIONS);
    const first = chunk({ content: 'a' });
    const out = translator.push(Buffer.from(first + chunk({ content: 'b' }).slice(0, 12)));
    expect(eventsOf(out).map((e) => e.type)).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
  });

  it('gives the same events however the engine’s stream is cut into chunks, multi-byte characters and CRLF included', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: 'grapheme', minLength: 1 }), { maxLength: 6 }),
        fc.constantFrom('stop' as const, 'length' as const),
        fc.boolean(),
        fc.array(fc.nat(), { maxLength: 10 }),
        (pieces, finish, crlf, cuts) => {
          const lf = openAIStream(pieces, finish);
          const stream = crlf ? lf.replaceAll('\n', '\r\n') : lf;
          const whole = translate(stream);
          expect(translate(stream, cuts)).toBe(whole);
          const events = eventsOf(whole);
          expect(textOf(events)).toBe(pieces.join(''));
          const types = events.map((e) => e.type);
          expect(types[0]).toBe('message_start');
          expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
          const opened = pieces.length > 0;
          expect(types.includes('content_block_start')).toBe(opened);
          expect(types.filter((t) => t === 'content_block_delta')).toHaveLength(pieces.length);
          expect(events.find((e) => e.type === 'message_delta')).toMatchObject({
            delta: { stop_reason: finish === 'stop' ? 'end_turn' : 'max_tokens' },
            usage: { output_tokens: pieces.length, input_tokens: 11 },
          });
        },
      ),
    );
  });
});
