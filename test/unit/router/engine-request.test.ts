import { describe, expect, it } from 'vitest';
import { forEngine } from '../../../core/router/engine-request.js';

describe('forEngine', () => {
  it('gives llama-server the schema OpenAI’s json_object means, which that build otherwise ignores', () => {
    const body = { model: 'm', messages: [], response_format: { type: 'json_object' } };
    expect(forEngine(body, 'llama-server')).toEqual({ model: 'm', messages: [], response_format: { type: 'json_object', schema: { type: 'object' } } });
    // The request itself is left as it came, for a retry on another engine.
    expect(body.response_format).toEqual({ type: 'json_object' });
  });

  it('leaves everything else as it came: the embedded engine, a json_object with its own schema, json_schema, no format', () => {
    expect(forEngine({ response_format: { type: 'json_object' } }, 'embedded')).toBeNull();
    expect(forEngine({ response_format: { type: 'json_object', schema: { type: 'array' } } }, 'llama-server')).toBeNull();
    expect(forEngine({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'llama-server')).toBeNull();
    expect(forEngine({ messages: [] }, 'llama-server')).toBeNull();
    expect(forEngine({ response_format: 'json_object' }, 'llama-server')).toBeNull();
  });
});
