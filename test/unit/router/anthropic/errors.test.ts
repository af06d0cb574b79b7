import { describe, expect, it } from 'vitest';
import { anthropicEngineError, anthropicErrorBody, anthropicErrorEvent, anthropicErrorType } from '../../../../core/router/anthropic/errors.js';

describe('anthropicErrorType', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [405, 'invalid_request_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [501, 'api_error'],
    [502, 'api_error'],
    [503, 'overloaded_error'],
    [504, 'timeout_error'],
    [529, 'overloaded_error'],
  ])('gives %i the type %s', (status, type) => {
    expect(anthropicErrorType(status)).toBe(type);
  });
});

describe('anthropicErrorBody', () => {
  it('spells a refusal of the router’s in Anthropic’s shape, llmtray’s code in details.error_code', () => {
    expect(anthropicErrorBody({ status: 503, message: "Model 'm' is quarantined: it crashed.", code: 'model_quarantined' })).toEqual({
      type: 'error',
      error: { type: 'overloaded_error', message: "Model 'm' is quarantined: it crashed.", details: { error_code: 'model_quarantined' } },
      request_id: null,
    });
    expect(anthropicErrorBody({ status: 400, message: 'bad', code: null })).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: 'bad' }, request_id: null });
  });
});

describe('anthropicEngineError', () => {
  it('re-spells llama-server’s OpenAI-shaped error, keeping its message and OpenAI’s code for its cause', () => {
    const engine = JSON.stringify({ error: { code: 400, message: 'the request exceeds the available context size', type: 'exceed_context_size_error', n_prompt_tokens: 3000, n_ctx: 2048 } });
    expect(JSON.parse(anthropicEngineError(engine, 400, 'demo-chat'))).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: "the request exceeds the available context size (3000 prompt tokens; the context of 'demo-chat' holds 2048)",
        details: { error_code: 'context_length_exceeded' },
      },
      request_id: null,
    });
  });

  it('keeps an answer already in Anthropic’s shape as it is', () => {
    const native = JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'no' } });
    expect(anthropicEngineError(native, 404, 'demo-chat')).toBe(native);
  });

  it('quotes what is not JSON, naming the model server and the status', () => {
    const body = JSON.parse(anthropicEngineError('<html>Bad Gateway</html>', 502, 'demo-chat')) as { error: { type: string; message: string } };
    expect(body.error.type).toBe('api_error');
    expect(body.error.message).toContain("'demo-chat'");
    expect(body.error.message).toContain('502');
    expect(body.error.message).toContain('<html>Bad Gateway</html>');
  });
});

describe('anthropicErrorEvent', () => {
  it('is an SSE event with an event: line, which Anthropic’s SDKs need to raise it', () => {
    const event = anthropicErrorEvent(anthropicErrorBody({ status: 504, message: 'hung', code: 'engine_hung' }));
    expect(event.startsWith('event: error\ndata: {')).toBe(true);
    expect(event.endsWith('\n\n')).toBe(true);
    expect(JSON.parse(event.split('\n')[1]!.slice('data: '.length))).toMatchObject({ type: 'error', error: { type: 'timeout_error', details: { error_code: 'engine_hung' } } });
  });
});
