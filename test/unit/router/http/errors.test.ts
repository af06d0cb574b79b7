// The router's refusals as each API spells them: here the 429 of a model at its limits
// (`parallel`, `queueLimit`), which names the model, the limits and what is ahead, and reaches an
// OpenAI client as OpenAI's request-rate error and an Anthropic client as its rate_limit_error.
import { describe, expect, it } from 'vitest';
import { anthropicErrorBody } from '../../../../core/router/anthropic/errors.js';
import { errorBody, queueFull } from '../../../../core/router/http/errors.js';

describe('queueFull', () => {
  it.each([
    [
      { modelId: 'demo-chat', parallel: 1, queueLimit: 1, served: 1, waiting: 1 },
      "Model 'demo-chat' serves 1 request at once (parallel) and 1 more may wait (queueLimit); 2 are ahead of this one (1 being served, 1 waiting). Retry in 1 s.",
    ],
    [
      { modelId: 'coder', parallel: 4, queueLimit: 0, served: 4, waiting: 0 },
      "Model 'coder' serves 4 requests at once (parallel) and 0 more may wait (queueLimit); 4 are ahead of this one (4 being served, 0 waiting). Retry in 1 s.",
    ],
    [
      { modelId: 'big', queueLimit: 0, served: 0, waiting: 1 },
      "Model 'big' lets 0 requests wait (queueLimit) beside the one it serves next; 1 is waiting ahead of this one (for its load, room or turn). Retry in 1 s.",
    ],
    [
      { modelId: 'big', queueLimit: 2, served: 0, waiting: 3 },
      "Model 'big' lets 2 requests wait (queueLimit) beside the one it serves next; 3 are waiting ahead of this one (for its load, room or turn). Retry in 1 s.",
    ],
  ])('words %j with its numbers', (full, message) => {
    expect(queueFull(full).message).toBe(message);
  });

  it('is a 429 with Retry-After, OpenAI’s request-rate error and Anthropic’s rate_limit_error', () => {
    const error = queueFull({ modelId: 'demo-chat', parallel: 1, queueLimit: 1, served: 1, waiting: 1 });
    expect([error.status, error.source, error.headers]).toEqual([429, 'router', { 'retry-after': '1' }]);
    expect(errorBody(error)).toEqual({ error: { message: error.message, type: 'requests', param: null, code: 'model_queue_full' } });
    expect(anthropicErrorBody(error)).toEqual({
      type: 'error',
      error: { type: 'rate_limit_error', message: error.message, details: { error_code: 'model_queue_full' } },
      request_id: null,
    });
  });
});
