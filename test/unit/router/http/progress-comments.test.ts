import { describe, expect, it } from 'vitest';
import { engineAnswerError } from '../../../../core/router/engine/errors.js';
import { progressComment, progressText } from '../../../../core/router/http/progress-comments.js';

describe('progressText', () => {
  it.each([
    [{ kind: 'loading', servedBy: 'demo-chat', fraction: 0.4, estimated: false }, 'loading demo-chat, 40 %, 1.2 s'],
    [{ kind: 'loading', servedBy: 'demo-chat', fraction: 0.999, estimated: true }, 'loading demo-chat, ~99 %, 1.2 s'],
    [{ kind: 'loading', servedBy: 'demo-chat', fraction: null, estimated: false }, 'loading demo-chat, 1.2 s'],
    [{ kind: 'memory', servedBy: 'demo-chat' }, 'waiting for memory for demo-chat, 1.2 s'],
    [{ kind: 'turn', servedBy: 'demo-chat' }, "waiting for demo-chat's turn (requests for other models that waited longer go first), 1.2 s"],
    [{ kind: 'slot', servedBy: 'demo-chat', parallel: 2 }, 'waiting for a free slot of demo-chat (it serves 2 at once), 1.2 s'],
    [{ kind: 'stopping', servedBy: 'demo-chat' }, "waiting for demo-chat's previous server to stop, 1.2 s"],
    [{ kind: 'retry', servedBy: 'demo-chat', failure: 'oom' }, 'demo-chat failed to load (oom) and is being retried, 1.2 s'],
    [{ kind: 'queued', servedBy: 'demo-chat' }, 'waiting to load demo-chat, 1.2 s'],
    [null, 'waiting for demo-chat, 1.2 s'],
  ] as const)('words %j truthfully', (progress, text) => {
    expect(progressText('demo-chat', progress, 1_249)).toBe(text);
  });

  it('names the fallback that will answer', () => {
    expect(progressText('demo-chat', { kind: 'loading', servedBy: 'demo-tiny', fraction: 0.5, estimated: false }, 0)).toBe(
      'loading demo-tiny (the fallback for demo-chat), 50 %, 0.0 s',
    );
  });

  it('is one comment line, whatever the words hold', () => {
    expect(progressComment('a\nb')).toBe(': llmtray: a b\n\n');
  });
});

describe('engineAnswerError', () => {
  it("keeps an engine's message from OpenAI's and Anthropic's error shapes, its type as OpenAI's category and code", () => {
    expect(engineAnswerError('{"error":{"message":"too long","type":"exceed_context_size_error","code":400}}', 400, 'm')).toMatchObject({
      status: 400,
      source: 'engine',
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
      message: 'too long',
    });
    expect(engineAnswerError('{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}', 400, 'm')).toMatchObject({ type: 'invalid_request_error', message: 'bad' });
    expect(engineAnswerError('<html>oops</html>', 500, 'm').message).toBe(`The model server for 'm' answered 500: "<html>oops</html>".`);
  });

  it('calls JSON for a streamed request a bad answer', () => {
    expect(engineAnswerError('{"choices":[]}', 200, 'm')).toMatchObject({ status: 502, code: 'engine_bad_answer' });
  });
});
