import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { objectAt, UsageTap } from '../../../../core/router/engine/usage-tap.js';

/** Feeds `text` to a tap in pieces cut at `cuts`, and returns the figures, whether the first token was seen and after which piece. */
function tapped(text: string, eventStream: boolean, cuts: number[] = [], keepBytes = 0) {
  const bytes = Buffer.from(text);
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Buffer[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    pieces.push(bytes.subarray(from, point));
    from = point;
  }
  let firstTokenAfter: number | null = null;
  let pushed = 0;
  const tap = new UsageTap(eventStream, keepBytes, () => (firstTokenAfter ??= pushed));
  for (const piece of pieces) {
    pushed += piece.length;
    tap.push(piece);
  }
  return { usage: tap.end(), firstTokenAfter, body: tap.body(), truncated: tap.truncated };
}

const sse = (...events: unknown[]): string => events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';

// The embedded engine's stream: a first chunk with an empty content (no token yet), tokens, then usage on the last chunk (completion-handlers.ts).
const EMBEDDED_STREAM = sse(
  { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] },
  { choices: [{ index: 0, delta: { content: 'Hel' } }] },
  { choices: [{ index: 0, delta: { content: 'lo' } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 31, completion_tokens: 2, total_tokens: 33, prompt_tokens_details: { cached_tokens: 24 } } },
);

// llama-server's stream: timings on the last chunk (prompt_n counts only what it evaluated; cache_n what its cache gave).
const LLAMA_SERVER_STREAM = sse(
  { choices: [{ index: 0, delta: { content: 'Hi' } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], timings: { cache_n: 10, prompt_n: 5, prompt_ms: 12.5, predicted_n: 7, predicted_ms: 100, predicted_per_second: 70.1 } },
);

// A llama-server serving Anthropic's Messages API: input tokens without the cache's, in message_start; output in message_delta.
const ANTHROPIC_STREAM = [
  `event: message_start\ndata: ${JSON.stringify({ type: 'message_start', message: { usage: { input_tokens: 4, cache_read_input_tokens: 6, output_tokens: 0 } } })}\n\n`,
  `event: content_block_delta\ndata: ${JSON.stringify({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Yo' } })}\n\n`,
  `event: message_delta\ndata: ${JSON.stringify({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 3 } })}\n\n`,
  `event: message_stop\ndata: {"type":"message_stop"}\n\n`,
].join('');

describe('UsageTap', () => {
  it("reads the embedded engine's usage, cached tokens included, and sees the first token at the first text, not at the empty role chunk", () => {
    const { usage, firstTokenAfter } = tapped(EMBEDDED_STREAM, true);
    expect(usage).toEqual({ promptTokens: 31, cachedTokens: 24, completionTokens: 2, promptMs: null, tokensPerSecond: null });
    expect(firstTokenAfter).toBe(Buffer.byteLength(EMBEDDED_STREAM));
    const cut = EMBEDDED_STREAM.indexOf('Hel');
    expect(tapped(EMBEDDED_STREAM, true, [cut]).firstTokenAfter).toBeGreaterThan(cut);
  });

  it("reads llama-server's timings: prompt = evaluated + cached, its prompt time and speed", () => {
    expect(tapped(LLAMA_SERVER_STREAM, true).usage).toEqual({ promptTokens: 15, cachedTokens: 10, completionTokens: 7, promptMs: 12.5, tokensPerSecond: 70.1 });
  });

  it("reads Anthropic's usage: the prompt is input plus cache reads, the output from message_delta", () => {
    const { usage, firstTokenAfter } = tapped(ANTHROPIC_STREAM, true);
    expect(usage).toMatchObject({ promptTokens: 10, cachedTokens: 6, completionTokens: 3 });
    expect(firstTokenAfter).not.toBeNull();
  });

  it('reads a whole JSON answer at its end, usage and timings together', () => {
    const answer = JSON.stringify({
      choices: [{ message: { role: 'assistant', content: 'ok' } }],
      usage: { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 },
      timings: { prompt_n: 9, cache_n: 0, prompt_ms: 30, predicted_n: 4, predicted_per_second: 12 },
    });
    expect(tapped(answer, false, [5, 40]).usage).toEqual({ promptTokens: 9, cachedTokens: 0, completionTokens: 4, promptMs: 30, tokensPerSecond: 12 });
  });

  it('finds the same figures however the stream is cut into chunks, even inside a character', () => {
    const withMultibyte = LLAMA_SERVER_STREAM.replace('Hi', 'Hé…');
    const whole = tapped(withMultibyte, true).usage;
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 30 }), (cuts) => {
        const { usage, firstTokenAfter } = tapped(withMultibyte, true, cuts);
        expect(usage).toEqual(whole);
        expect(firstTokenAfter).not.toBeNull();
      }),
    );
  });

  it('says nothing it was not told: an answer without usage or timings, and one that is not JSON', () => {
    const none = { promptTokens: null, cachedTokens: null, completionTokens: null, promptMs: null, tokensPerSecond: null };
    expect(tapped(sse({ choices: [{ delta: { content: 'x' } }] }), true).usage).toEqual(none);
    expect(tapped('not json at all', false).usage).toEqual(none);
    expect(tapped('data: {"usage": broken\n\n', true).usage).toEqual(none);
  });

  it('keeps only as much of the body as asked, and says it was cut', () => {
    expect(tapped(EMBEDDED_STREAM, true, [], 0).body).toBe('');
    const kept = tapped(EMBEDDED_STREAM, true, [10, 20], 16);
    expect(kept.body).toBe(EMBEDDED_STREAM.slice(0, 16));
    expect(kept.truncated).toBe(true);
    const all = tapped(EMBEDDED_STREAM, true, [10], 1 << 20);
    expect(all.body).toBe(EMBEDDED_STREAM);
    expect(all.truncated).toBe(false);
  });
});

describe('UsageTap: errors', () => {
  it("keeps the engine's own words for an error it answered whole or ended its stream with", () => {
    const answered = new UsageTap(false, 0, () => {});
    answered.push(Buffer.from(JSON.stringify({ error: { code: 400, message: 'the request exceeds the available context size', type: 'exceed_context_size_error' } })));
    answered.end();
    expect(answered.errorMessage).toBe('the request exceeds the available context size');
    const streamed = new UsageTap(true, 0, () => {});
    streamed.push(Buffer.from(sse({ choices: [{ delta: { content: 'x' } }] }).replace('data: [DONE]\n\n', '') + 'data: {"error":{"message":"generation failed: decode"}}\n\n'));
    streamed.end();
    expect(streamed.errorMessage).toBe('generation failed: decode');
    const fine = new UsageTap(true, 0, () => {});
    fine.push(Buffer.from(EMBEDDED_STREAM));
    fine.end();
    expect(fine.errorMessage).toBeNull();
  });
});

describe('objectAt: one object of a whole answer, without parsing the rest', () => {
  it('finds the last object under a key, nested objects and braces in strings included', () => {
    const answer = JSON.stringify({
      choices: [{ message: { content: 'a } brace, a "quote" and a "usage": {"fake": 1}' } }],
      usage: { prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 4 } },
      data: Array.from({ length: 1000 }, (_, i) => i),
    });
    expect(objectAt(answer, 'usage')).toEqual({ prompt_tokens: 9, prompt_tokens_details: { cached_tokens: 4 } });
    expect(objectAt(JSON.stringify({ a: 1 }, null, 2).replace('"a": 1', '"usage" :\n {"x": "}"}'), 'usage')).toEqual({ x: '}' });
  });

  it('is null where the key is absent, names no object, or the object is cut', () => {
    expect(objectAt('{"choices":[]}', 'usage')).toBeNull();
    expect(objectAt('{"usage":null}', 'usage')).toBeNull();
    expect(objectAt('{"usage":{"prompt_tokens":3', 'usage')).toBeNull();
  });
});
