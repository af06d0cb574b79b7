// The rule that decides whether a failed request was lost: only a fault that can cause that very
// error, on the model asked for, while the request was in flight, explains it.
import { describe, expect, it } from 'vitest';
import { explain, isOpenAIShaped, type FaultRecord } from '../../soak/explain.js';
import type { FaultKind } from '../../soak/profiles.js';
import type { Outcome, RequestError } from '../../soak/request-outcome.js';

const T = 1_000_000;

function fault(kind: FaultKind, modelId: string | null, at = T, until = T + 10_000, id = 1): FaultRecord {
  return { id, kind, modelId, at, until, classifiedAs: null, expected: kind, seen: true, note: '' };
}

const streamError = (code: string): RequestError => ({ class: 'stream-event', status: null, type: 'engine_error', code, message: `the engine ${code}` });
const httpError = (status: number, code: string): RequestError => ({ class: 'http', status, type: 'unavailable_error', code, message: `refused: ${code}` });
const connection: RequestError = { class: 'connection', status: null, type: null, code: 'ECONNREFUSED', message: 'Connection error.' };
const aborted: RequestError = { class: 'aborted', status: null, type: null, code: null, message: 'the client aborted the stream' };

function failed(model: string, error: RequestError, startedAt = T - 1_000, endedAt = T + 1_000, faultId: number | null = null): Outcome {
  return { id: 7, origin: 'client 1', faultId, model, stream: true, startedAt, firstByteAt: null, endedAt, ok: false, error, chunks: 0 };
}

describe('explain', () => {
  it('explains an interrupted stream on the killed model while the kill struck', () => {
    const crash = fault('crash', 'chat-b');
    expect(explain(failed('chat-b', streamError('engine_stream_interrupted')), [crash]).fault).toBe(crash);
    // A request that started inside the window, and one that ended in it.
    expect(explain(failed('chat-b', httpError(502, 'engine_unreachable'), T + 9_000, T + 30_000), [crash]).fault).toBe(crash);
  });

  it('does not explain the same error on another model, or outside the window', () => {
    const crash = fault('crash', 'chat-b');
    expect(explain(failed('chat-a', streamError('engine_stream_interrupted')), [crash]).fault).toBeNull();
    expect(explain(failed('chat-b', streamError('engine_stream_interrupted'), T - 5_000, T - 1), [crash]).fault).toBeNull();
    expect(explain(failed('chat-b', streamError('engine_stream_interrupted'), T + 10_001, T + 12_000), [crash]).fault).toBeNull();
  });

  it('does not explain an error that the fault cannot cause: a request that waited out its bound is lost, whatever struck', () => {
    const faults = [fault('crash', 'chat-b'), fault('hang', 'chat-b', T, T + 10_000, 2), fault('oom', 'chat-b', T, T + 10_000, 3)];
    const found = explain(failed('chat-b', httpError(503, 'model_loading')), faults);
    expect(found.fault).toBeNull();
    expect(found.fault === null && found.why).toMatch(/no injected fault on chat-b can cause 503 model_loading/);
  });

  it('explains engine_hung only by a hang, and a quarantine refusal only by the corrupt model', () => {
    expect(explain(failed('chat-a', httpError(504, 'engine_hung')), [fault('crash', 'chat-a')]).fault).toBeNull();
    expect(explain(failed('chat-a', httpError(504, 'engine_hung')), [fault('hang', 'chat-a')]).fault?.kind).toBe('hang');
    expect(explain(failed('broken', httpError(503, 'model_quarantined')), [fault('invalid', 'broken')]).fault?.kind).toBe('invalid');
    expect(explain(failed('chat-a', httpError(503, 'model_quarantined')), [fault('invalid', 'broken')]).fault).toBeNull();
  });

  it('explains a connection error on any model only while the daemon was down', () => {
    const kill = fault('daemon-kill', null);
    expect(explain(failed('tiny', connection), [kill]).fault).toBe(kill);
    expect(explain(failed('tiny', connection, T + 20_000, T + 20_001), [kill]).fault).toBeNull();
    expect(explain(failed('tiny', connection), [fault('crash', 'tiny')]).fault).toBeNull();
  });

  it('explains a hang-up only for the request the episode itself aborted', () => {
    const abort = fault('client-abort', 'chat-c', T, T + 10_000, 5);
    expect(explain(failed('chat-c', aborted, T - 1_000, T + 1_000, 5), [abort]).fault).toBe(abort);
    expect(explain(failed('chat-c', aborted, T - 1_000, T + 1_000, null), [abort]).fault).toBeNull();
  });
});

describe('isOpenAIShaped', () => {
  it("wants a status with OpenAI's error body, or a stream's error event with one", () => {
    expect(isOpenAIShaped(httpError(503, 'model_quarantined'))).toBe(true);
    expect(isOpenAIShaped(streamError('engine_hung'))).toBe(true);
    expect(isOpenAIShaped({ ...httpError(503, 'x'), code: null })).toBe(false);
    expect(isOpenAIShaped({ ...httpError(503, 'x'), status: null })).toBe(false);
    expect(isOpenAIShaped({ ...streamError('x'), type: '' })).toBe(false);
    expect(isOpenAIShaped(connection)).toBe(false);
    expect(isOpenAIShaped({ class: 'broken', status: null, type: 'x', code: 'y', message: 'a stream cut off' })).toBe(false);
  });
});
