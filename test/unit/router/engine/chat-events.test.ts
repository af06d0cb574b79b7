import { describe, expect, it } from 'vitest';
import { EngineChatEvents } from '../../../../core/router/engine/chat-events.js';

describe('EngineChatEvents: an engine\'s chat SSE read as whole events', () => {
  it('waits for an event split across chunks, even inside a multi-byte character, and joins its data lines', () => {
    const reader = new EngineChatEvents();
    const text = 'data: {"choices":[{"delta":{"content":"é"}}]}\r\n\r\n';
    const bytes = Buffer.from(text);
    const cut = bytes.indexOf(Buffer.from('é')) + 1;
    expect(reader.push(bytes.subarray(0, cut))).toEqual([]);
    expect(reader.push(bytes.subarray(cut))).toEqual([{ kind: 'chunk', chunk: { choices: [{ delta: { content: 'é' } }] } }]);
    expect(reader.push(Buffer.from('data: {"a":\ndata: 1}\n\n'))).toEqual([{ kind: 'chunk', chunk: { a: 1 } }]);
  });

  it('tells a keep-alive, [DONE] and an engine error apart, and skips what is not a JSON object', () => {
    const reader = new EngineChatEvents();
    const events = reader.push(Buffer.from(': ping\n\nevent: x\ndata: not json\n\ndata: [1]\n\ndata: {"error":{"message":"boom"}}\n\ndata: [DONE]\n\n'));
    expect(events).toEqual([{ kind: 'keep-alive' }, { kind: 'error', error: { message: 'boom' } }, { kind: 'done' }]);
  });

  it('ends a last event that lacks its blank line when the stream ends', () => {
    const reader = new EngineChatEvents();
    expect(reader.push(Buffer.from('data: {"id":"x"}'))).toEqual([]);
    expect(reader.end()).toEqual([{ kind: 'chunk', chunk: { id: 'x' } }]);
  });
});
