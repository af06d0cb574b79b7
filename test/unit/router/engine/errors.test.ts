import { describe, expect, it } from 'vitest';
import { engineErrorOf, grammarFieldOf } from '../../../../core/router/engine/errors.js';

// What llama-server b1-80fb11a answered a json_schema request on a model whose tokenizer adds a
// space after special tokens (the demo models before their vocabulary was fixed).
const SAMPLERS_FAILED = JSON.stringify({ error: { code: 400, message: 'Failed to initialize samplers: std::exception', type: 'invalid_request_error' } });

describe('engineErrorOf on a grammar llama-server could not start', () => {
  it('names the field the grammar enforces and why llama.cpp fails there, instead of passing "std::exception" on', () => {
    const error = engineErrorOf(SAMPLERS_FAILED, 400, 'demo-chat', 'messages', 'response_format');
    expect(error).toMatchObject({ status: 400, source: 'engine', type: 'invalid_request_error', code: 'grammar_not_started', param: 'response_format' });
    expect(error.message).toContain("could not start the grammar that enforces 'response_format'");
    expect(error.message).toContain('Failed to initialize samplers: std::exception');
    expect(error.message).toMatch(/generation prompt/);
  });

  it('keeps the engine’s words where the request asked for no grammar', () => {
    expect(engineErrorOf(SAMPLERS_FAILED, 400, 'demo-chat', 'messages', null)).toMatchObject({ code: null, param: null, message: 'Failed to initialize samplers: std::exception' });
  });
});

describe('grammarFieldOf', () => {
  it('names the field an engine builds its grammar from, as the client wrote it', () => {
    expect(grammarFieldOf({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } })).toBe('response_format');
    expect(grammarFieldOf({ response_format: { type: 'json_object' }, tools: [{}] })).toBe('response_format');
    expect(grammarFieldOf({ tools: [{ type: 'function' }], tool_choice: 'required' })).toBe('tools');
    expect(grammarFieldOf({ json_schema: { type: 'object' } })).toBe('json_schema');
    expect(grammarFieldOf({ grammar: 'root ::= "a"' })).toBe('grammar');
  });

  it('is null where nothing is constrained: text, no tools, tool_choice none', () => {
    expect(grammarFieldOf({ response_format: { type: 'text' } })).toBeNull();
    expect(grammarFieldOf({ tools: [] })).toBeNull();
    expect(grammarFieldOf({ tools: [{ type: 'function' }], tool_choice: 'none' })).toBeNull();
    expect(grammarFieldOf({ messages: [] })).toBeNull();
  });
});
