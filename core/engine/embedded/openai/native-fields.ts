// llama.cpp's own request fields (llama-server's /completion options, which its OpenAI endpoints
// take too: tools/server/server-schema.cpp and the chat path of server-common.cpp, in the
// llama.cpp that node-llama-cpp 3.21.1 ships), and what this engine does with each: one table,
// read by the request readers of every endpoint (openai-requests.ts) and printed in the
// engine's README (native-fields.test.ts checks the README against it).
//
// Why a table: the router passes every field outside its own table (OpenAI's and Anthropic's)
// to the engine, trusting the engine to judge it, and llama-server does; an engine that reads
// only the fields it knows answers a client that set `mirostat` or `grammar` as if it had not,
// with no way for the client to know. So each field is honoured (read and acted on), inert (it
// asks nothing of an answer from this engine, with the reason), or refused by name with a 400,
// unless its value asks for nothing (its llama.cpp default, or the value that turns it off).
// Fields the engine read before this table (temperature, top_k, n_predict, logit_bias, …) are
// judged where they are read and are not here. Pure.
import { badRequest } from '../http-error.js';

export type NativeFieldRule =
  | { status: 'honoured'; how: string }
  | { status: 'inert'; why: string }
  /** `neutral`: the values that ask for nothing and pass; none: only null or absence does. */
  | { status: 'refused'; why: string; neutral?: { values: string; test: (value: unknown) => boolean } };

type Neutral = [string, (value: unknown) => boolean];

const honoured = (how: string): NativeFieldRule => ({ status: 'honoured', how });
const inert = (why: string): NativeFieldRule => ({ status: 'inert', why });
const refused = (why: string, neutral?: Neutral): NativeFieldRule => (neutral === undefined ? { status: 'refused', why } : { status: 'refused', why, neutral: { values: neutral[0], test: neutral[1] } });

const isFalse: Neutral = ['false', (v) => v === false];
const isZero: Neutral = ['0', (v) => v === 0];
const isOne: Neutral = ['1', (v) => v === 1];
const isEmptyText: Neutral = ['""', (v) => v === ''];
const isEmptyList: Neutral = ['[]', (v) => Array.isArray(v) && v.length === 0];
const isEmptyObject: Neutral = ['{}', (v) => typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 0];
const isNegative: Neutral = ['-1', (v) => typeof v === 'number' && v < 0];

/** llama.cpp's default sampler chain (common/common.h), by name and as the chars `samplers` also takes. */
const DEFAULT_SAMPLERS = ['penalties', 'dry', 'top_n_sigma', 'top_k', 'typ_p', 'top_p', 'min_p', 'xtc', 'temperature'];
const DEFAULT_SAMPLER_CHARS = 'edskypmxt';

const NO_CONTEXT_SHIFT = 'the engine never shifts the context: generation stops at its end, as llama-server does by default, so no tokens are kept or discarded';
const NATIVE_ANSWER_ONLY = 'shapes llama-server’s own /completion answer; on the OpenAI endpoints, the only ones this engine serves, llama-server ignores it too';
const CHAT_MACHINERY = 'llama-server’s own chat machinery (what its chat endpoint sets for itself), which this engine does not have';
const tunes = (what: string, switchField: string): NativeFieldRule => inert(`tunes ${what}, which \`${switchField}\` turns on and this engine refuses: alone it asks for nothing`);

/** Fields of a generation request (chat completions and completions). */
export const NATIVE_GENERATION_FIELDS: Readonly<Record<string, NativeFieldRule>> = {
  cache_prompt: honoured('false: the slot evaluates the whole prompt again, reusing no cached prefix and restoring no saved conversation (cache_n 0)'),
  ignore_eos: honoured('true: every end-of-generation token the model has is biased to -inf, so the answer runs to max_tokens or a stop string'),
  repeat_last_n: honoured('the tokens the penalties look back on: 0 turns them off, -1 means the slot’s context'),

  n_keep: inert(NO_CONTEXT_SHIFT),
  n_discard: inert(NO_CONTEXT_SHIFT),
  response_fields: inert(NATIVE_ANSWER_ONLY),
  return_tokens: inert(NATIVE_ANSWER_ONLY),
  id_slot: inert('asks for a slot by number; the engine gives the request the first free slot, and the answer is the same on any'),
  backend_sampling: inert('says where the sampler chain runs, not what it samples'),
  sse_ping_interval: inert('comment lines a silent stream sends to keep its connection open, which carry no data; a client reads the same events without them'),
  xtc_threshold: tunes('XTC', 'xtc_probability'),
  dry_base: tunes('DRY', 'dry_multiplier'),
  dry_allowed_length: tunes('DRY', 'dry_multiplier'),
  dry_penalty_last_n: tunes('DRY', 'dry_multiplier'),
  dry_sequence_breakers: tunes('DRY', 'dry_multiplier'),
  mirostat_tau: tunes('Mirostat', 'mirostat'),
  mirostat_eta: tunes('Mirostat', 'mirostat'),
  dynatemp_exponent: tunes('dynamic temperature', 'dynatemp_range'),
  adaptive_decay: tunes('adaptive sampling', 'adaptive_target'),
  grammar_lazy: tunes('a grammar', 'grammar'),
  reasoning_budget_message: tunes('the reasoning budget', 'reasoning_budget_tokens'),

  typical_p: refused('locally typical sampling', ['1', (v) => typeof v === 'number' && v >= 1]),
  mirostat: refused('Mirostat sampling', isZero),
  dynatemp_range: refused('dynamic temperature', isZero),
  dry_multiplier: refused('the DRY repetition penalty', isZero),
  xtc_probability: refused('XTC sampling', isZero),
  top_n_sigma: refused('top-n-sigma sampling', ['-1', (v) => typeof v === 'number' && v <= 0]),
  adaptive_target: refused('adaptive sampling', isNegative),
  min_keep: refused('a minimum of tokens kept by every sampler', isZero),
  samplers: refused('an order of samplers other than llama.cpp’s default', [
    `${JSON.stringify(DEFAULT_SAMPLERS)} or "${DEFAULT_SAMPLER_CHARS}"`,
    (v) => v === DEFAULT_SAMPLER_CHARS || (Array.isArray(v) && v.length === DEFAULT_SAMPLERS.length && v.every((s, i) => s === DEFAULT_SAMPLERS[i])),
  ]),
  grammar: refused('a GBNF grammar; for JSON send response_format', isEmptyText),
  // {} is not nothing here: it asks for any JSON.
  json_schema: refused('llama.cpp’s own JSON schema field; send response_format {"type": "json_schema"}'),
  n_probs: refused('llama.cpp’s probabilities field; send logprobs (and top_logprobs on chat)', isZero),
  post_sampling_probs: refused('probabilities after the sampler chain in llama.cpp’s shape', isFalse),
  n_cmpl: refused('several completions of one prompt; the engine answers one choice per request', isOne),
  n_indent: refused('a minimum indentation that ends the answer', isZero),
  n_cache_reuse: refused('reusing cached chunks by shifting them; the engine reuses the common prefix only', isZero),
  t_max_predict_ms: refused('a time limit on generation', ['0', (v) => typeof v === 'number' && v <= 0]),
  timings_per_token: refused('timings on every streamed chunk; the engine gives them once, with the answer or on the stream’s last chunk', isFalse),
  return_progress: refused('prompt progress events in a stream', isFalse),
  verbose: refused('llama-server’s debug field in answers', isFalse),
  lora: refused('LoRA adapters; the engine loads none', isEmptyList),
  image_data: refused('images; the engine serves text models only', isEmptyList),
  echo: refused('the prompt repeated in the answer', isFalse),
  chat_template_kwargs: refused('arguments to the chat template; the engine renders the model’s template with the messages and tools only', isEmptyObject),
  add_generation_prompt: refused('a chat prompt without the assistant turn’s opening', ['true', (v) => v === true]),
  continue_final_message: refused('continuing the last assistant message instead of answering it', isFalse),
  reasoning_format: refused('separating a thinking model’s reasoning from its answer', ['"none"', (v) => v === 'none']),
  reasoning_budget_tokens: refused('a budget of reasoning tokens', isNegative),
  thinking_budget_tokens: refused('a budget of reasoning tokens', isNegative),
  reasoning_control: refused('ending reasoning at run time', isFalse),
  chat_format: refused(CHAT_MACHINERY, isZero),
  chat_parser: refused(CHAT_MACHINERY, isEmptyText),
  parse_tool_calls: refused(CHAT_MACHINERY, isFalse),
  generation_prompt: refused(CHAT_MACHINERY, isEmptyText),
  grammar_type: refused(CHAT_MACHINERY, isEmptyText),
  grammar_triggers: refused(CHAT_MACHINERY, isEmptyList),
  preserved_tokens: refused(CHAT_MACHINERY, isEmptyList),
  message_delimiters: refused(CHAT_MACHINERY, isEmptyList),
  reasoning_budget_start_tag: refused(CHAT_MACHINERY, isEmptyText),
  reasoning_budget_end_tags: refused(CHAT_MACHINERY, isEmptyList),
  reasoning_budget_end_tag: refused(CHAT_MACHINERY, isEmptyText),
};

/** Fields of an embeddings request. */
export const NATIVE_EMBEDDING_FIELDS: Readonly<Record<string, NativeFieldRule>> = {
  embd_normalize: refused('a normalization other than the Euclidean one the engine applies', ['2', (v) => v === 2]),
};

/**
 * Throws a 400 naming the first field of `body` the table refuses with a value that asks for
 * something. A field set to null is absent, as llama-server reads it.
 */
export function refuseNativeFields(body: Readonly<Record<string, unknown>>, table: Readonly<Record<string, NativeFieldRule>>, endpoint: string): void {
  for (const [field, rule] of Object.entries(table)) {
    const value = body[field];
    if (rule.status !== 'refused' || value === undefined || value === null || rule.neutral?.test(value)) continue;
    const instead = rule.neutral ? `remove it, send ${rule.neutral.values}` : 'remove it';
    throw badRequest(`'${field}' (${rule.why}) is not supported by this engine's ${endpoint}: ${instead}, or serve this model with llama-server`, field);
  }
}

/** What the honoured fields ask of a generation. */
export interface NativeGenerationOptions {
  /** false: evaluate the whole prompt again (llama-server's `cache_prompt`, default true). */
  cachePrompt: boolean;
  /** true: end-of-generation tokens cannot be sampled (llama-server's `ignore_eos`). */
  ignoreEos: boolean;
  /** Tokens the repeat penalties look back on; -1: the slot's context (llama-server's `repeat_last_n`, default 64). */
  repeatLastN: number;
}

function booleanField(body: Readonly<Record<string, unknown>>, name: string, fallback: boolean): boolean {
  const v = body[name];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw badRequest(`'${name}' must be a boolean, got ${JSON.stringify(v)}`, name);
  return v;
}

/** The honoured fields, checked; llama-server's defaults where absent. */
export function readNativeGenerationOptions(body: Readonly<Record<string, unknown>>): NativeGenerationOptions {
  const lastN = body['repeat_last_n'];
  if (lastN !== undefined && lastN !== null && (typeof lastN !== 'number' || !Number.isSafeInteger(lastN) || lastN < -1)) {
    throw badRequest(`'repeat_last_n' must be an integer >= -1, got ${JSON.stringify(lastN)}`, 'repeat_last_n');
  }
  return {
    cachePrompt: booleanField(body, 'cache_prompt', true),
    ignoreEos: booleanField(body, 'ignore_eos', false),
    repeatLastN: typeof lastN === 'number' ? lastN : 64,
  };
}

/** The tables as the README prints them. */
export function nativeFieldTableMarkdown(): string {
  const cell = (rule: NativeFieldRule): string =>
    rule.status === 'honoured' ? `honoured: ${rule.how}` : rule.status === 'inert' ? `inert: ${rule.why}` : `refused: ${rule.why}${rule.neutral ? ` (${rule.neutral.values} taken)` : ''}`;
  const table = (title: string, fields: Readonly<Record<string, NativeFieldRule>>): string => [
    `${title}:`, '', '| field | embedded engine |', '| --- | --- |',
    ...Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1)).map(([field, rule]) => `| \`${field}\` | ${cell(rule)} |`),
  ].join('\n');
  return [table('Chat completions and completions', NATIVE_GENERATION_FIELDS), table('Embeddings', NATIVE_EMBEDDING_FIELDS)].join('\n\n');
}
