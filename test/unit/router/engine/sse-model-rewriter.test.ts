import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SseModelRewriter, rewriteModelField } from '../../../../core/router/engine/model-rewriter.js';

const chunkEvent = (content: string, model = 'engine.gguf'): string =>
  `data: ${JSON.stringify({ object: 'chat.completion.chunk', model, choices: [{ index: 0, delta: { content } }] })}`;

/** Feeds `text` to a fresh rewriter cut at `cuts` (byte offsets) and returns everything it emitted. */
function rewriteInPieces(text: string, cuts: number[], model: string): string {
  const bytes = Buffer.from(text);
  const rewriter = new SseModelRewriter(model);
  const bounds = [0, ...[...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b), bytes.length];
  let out = '';
  for (let i = 1; i < bounds.length; i++) out += rewriter.push(bytes.subarray(bounds[i - 1], bounds[i]));
  return out + rewriter.flush();
}

describe('SseModelRewriter', () => {
  it('names the fallback in every data event and leaves other lines alone', () => {
    const stream = `: keep-alive\n${chunkEvent('a')}\n\nevent: ping\n${chunkEvent('b')}\r\n\r\ndata: [DONE]\n\n`;
    const out = rewriteInPieces(stream, [], 'small');
    const lines = out.split('\n');
    expect(lines[0]).toBe(': keep-alive');
    expect(JSON.parse(lines[1]!.slice('data: '.length))).toMatchObject({ model: 'small', choices: [{ delta: { content: 'a' } }] });
    expect(lines[3]).toBe('event: ping');
    expect(lines[4]!.endsWith('\r')).toBe(true);
    expect(JSON.parse(lines[4]!.slice('data: '.length))).toMatchObject({ model: 'small' });
    expect(out).toContain('data: [DONE]\n\n');
    expect(out).not.toContain('engine.gguf');
  });

  it('gives the same output however the stream is cut into chunks, multi-byte characters included', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' }), { minLength: 1, maxLength: 6 }), fc.array(fc.nat(), { maxLength: 8 }), (contents, cuts) => {
        const stream = contents.map((c) => `${chunkEvent(c)}\n\n`).join('') + 'data: [DONE]\n\n';
        const whole = rewriteInPieces(stream, [], 'small');
        expect(rewriteInPieces(stream, cuts, 'small')).toBe(whole);
        const events = whole.split('\n\n').filter((e) => e.startsWith('data: {'));
        expect(events.map((e) => JSON.parse(e.slice(6)).choices[0].delta.content)).toEqual(contents);
        expect(events.every((e) => JSON.parse(e.slice(6)).model === 'small')).toBe(true);
      }),
    );
  });

  it('emits each complete line as soon as its chunk arrives', () => {
    const rewriter = new SseModelRewriter('small');
    expect(rewriter.push(Buffer.from(`${chunkEvent('a')}\n\n${chunkEvent('b').slice(0, 10)}`))).toContain('"model":"small"');
  });
});

describe('rewriteModelField', () => {
  it('replaces a top-level model and refuses what is not a JSON object with one', () => {
    expect(JSON.parse(rewriteModelField('{"model":"x","data":[{"model":"inner"}]}', 'y')!)).toEqual({ model: 'y', data: [{ model: 'inner' }] });
    expect(rewriteModelField('{"id":1}', 'y')).toBeNull();
    expect(rewriteModelField('[{"model":"x"}]', 'y')).toBeNull();
    expect(rewriteModelField('{"model":', 'y')).toBeNull();
  });
});
