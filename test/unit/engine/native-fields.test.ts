// llama.cpp's own request fields on the embedded engine (core/engine/embedded/openai/native-fields.ts):
// each honoured, inert or refused by name, read by the request readers of every endpoint. Pure:
// no model.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../../../core/engine/embedded/http-error.js';
import { NATIVE_EMBEDDING_FIELDS, NATIVE_GENERATION_FIELDS, nativeFieldTableMarkdown, type NativeFieldRule } from '../../../core/engine/embedded/openai/native-fields.js';
import { readChatRequest, readCompletionRequest, readEmbeddingRequest } from '../../../core/engine/embedded/openai/openai-requests.js';
import { REQUEST_FIELDS, type FieldStatus } from '../../../core/router/openai/request-fields.js';

const CHAT = { messages: [{ role: 'user', content: 'hi' }] };
const COMPLETION = { prompt: 'hi' };

/**
 * The fields llama-server's completion and chat endpoints read in the llama.cpp that
 * node-llama-cpp 3.21.1 ships: tools/server/server-schema.cpp's make_llama_cmpl_schema (names
 * and aliases), the chat path of server-common.cpp (oaicompat_chat_params_parse), id_slot and
 * message_delimiters (server-context.cpp), and the older image_data the README still names.
 */
const LLAMA_CPP_FIELDS = [
  'verbose', 'timings_per_token', 'stream', 'stream_options', 'cache_prompt', 'return_tokens', 'return_progress', 'sse_ping_interval',
  'n_predict', 'max_completion_tokens', 'max_tokens', 'n_indent', 'n_keep', 'n_discard', 'n_cmpl', 'n', 'n_cache_reuse', 't_max_predict_ms',
  'response_fields', 'top_k', 'top_p', 'min_p', 'top_n_sigma', 'xtc_probability', 'xtc_threshold', 'typical_p', 'temperature',
  'dynatemp_range', 'dynatemp_exponent', 'repeat_last_n', 'repeat_penalty', 'frequency_penalty', 'presence_penalty', 'dry_multiplier',
  'dry_base', 'dry_allowed_length', 'dry_penalty_last_n', 'mirostat', 'mirostat_tau', 'mirostat_eta', 'adaptive_target', 'adaptive_decay',
  'seed', 'n_probs', 'logprobs', 'min_keep', 'backend_sampling', 'post_sampling_probs', 'lora', 'dry_sequence_breakers', 'json_schema',
  'grammar', 'grammar_lazy', 'chat_format', 'reasoning_format', 'generation_prompt', 'parse_tool_calls', 'chat_parser',
  'continue_final_message', 'echo', 'preserved_tokens', 'grammar_triggers', 'reasoning_control', 'reasoning_budget_tokens',
  'reasoning_budget_start_tag', 'reasoning_budget_end_tags', 'reasoning_budget_end_tag', 'reasoning_budget_message', 'logit_bias',
  'ignore_eos', 'stop', 'samplers', 'grammar_type',
  'messages', 'prompt', 'tools', 'tool_choice', 'response_format', 'parallel_tool_calls', 'add_generation_prompt', 'chat_template_kwargs',
  'reasoning_effort', 'thinking_budget_tokens', 'top_logprobs',
  'id_slot', 'message_delimiters', 'image_data',
];

/** Fields the request readers judged before the table (openai-requests.ts, logprobs.ts, response-format.ts, tool-calls.ts). */
const READ_BY_THE_REQUEST_READERS = [
  'stream', 'stream_options', 'n_predict', 'max_completion_tokens', 'max_tokens', 'n', 'top_k', 'top_p', 'min_p', 'temperature',
  'repeat_penalty', 'frequency_penalty', 'presence_penalty', 'seed', 'logprobs', 'top_logprobs', 'logit_bias', 'stop', 'messages', 'prompt',
  'tools', 'tool_choice', 'response_format', 'parallel_tool_calls', 'reasoning_effort',
];

function refusal(read: () => unknown): HttpError | undefined {
  try {
    read();
  } catch (error) {
    if (error instanceof HttpError) return error;
    throw error;
  }
  return undefined;
}

/** A value of each JSON kind; the first the rule's neutral test does not take asks for something. */
function askingValue(rule: Extract<NativeFieldRule, { status: 'refused' }>): unknown {
  return [true, 3, 0.5, -5, 'x', ['x'], { a: 1 }].find((v) => !rule.neutral?.test(v));
}

/** The values the README shows as taken: JSON, alternatives joined by " or ". */
function neutralValues(rule: Extract<NativeFieldRule, { status: 'refused' }>): unknown[] {
  return (rule.neutral?.values.split(' or ') ?? []).map((v) => JSON.parse(v) as unknown);
}

const refusedRows = (table: Readonly<Record<string, NativeFieldRule>>) =>
  Object.entries(table).flatMap(([field, rule]) => (rule.status === 'refused' ? [[field, rule] as const] : []));

describe('llama.cpp’s own fields on the embedded engine', () => {
  it('judges every field llama-server reads, each once: in the table or by the request readers', () => {
    const judged = new Set([...Object.keys(NATIVE_GENERATION_FIELDS), ...READ_BY_THE_REQUEST_READERS]);
    expect(LLAMA_CPP_FIELDS.filter((f) => !judged.has(f))).toEqual([]);
    expect(Object.keys(NATIVE_GENERATION_FIELDS).filter((f) => READ_BY_THE_REQUEST_READERS.includes(f))).toEqual([]);
  });

  it.each(refusedRows(NATIVE_GENERATION_FIELDS))('refuses %s on chat and completions when it asks for something, naming it, and takes it at a value that asks for nothing, or null', (field, rule) => {
    const value = askingValue(rule);
    for (const read of [() => readChatRequest({ ...CHAT, [field]: value }), () => readCompletionRequest({ ...COMPLETION, [field]: value })]) {
      const error = refusal(read);
      expect(error?.status, `${field}: ${JSON.stringify(value)}`).toBe(400);
      expect(error?.extra['param']).toBe(field);
      expect(error?.message).toContain(`'${field}'`);
      expect(error?.message).toContain(rule.why);
    }
    for (const value of [...neutralValues(rule), null]) {
      expect(refusal(() => readChatRequest({ ...CHAT, [field]: value })), `${field}: ${JSON.stringify(value)}`).toBeUndefined();
      expect(refusal(() => readCompletionRequest({ ...COMPLETION, [field]: value })), `${field}: ${JSON.stringify(value)}`).toBeUndefined();
    }
  });

  it('takes the inert fields at any value', () => {
    const inert = Object.entries(NATIVE_GENERATION_FIELDS).filter(([, rule]) => rule.status === 'inert').map(([field]) => field);
    expect(inert.length).toBeGreaterThan(5);
    for (const field of inert) {
      for (const value of [true, 7, 'x', ['x'], { a: 1 }]) expect(refusal(() => readCompletionRequest({ ...COMPLETION, [field]: value })), field).toBeUndefined();
    }
  });

  it('reads cache_prompt, ignore_eos and repeat_last_n into the sampling, llama-server’s defaults where absent', () => {
    expect(readCompletionRequest(COMPLETION).sampling).toMatchObject({ cachePrompt: true, ignoreEos: false, repeatLastN: 64 });
    expect(readCompletionRequest({ ...COMPLETION, cache_prompt: false, ignore_eos: true, repeat_last_n: -1 }).sampling).toMatchObject({ cachePrompt: false, ignoreEos: true, repeatLastN: -1 });
    expect(readChatRequest({ ...CHAT, cache_prompt: false, ignore_eos: true, repeat_last_n: 0 }).sampling).toMatchObject({ cachePrompt: false, ignoreEos: true, repeatLastN: 0 });
    for (const [field, value] of [['cache_prompt', 'no'], ['ignore_eos', 1], ['repeat_last_n', -2], ['repeat_last_n', 1.5]] as const) {
      expect(refusal(() => readCompletionRequest({ ...COMPLETION, [field]: value }))?.extra['param']).toBe(field);
    }
  });

  it('refuses ignore_eos where a grammar ends the answer: with tools or a JSON response format', () => {
    const tools = [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: {} } } }];
    expect(refusal(() => readChatRequest({ ...CHAT, ignore_eos: true, tools }))?.extra['param']).toBe('ignore_eos');
    expect(refusal(() => readChatRequest({ ...CHAT, ignore_eos: true, response_format: { type: 'json_object' } }))?.extra['param']).toBe('ignore_eos');
    expect(refusal(() => readChatRequest({ ...CHAT, ignore_eos: false, tools }))).toBeUndefined();
  });

  it('refuses embd_normalize other than the Euclidean normalization on embeddings', () => {
    expect(refusal(() => readEmbeddingRequest({ input: 'hi', embd_normalize: 2 }))).toBeUndefined();
    for (const [field, rule] of refusedRows(NATIVE_EMBEDDING_FIELDS)) {
      expect(refusal(() => readEmbeddingRequest({ input: 'hi', [field]: askingValue(rule) }))?.extra['param']).toBe(field);
    }
  });

  it('refuses no field the router honours or finds inert for the embedded engine', () => {
    const embeddedRule = (status: FieldStatus) => ('status' in status ? status : status.embedded);
    const passed = Object.values(REQUEST_FIELDS).flatMap((fields) => Object.entries(fields).filter(([, status]) => embeddedRule(status).status !== 'refused').map(([field]) => field));
    expect(passed.length).toBeGreaterThan(20);
    expect(passed.filter((field) => NATIVE_GENERATION_FIELDS[field]?.status === 'refused' || NATIVE_EMBEDDING_FIELDS[field]?.status === 'refused')).toEqual([]);
  });

  it('is printed in core/engine/embedded/README.md as it is', () => {
    const readme = readFileSync(new URL('../../../core/engine/embedded/README.md', import.meta.url), 'utf8');
    const printed = /<!-- native-fields:start -->\n([\s\S]*?)\n<!-- native-fields:end -->/.exec(readme)?.[1];
    expect(printed, 'regenerate the table between the native-fields markers from nativeFieldTableMarkdown()').toBe(nativeFieldTableMarkdown());
  });
});
