// Every request field of the APIs llmtray serves, and what becomes of it: one table, read by the
// validator (a refused field is answered 400 naming it) and printed in core/router/README.md
// (request-fields.test.ts checks the README against it, and the table against OpenAI's published
// request schemas and the Anthropic SDK's, so a field the APIs add is not silently dropped).
//
// Why a table and not checks spread over the handlers: the failure it prevents is silence — an
// app that sets `logit_bias` or `functions` and gets an answer that ignored it has no way to
// know. A field is either honoured (passed to an engine that acts on it), inert (it asks nothing
// of a local answer: an identifier, a hint about OpenAI's own servers), or refused, with the
// reason. A refused field may still take the values that ask for nothing (`n: 1`,
// `store: false`): those pass. Where the engines differ the row says which refuses; fields
// refused by every engine are refused before anything is loaded, the others once the engine is
// known. Fields outside the table (llama.cpp's own `min_p`, `grammar`, `cache_prompt`, …) pass
// to the engine, which judges them. To change a row, change it here: the README follows. Pure.
import type { EngineKind } from '../../contracts/snapshot.js';
import { invalidRequest, type RouterError } from '../http/errors.js';
import { isObject } from '../../common/is-object.js';

export type FieldEndpoint = 'chat.completions' | 'completions' | 'embeddings' | 'messages' | 'responses';

export type FieldRule =
  | { status: 'honoured' }
  | { status: 'inert'; why: string }
  | { status: 'refused'; why: string; accepts?: { values: string; test: (value: unknown) => boolean } };

/** One rule for every engine, or one per engine kind. */
export type FieldStatus = FieldRule | Record<EngineKind, FieldRule>;

const honoured: FieldRule = { status: 'honoured' };
const inert = (why: string): FieldRule => ({ status: 'inert', why });
const refused = (why: string, accepts?: [string, (value: unknown) => boolean]): FieldRule =>
  accepts === undefined ? { status: 'refused', why } : { status: 'refused', why, accepts: { values: accepts[0], test: accepts[1] } };
const perEngine = (embedded: FieldRule, llamaServer: FieldRule): FieldStatus => ({ embedded, 'llama-server': llamaServer });

const isOne: [string, (value: unknown) => boolean] = ['1', (v) => v === 1];
const isFalse: [string, (value: unknown) => boolean] = ['false', (v) => v === false];
const isEmptyObject: [string, (value: unknown) => boolean] = ['{}', (v) => isObject(v) && Object.keys(v).length === 0];
const isEmptyList: [string, (value: unknown) => boolean] = ['[]', (v) => Array.isArray(v) && v.length === 0];
const identifier = inert('an identifier of the end user or request, for OpenAI’s monitoring; nothing local depends on it');
const promptCache = inert('the engine keeps its prompt prefix cache by itself, whatever is asked');
const serviceTier = inert('a tier of OpenAI’s servers; a local engine has one');
const noLogitBias = refused('the embedded engine cannot bias tokens', isEmptyObject);
// The embedded engine refuses these itself too (core/engine/embedded/openai/openai-requests.ts), by
// name; the rows say so, so the table is what a client meets, engine by engine.

const GENERATION: Record<string, FieldStatus> = {
  model: honoured,
  stream: honoured,
  stream_options: honoured,
  max_tokens: honoured,
  temperature: honoured,
  top_p: honoured,
  stop: honoured,
  seed: honoured,
  presence_penalty: honoured,
  frequency_penalty: honoured,
  logprobs: honoured,
  n: refused('the engines answer one choice per request', isOne),
  logit_bias: perEngine(noLogitBias, honoured),
  user: identifier,
};

export const REQUEST_FIELDS: Record<FieldEndpoint, Record<string, FieldStatus>> = {
  'chat.completions': {
    ...GENERATION,
    messages: honoured,
    max_completion_tokens: honoured,
    top_logprobs: honoured,
    response_format: honoured,
    tools: honoured,
    tool_choice: honoured,
    parallel_tool_calls: honoured,
    metadata: inert('tags for stored completions; llmtray stores none'),
    store: refused('llmtray stores no completions', isFalse),
    service_tier: serviceTier,
    safety_identifier: identifier,
    prompt_cache_key: promptCache,
    prompt_cache_retention: promptCache,
    prompt_cache_options: promptCache,
    modalities: refused('the engines answer in text only', ['["text"]', (v) => Array.isArray(v) && v.every((m) => m === 'text')]),
    audio: refused('the engines answer in text only'),
    verbosity: refused('no local model takes a verbosity setting'),
    reasoning_effort: refused('no local engine takes a reasoning effort'),
    web_search_options: refused('the engines cannot search the web'),
    prediction: refused('the engines take no predicted output'),
    moderation: refused('the engines run no moderation'),
    functions: refused('the deprecated function-calling form; send `tools`', isEmptyList),
    function_call: refused('the deprecated function-calling form; send `tool_choice`'),
    // llama.cpp's own sampling fields, which both engines take.
    top_k: honoured,
  },
  completions: {
    ...GENERATION,
    prompt: honoured,
    best_of: refused('the engines answer one choice per request', isOne),
    echo: refused('the engines do not repeat the prompt in the answer', isFalse),
    suffix: refused('a completion with a suffix is llama-server’s /infill', ['""', (v) => v === '']),
    top_k: honoured,
  },
  embeddings: {
    model: honoured,
    input: honoured,
    encoding_format: honoured,
    dimensions: refused('these models give embeddings of one width, not trained to be cut short'),
    user: identifier,
  },
  // The translated path (anthropic/translate.ts): an engine that serves /v1/messages itself
  // takes the request as it is.
  messages: {
    model: honoured,
    messages: honoured,
    max_tokens: honoured,
    system: honoured,
    stop_sequences: honoured,
    stream: honoured,
    temperature: honoured,
    top_p: honoured,
    top_k: honoured,
    tools: honoured,
    tool_choice: honoured,
    metadata: inert('its user_id goes as the chat API’s `user`; nothing local depends on it'),
    service_tier: serviceTier,
    inference_geo: inert('a region of Anthropic’s servers; the engine runs here'),
    speed: serviceTier,
    cache_control: promptCache,
    diagnostics: inert('diagnostics of Anthropic’s servers'),
    workspace_id: identifier,
    user_profile_id: identifier,
    thinking: refused('extended thinking cannot be said in the chat API', ['{"type":"disabled"}', (v) => isObject(v) && v['type'] === 'disabled']),
    output_config: refused('structured output is not translated to the chat API yet'),
    container: refused('code execution containers run on Anthropic’s servers'),
    mcp_servers: refused('MCP servers are called by Anthropic’s servers'),
    context_management: refused('context editing happens on Anthropic’s servers'),
  },
  // Translated to a chat completion for every engine (responses/translate.ts). A field outside
  // this table is refused there too: the translation carries only what it knows.
  responses: {
    model: honoured,
    input: honoured,
    instructions: honoured,
    max_output_tokens: honoured,
    temperature: honoured,
    top_p: honoured,
    stream: honoured,
    stream_options: inert('its one option pads events against length side channels on OpenAI’s servers'),
    text: honoured,
    tools: honoured,
    tool_choice: honoured,
    parallel_tool_calls: honoured,
    metadata: inert('repeated in the answer’s `metadata`; llmtray keeps no responses to look up by it'),
    store: refused('llmtray keeps no responses', isFalse),
    previous_response_id: refused('llmtray keeps no responses to continue; send the whole conversation in `input`'),
    conversation: refused('llmtray keeps no conversations; send the whole conversation in `input`'),
    background: refused('llmtray runs no background responses', isFalse),
    prompt: refused('prompt templates are kept on OpenAI’s servers'),
    // "message.output_text.logprobs" becomes the chat API's logprobs; the translation refuses every other value by name.
    include: honoured,
    top_logprobs: honoured,
    reasoning: refused('no local engine takes a reasoning effort or writes reasoning summaries'),
    max_tool_calls: refused('the chat API cannot bound the number of tool calls'),
    truncation: refused('a prompt over the context is refused by the engine, never cut', ['"disabled"', (v) => v === 'disabled']),
    context_management: refused('context compaction happens on OpenAI’s servers'),
    moderation: refused('the engines run no moderation'),
    service_tier: serviceTier,
    user: identifier,
    safety_identifier: identifier,
    prompt_cache_key: promptCache,
    prompt_cache_retention: promptCache,
    prompt_cache_options: promptCache,
  },
};

/** The rule for `field` on `engine`. */
export function ruleFor(status: FieldStatus, engine: EngineKind): FieldRule {
  return 'status' in status ? status : status[engine];
}

/**
 * The first field of `body` the table refuses, as a 400 naming it and why; null when none.
 * `engine` null: only the fields every engine refuses (checked before the model is loaded).
 * `servedBy` names the model in a refusal that depends on its engine.
 */
export function refusedField(endpoint: FieldEndpoint, body: Record<string, unknown>, engine: EngineKind | null, servedBy?: string): RouterError | null {
  const table = REQUEST_FIELDS[endpoint];
  for (const field of Object.keys(body)) {
    const status = table[field];
    const value = body[field];
    if (status === undefined || value === undefined || value === null) continue;
    const rules = engine === null ? ('status' in status ? [status] : Object.values(status)) : [ruleFor(status, engine)];
    if (!rules.every((rule) => rule.status === 'refused')) continue;
    const rule = rules[0] as Extract<FieldRule, { status: 'refused' }>;
    if (rule.accepts?.test(value) === true) continue;
    const only = rule.accepts === undefined ? '' : ` (only ${rule.accepts.values} is taken)`;
    const where = servedBy === undefined ? '' : ` on the model server for '${servedBy}'`;
    return invalidRequest(field, `'${field}' cannot be honoured${where}: ${rule.why}${only}. llmtray refuses it rather than answer as if it were not sent.`);
  }
  return null;
}

/**
 * `tools` for an engine build that cannot call them (a llama-server without Jinja templates,
 * which would answer as if no tools were sent): a 400 naming the field and the model. Null when
 * the engine can, or none were sent.
 */
export function refusedTools(body: Record<string, unknown>, toolCalls: boolean, servedBy: string): RouterError | null {
  const tools = body['tools'];
  if (toolCalls || !Array.isArray(tools) || tools.length === 0) return null;
  return invalidRequest(
    'tools',
    `'tools' cannot be honoured on the model server for '${servedBy}': its llama-server build has no --jinja, so it renders chat with its built-in templates only and cannot call tools. Use a newer llama-server build (or engine: embedded).`,
  );
}

/** The table as the README prints it: one Markdown table per endpoint. */
export function fieldTableMarkdown(): string {
  const titles: Record<FieldEndpoint, string> = {
    'chat.completions': 'POST /v1/chat/completions',
    completions: 'POST /v1/completions',
    embeddings: 'POST /v1/embeddings',
    messages: 'POST /v1/messages (translated for engines without their own)',
    responses: 'POST /v1/responses (translated to chat completions)',
  };
  const cell = (rule: FieldRule): string =>
    rule.status === 'honoured' ? 'honoured' : rule.status === 'inert' ? `inert: ${rule.why}` : `refused: ${rule.why}${rule.accepts ? ` (${rule.accepts.values} taken)` : ''}`;
  const sections = (Object.keys(titles) as FieldEndpoint[]).map((endpoint) => {
    const rows = Object.entries(REQUEST_FIELDS[endpoint])
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([field, status]) => {
        const embedded = cell(ruleFor(status, 'embedded'));
        const llamaServer = cell(ruleFor(status, 'llama-server'));
        return `| \`${field}\` | ${embedded === llamaServer ? `${embedded} | same` : `${embedded} | ${llamaServer}`} |`;
      });
    return [`${titles[endpoint]}:`, '', '| field | embedded engine | llama-server |', '| --- | --- | --- |', ...rows].join('\n');
  });
  return sections.join('\n\n');
}
