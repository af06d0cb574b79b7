// Every field of Ollama's generation requests (`/api/chat`, `/api/generate`, `/api/embed`,
// `/api/embeddings`) and of their `options`, and what llmtray makes of it: one table, read by the
// translation (request.ts: a refused field is a 400 naming it) and printed in
// core/router/README.md (fields.test.ts checks the README against it).
//
// Why a table of its own and not rows in openai/request-fields.ts: these are Ollama's fields,
// translated before any engine sees them; the OpenAI table is about what an engine is sent. The
// failure both prevent is the same: an app that sets `mirostat` and gets an answer that ignored
// it cannot know. A field outside the table is refused too (Ollama's API may grow; llmtray says
// it does not know the field rather than drop it). Pure.

export type OllamaFieldRule =
  | { status: 'honoured'; as: string }
  | { status: 'refused'; why: string; accepts?: { values: string; test: (value: unknown) => boolean } };

export type OllamaEndpoint = 'chat' | 'generate' | 'embed' | 'embeddings';

const honoured = (as: string): OllamaFieldRule => ({ status: 'honoured', as });
const refused = (why: string, accepts?: [string, (value: unknown) => boolean]): OllamaFieldRule =>
  accepts === undefined ? { status: 'refused', why } : { status: 'refused', why, accepts: { values: accepts[0], test: accepts[1] } };

const isFalse: [string, (value: unknown) => boolean] = ['false', (v) => v === false];
const isEmptyString: [string, (value: unknown) => boolean] = ['""', (v) => v === ''];
const isEmptyList: [string, (value: unknown) => boolean] = ['[]', (v) => Array.isArray(v) && v.length === 0];

const model = honoured('the model, `name:tag` (`:latest` is the untagged id)');
const keepAlive = honoured("the model's idle TTL from now on (never past a pin); 0 unloads");
const options = honoured('mapped per option (the options table)');
const logprobs = honoured('the chat API’s `logprobs`: each piece’s tokens with their log-probabilities as `logprobs`');
const topLogprobs = honoured('the chat API’s `top_logprobs` (0 to 20, with `logprobs`): each token’s alternatives as its `top_logprobs`');

const GENERATION = {
  model,
  stream: honoured('NDJSON lines by default; one JSON object with `false`'),
  format: honoured('`response_format`: "json" a JSON object, a schema enforced as `json_schema`'),
  think: honoured("llama-server: `chat_template_kwargs.enable_thinking`, the answer's reasoning as `thinking`; refused by the embedded engine, which renders no thinking"),
  keep_alive: keepAlive,
  options,
  logprobs,
  top_logprobs: topLogprobs,
};

export const OLLAMA_FIELDS: Record<OllamaEndpoint, Record<string, OllamaFieldRule>> = {
  chat: {
    ...GENERATION,
    messages: honoured('the chat messages: `images` as image parts (vision models only), `tool_calls` with their arguments as JSON, `tool_name` as the call it answers'),
    tools: honoured('function tools'),
    // Not Ollama's fields: the AI SDK's ollama-ai-provider-v2 (3.6.0) sends them at the top
    // level, where Ollama's own server drops them unread. Honoured, since dropping them is what
    // the table exists to prevent.
    temperature: honoured('`temperature` (sent here by ollama-ai-provider-v2; `options.temperature` wins)'),
    top_p: honoured('`top_p` (sent here by ollama-ai-provider-v2; `options.top_p` wins)'),
    max_output_tokens: honoured('`max_tokens` (sent here by ollama-ai-provider-v2; `options.num_predict` wins)'),
    tool_choice: honoured('`tool_choice`: "auto", "none", "required" or {"type": "function", "name"} (sent by ollama-ai-provider-v2)'),
  },
  generate: {
    ...GENERATION,
    prompt: honoured('one user message; empty: the model is loaded (or unloaded with keep_alive 0)'),
    system: honoured('a system message before it'),
    images: honoured('image parts of the user message (vision models only)'),
    suffix: refused('fill-in-the-middle is llama-server’s /infill, not translated from Ollama’s API', isEmptyString),
    template: refused('the model’s own chat template renders every prompt; a Go template is not run', isEmptyString),
    raw: refused('every prompt goes through the model’s chat template', isFalse),
    context: refused('llmtray keeps no token context between requests; send the conversation to /api/chat', isEmptyList),
    width: refused('the engines generate no images'),
    height: refused('the engines generate no images'),
    steps: refused('the engines generate no images'),
  },
  embed: {
    model,
    input: honoured('`input` of /v1/embeddings: a text or a list'),
    truncate: refused('an input over the context is refused by the engine, never cut', isFalse),
    dimensions: refused('these models give embeddings of one width, not trained to be cut short'),
    keep_alive: keepAlive,
    options,
  },
  embeddings: {
    model,
    prompt: honoured('`input` of /v1/embeddings'),
    keep_alive: keepAlive,
    options,
  },
};

const loading = 'how a model is loaded is llmtray’s, set per model in config.yaml (ctx, gpuLayers, args)';
const sampler = (name: string): string => `the ${name} sampler is not mapped to llmtray’s engines`;

/** `options`: each honoured one is the chat API's field named in `as`. */
export const OLLAMA_OPTIONS: Record<string, OllamaFieldRule> = {
  num_predict: honoured('`max_tokens` (-1 and -2: no limit but the context)'),
  temperature: honoured('`temperature`'),
  top_k: honoured('`top_k`'),
  top_p: honoured('`top_p`'),
  min_p: honoured('`min_p`'),
  seed: honoured('`seed`'),
  stop: honoured('`stop`'),
  repeat_penalty: honoured('`repeat_penalty`'),
  presence_penalty: honoured('`presence_penalty`'),
  frequency_penalty: honoured('`frequency_penalty`'),
  num_ctx: honoured("checked against the model's context: up to it, served; above it, refused naming the config's `ctx`"),
  num_keep: refused('the engines keep no tokens apart when the context fills'),
  typical_p: refused(sampler('locally typical')),
  tfs_z: refused(sampler('tail-free')),
  repeat_last_n: refused('the repeat penalty’s window is the engine’s default'),
  penalize_newline: refused('the repeat penalty’s treatment of newlines is the engine’s default'),
  mirostat: refused(sampler('Mirostat'), ['0', (v) => v === 0]),
  mirostat_tau: refused(sampler('Mirostat')),
  mirostat_eta: refused(sampler('Mirostat')),
  numa: refused(loading),
  num_batch: refused(loading),
  num_gpu: refused(loading),
  main_gpu: refused(loading),
  low_vram: refused(loading),
  f16_kv: refused(loading),
  logits_all: refused(loading),
  vocab_only: refused(loading),
  use_mmap: refused(loading),
  use_mlock: refused(loading),
  embedding_only: refused(loading),
  num_thread: refused(loading),
};

/** The first refused field of `body` by `table`, as `[field, why]`; null when none. Fields with null values ask for nothing. */
export function refusedOllamaField(table: Record<string, OllamaFieldRule>, body: Record<string, unknown>): { field: string; why: string } | null {
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined || value === null) continue;
    const rule = table[field];
    if (rule === undefined) return { field, why: 'it is not a field of Ollama’s API that llmtray knows' };
    if (rule.status === 'honoured' || rule.accepts?.test(value) === true) continue;
    return { field, why: `${rule.why}${rule.accepts === undefined ? '' : ` (only ${rule.accepts.values} is taken)`}` };
  }
  return null;
}

/** The tables as core/router/README.md prints them. */
export function ollamaFieldTableMarkdown(): string {
  const cell = (rule: OllamaFieldRule): string => (rule.status === 'honoured' ? `honoured: ${rule.as}` : `refused: ${rule.why}${rule.accepts ? ` (${rule.accepts.values} taken)` : ''}`);
  const table = (title: string, rows: Record<string, OllamaFieldRule>): string =>
    [
      `${title}:`,
      '',
      '| field | what llmtray does |',
      '| --- | --- |',
      ...Object.entries(rows)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([field, rule]) => `| \`${field}\` | ${cell(rule)} |`),
    ].join('\n');
  return [
    table('POST /api/chat', OLLAMA_FIELDS.chat),
    table('POST /api/generate', OLLAMA_FIELDS.generate),
    table('POST /api/embed', OLLAMA_FIELDS.embed),
    table('POST /api/embeddings', OLLAMA_FIELDS.embeddings),
    table('`options` (every route above)', OLLAMA_OPTIONS),
  ].join('\n\n');
}
