import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChatStreamToOllama, type OllamaAnswerFrame } from '../../../../core/router/ollama/stream.js';

/** One OpenAI chunk as the engines write it. */
function chunk(delta: Record<string, unknown>, finish: string | null = null, extra: Record<string, unknown> = {}): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: 'engine', choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
}

function usageChunk(prompt: number, completion: number): string {
  return `data: ${JSON.stringify({ id: 'chatcmpl-7', object: 'chat.completion.chunk', created: 1, model: 'engine', choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } })}\n\n`;
}

function textStream(pieces: readonly string[], finish: 'stop' | 'length' = 'stop'): string {
  return chunk({ role: 'assistant', content: null }) + pieces.map((p) => chunk({ content: p })).join('') + chunk({}, finish) + usageChunk(9, pieces.length) + 'data: [DONE]\n\n';
}

/** A clock that moves 10 ms each time it is read: the durations are then known exactly. */
function steppingClock(): () => number {
  let t = 1000;
  return () => (t += 10);
}

function frame(overrides: Partial<OllamaAnswerFrame> = {}): OllamaAnswerFrame {
  return { kind: 'chat', model: 'demo-chat:latest', stream: true, receivedMs: 900, sentMs: 950, now: steppingClock(), wallClock: () => new Date(0), ...overrides };
}

/** Feeds `text` cut at `cuts` and returns everything written, flush included. */
function translate(text: string, options: Partial<OllamaAnswerFrame> = {}, cuts: number[] = []): string {
  const bytes = Buffer.from(text);
  const translator = new ChatStreamToOllama(frame(options));
  const bounds = [0, ...[...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b), bytes.length];
  let out = '';
  for (let i = 1; i < bounds.length; i++) out += translator.push(bytes.subarray(bounds[i - 1], bounds[i]));
  return out + translator.flush();
}

const lines = (ndjson: string): Record<string, unknown>[] => {
  expect(ndjson.endsWith('\n')).toBe(true);
  return ndjson
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
};

describe('an engine chat stream re-told as Ollama NDJSON', () => {
  it('says each piece of text on a line of its own, then the final object with the counts and measured nanoseconds', () => {
    const out = lines(translate(textStream(['Hel', 'lo'])));
    expect(out).toHaveLength(3);
    expect(out[0]).toEqual({ model: 'demo-chat:latest', created_at: '1970-01-01T00:00:00.000Z', message: { role: 'assistant', content: 'Hel' }, done: false });
    expect(out[1]?.['message']).toEqual({ role: 'assistant', content: 'lo' });
    // The clock read 1010 at the first token, 1020 at the end: received 900, sent 950.
    expect(out[2]).toEqual({
      model: 'demo-chat:latest',
      created_at: '1970-01-01T00:00:00.000Z',
      message: { role: 'assistant', content: '' },
      done: true,
      done_reason: 'stop',
      total_duration: 120e6,
      load_duration: 50e6,
      prompt_eval_count: 9,
      prompt_eval_duration: 60e6,
      eval_count: 2,
      eval_duration: 10e6,
    });
  });

  it('says an answer the token limit cut as done_reason length', () => {
    const out = lines(translate(textStream(['a'], 'length')));
    expect(out.at(-1)?.['done_reason']).toBe('length');
  });

  it("gives /api/generate's pieces as `response`", () => {
    const out = lines(translate(textStream(['x', 'y']), { kind: 'generate' }));
    expect(out.map((line) => line['response'])).toEqual(['x', 'y', '']);
    expect(out[0]).not.toHaveProperty('message');
  });

  it('collects a tool call from its fragments and says it whole, arguments as an object, on a line before the final one', () => {
    const stream =
      chunk({ role: 'assistant', content: null }) +
      chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"ci' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { arguments: 'ty":"Paris"}' } }] }) +
      chunk({}, 'tool_calls') +
      usageChunk(20, 7) +
      'data: [DONE]\n\n';
    const out = lines(translate(stream));
    expect(out).toHaveLength(2);
    expect(out[0]?.['message']).toEqual({ role: 'assistant', content: '', tool_calls: [{ function: { index: 0, name: 'get_weather', arguments: { city: 'Paris' } } }] });
    expect(out[0]?.['done']).toBe(false);
    expect(out[1]?.['done_reason']).toBe('stop');
  });

  it("carries a thinking model's reasoning as `thinking`", () => {
    const stream = chunk({ reasoning_content: 'hmm' }) + chunk({ content: 'ok' }) + chunk({}, 'stop') + 'data: [DONE]\n\n';
    const out = lines(translate(stream));
    expect(out[0]?.['message']).toEqual({ role: 'assistant', content: '', thinking: 'hmm' });
    expect(out[1]?.['message']).toEqual({ role: 'assistant', content: 'ok' });
  });

  it('with stream false, says the whole answer as one object', () => {
    const out = translate(textStream(['Hel', 'lo']), { stream: false });
    const answer = JSON.parse(out) as Record<string, unknown>;
    expect(answer['message']).toEqual({ role: 'assistant', content: 'Hello' });
    expect(answer['done']).toBe(true);
    expect(answer['eval_count']).toBe(2);
  });

  it("ends with the engine's mid-stream error as Ollama's error line, and nothing after it", () => {
    const stream = chunk({ content: 'a' }) + `data: ${JSON.stringify({ error: { message: 'boom', type: 'server_error' } })}\n\n`;
    const out = lines(translate(stream));
    expect(out).toHaveLength(2);
    expect(out[1]).toEqual({ error: 'The model server stopped mid-answer: boom' });
  });

  it("says each piece's token log-probabilities on its line, and all of them in a whole answer", () => {
    const token = (text: string, logprob: number) => ({ token: text, logprob, bytes: [...Buffer.from(text)], top_logprobs: [{ token: text, logprob, bytes: [] }, { token: 'z', logprob: -9, bytes: [] }] });
    const stream = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a' }, logprobs: { content: [token('a', -0.5)] }, finish_reason: null }] })}\n\n` + chunk({ content: 'b' }) + chunk({}, 'stop') + 'data: [DONE]\n\n';
    const expected = { token: 'a', logprob: -0.5, top_logprobs: [{ token: 'a', logprob: -0.5 }, { token: 'z', logprob: -9 }] };
    const out = lines(translate(stream));
    expect(out[0]?.['logprobs']).toEqual([expected]);
    expect(out[1]).not.toHaveProperty('logprobs');
    expect((JSON.parse(translate(stream, { stream: false })) as Record<string, unknown>)['logprobs']).toEqual([expected]);
  });

  it('says the same lines however the network cuts the stream (property)', () => {
    const stream = textStream(['α', 'β', 'γ δ', '{"j":1}']);
    const whole = translate(stream, { wallClock: () => new Date(0), now: () => 5 });
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 12 }), (cuts) => {
        expect(translate(stream, { now: () => 5 }, cuts)).toBe(whole);
      }),
    );
  });
});
