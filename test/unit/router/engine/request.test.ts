import { describe, expect, it } from 'vitest';
import { forEngine, inEngineWords } from '../../../../core/router/engine/request.js';
import { misreadByEngineConversion } from '../../../../core/router/anthropic/route.js';

const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } };
const time = { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } };

describe('forEngine', () => {
  it('gives llama-server the schema OpenAI’s json_object means, which that build otherwise ignores', () => {
    const body = { model: 'm', messages: [], response_format: { type: 'json_object' } };
    expect(forEngine(body, 'llama-server', 'm')).toEqual({ ok: true, value: { model: 'm', messages: [], response_format: { type: 'json_object', schema: { type: 'object' } } } });
    // The request itself is left as it came, for a retry on another engine.
    expect(body.response_format).toEqual({ type: 'json_object' });
  });

  it('says a named function as llama-server reads it: required, with that function the only tool', () => {
    const body = { model: 'm', messages: [], tools: [weather, time], tool_choice: { type: 'function', function: { name: 'get_time' } } };
    expect(forEngine(body, 'llama-server', 'm')).toEqual({ ok: true, value: { model: 'm', messages: [], tools: [time], tool_choice: 'required' } });
    expect(body.tools).toHaveLength(2);
    // Both rewrites at once.
    const both = forEngine({ ...body, response_format: { type: 'json_object' } }, 'llama-server', 'm');
    expect(both.ok && both.value).toMatchObject({ tools: [time], tool_choice: 'required', response_format: { schema: { type: 'object' } } });
  });

  it('refuses by name a tool choice llama-server cannot honour, and a name that is not among the tools', () => {
    const allowed = forEngine({ tools: [weather], tool_choice: { type: 'allowed_tools', allowed_tools: { mode: 'auto', tools: [] } } }, 'llama-server', 'tiny');
    expect(allowed.ok ? null : allowed.error).toMatchObject({ status: 400, param: 'tool_choice.type', message: expect.stringContaining("'tiny'") });
    const unknown = forEngine({ tools: [weather, time], tool_choice: { type: 'function', function: { name: 'get_tide' } } }, 'llama-server', 'tiny');
    expect(unknown.ok ? null : unknown.error).toMatchObject({ status: 400, param: 'tool_choice.function.name', message: expect.stringContaining('get_weather, get_time') });
    const nameless = forEngine({ tools: [weather], tool_choice: { type: 'function', function: {} } }, 'llama-server', 'tiny');
    expect(nameless.ok ? null : nameless.error).toMatchObject({ param: 'tool_choice.function.name' });
  });

  it('leaves everything else as it came: the embedded engine, a json_object with its own schema, json_schema, string tool choices, no format', () => {
    const none = { ok: true, value: null };
    expect(forEngine({ response_format: { type: 'json_object' } }, 'embedded', 'm')).toEqual(none);
    expect(forEngine({ tools: [weather], tool_choice: { type: 'function', function: { name: 'get_weather' } } }, 'embedded', 'm')).toEqual(none);
    expect(forEngine({ response_format: { type: 'json_object', schema: { type: 'array' } } }, 'llama-server', 'm')).toEqual(none);
    expect(forEngine({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'llama-server', 'm')).toEqual(none);
    expect(forEngine({ tools: [weather], tool_choice: 'required' }, 'llama-server', 'm')).toEqual(none);
    expect(forEngine({ messages: [] }, 'llama-server', 'm')).toEqual(none);
    expect(forEngine({ response_format: 'json_object' }, 'llama-server', 'm')).toEqual(none);
  });

  it('inEngineWords gives the body to send either way', () => {
    const body = { tools: [weather] };
    expect(inEngineWords(body, 'llama-server', 'm')).toEqual({ ok: true, value: body });
  });
});

describe('misreadByEngineConversion', () => {
  it('sends through the translation what llama-server’s own Messages conversion misreads', () => {
    expect(misreadByEngineConversion({ tool_choice: { type: 'tool', name: 'get_weather' } })).toBe(true);
    expect(misreadByEngineConversion({ tool_choice: { type: 'none' } })).toBe(true);
    expect(misreadByEngineConversion({ tool_choice: { type: 'any', disable_parallel_tool_use: true } })).toBe(true);
    expect(misreadByEngineConversion({ tool_choice: { type: 'any' } })).toBe(false);
    expect(misreadByEngineConversion({ tool_choice: { type: 'auto' } })).toBe(false);
    expect(misreadByEngineConversion({})).toBe(false);
  });
});
