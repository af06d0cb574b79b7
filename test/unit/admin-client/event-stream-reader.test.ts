import { describe, expect, it } from 'vitest';
import { createSseParser, readEventStream, type SseMessage } from '../../../core/admin-client/event-stream-reader.js';

function parseAll(chunks: string[]): SseMessage[] {
  const out: SseMessage[] = [];
  const parser = createSseParser((message) => out.push(message));
  for (const chunk of chunks) parser.push(chunk);
  parser.end();
  return out;
}

describe('SSE parser', () => {
  it('reads event and data fields, skips comments, and joins multi-line data', () => {
    expect(parseAll([': heartbeat\n\nevent: SnapshotUpdated\ndata: {"a":1}\n\ndata: one\ndata: two\n\n'])).toEqual([
      { type: 'SnapshotUpdated', data: '{"a":1}' },
      { type: 'message', data: 'one\ntwo' },
    ]);
  });

  it('gives the same events however the bytes are split, CRLF split across chunks included', () => {
    const text = 'event: LogAppended\r\ndata: {"lines":["x"]}\r\n\r\nevent: A\rdata: 1\r\r';
    const whole = parseAll([text]);
    expect(whole).toEqual([
      { type: 'LogAppended', data: '{"lines":["x"]}' },
      { type: 'A', data: '1' },
    ]);
    for (let cut = 1; cut < text.length; cut++) expect(parseAll([text.slice(0, cut), text.slice(cut)])).toEqual(whole);
  });

  it('does not deliver an event whose blank line has not arrived', () => {
    expect(parseAll(['event: A\ndata: 1\n'])).toEqual([]);
  });

  it('decodes a UTF-8 character split between two reads', async () => {
    const bytes = new TextEncoder().encode('data: ünïcode\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 8));
        controller.enqueue(bytes.slice(8));
        controller.close();
      },
    });
    const out: SseMessage[] = [];
    let chunks = 0;
    await readEventStream(body, (m) => out.push(m), () => chunks++);
    expect(out).toEqual([{ type: 'message', data: 'ünïcode' }]);
    expect(chunks).toBe(2);
  });
});
