// POST /v1/chat/completions and POST /v1/completions, streamed or not. The two differ only
// in how the prompt is made and how a choice is shaped; everything else is one path.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ChatWrapper, LlamaGrammar, LlamaText, Token } from 'node-llama-cpp';
import { chatPrompt } from './openai/chat-prompt.js';
import { generate, type FinishReason, type GenerationResult, type GenerationTarget } from './generation.js';
import { HttpError } from './http-error.js';
import { chatLogprobs, completionLogprobs, type TokenLogprob } from './openai/logprobs.js';
import { readChatRequest, readCompletionRequest, type SamplingParams } from './openai/openai-requests.js';
import { schemaGrammar, type ResponseFormat } from './openai/response-format.js';
import { startSse } from './sse.js';
import { toolCallsBody, type ToolRequest } from './openai/tool-calls.js';
import { generateWithTools } from './tool-generation.js';
import type { ChatMessage } from './openai/openai-requests.js';

export interface CompletionEngine extends GenerationTarget {
  modelName: string;
  chatWrapper: ChatWrapper;
}

interface Prepared {
  tokens: Token[];
  grammar?: LlamaGrammar;
  extraStops: LlamaText[];
  sampling: SamplingParams;
  stream: boolean;
  includeUsage: boolean;
  logprobs: number | undefined;
}

/** How the two endpoints shape their answers. */
interface Flavor {
  idPrefix: string;
  object: string;
  chunkObject: string;
  firstDelta?: Record<string, unknown>;
  /** `logprobs` undefined: none were asked for (the field is null). */
  choice(text: string, finishReason: FinishReason | null, logprobs?: readonly TokenLogprob[]): Record<string, unknown>;
  deltaChoice(text: string | undefined, finishReason: FinishReason | null, logprobs?: readonly TokenLogprob[]): Record<string, unknown>;
}

const CHAT: Flavor = {
  idPrefix: 'chatcmpl-',
  object: 'chat.completion',
  chunkObject: 'chat.completion.chunk',
  firstDelta: { role: 'assistant', content: '' },
  choice: (text, finishReason, logprobs) => ({ index: 0, message: { role: 'assistant', content: text }, finish_reason: finishReason, logprobs: logprobs ? chatLogprobs(logprobs) : null }),
  deltaChoice: (text, finishReason, logprobs) => ({ index: 0, delta: text === undefined ? {} : { content: text }, finish_reason: finishReason, logprobs: logprobs ? chatLogprobs(logprobs) : null }),
};

const TEXT: Flavor = {
  idPrefix: 'cmpl-',
  object: 'text_completion',
  chunkObject: 'text_completion',
  choice: (text, finishReason, logprobs) => ({ index: 0, text, finish_reason: finishReason, logprobs: logprobs ? completionLogprobs(logprobs) : null }),
  deltaChoice: (text, finishReason, logprobs) => ({ index: 0, text: text ?? '', finish_reason: finishReason, logprobs: logprobs ? completionLogprobs(logprobs) : null }),
};

/** OpenAI's usage; `prompt_tokens_details.cached_tokens` where the path knows it (every generation path does). */
function usageOf(r: Pick<GenerationResult, 'promptTokens' | 'completionTokens'> & { cachedTokens?: number }): Record<string, unknown> {
  return {
    prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, total_tokens: r.promptTokens + r.completionTokens,
    ...(r.cachedTokens === undefined ? {} : { prompt_tokens_details: { cached_tokens: r.cachedTokens } }),
  };
}

/** `timings` where the path measured them (generate's; the tool path's LlamaChat says none). */
function timingsOf(r: { timings?: GenerationResult['timings'] }): { timings?: NonNullable<GenerationResult['timings']> } {
  return r.timings === undefined ? {} : { timings: r.timings };
}

/** An AbortSignal that fires when the client goes away before the answer is complete. */
function clientGone(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort(new Error('the client closed the connection'));
  });
  return controller.signal;
}

/** The fields every answer and chunk of one request share. */
function envelopeFor(engine: CompletionEngine, idPrefix: string): (object: string) => Record<string, unknown> {
  const id = `${idPrefix}${randomUUID().replaceAll('-', '')}`;
  const created = Math.floor(Date.now() / 1000);
  return (object) => ({ id, object, created, model: engine.modelName, system_fingerprint: 'llmtray-embedded' });
}

async function respond(engine: CompletionEngine, flavor: Flavor, p: Prepared, res: ServerResponse): Promise<void> {
  const signal = clientGone(res);
  const envelope = envelopeFor(engine, flavor.idPrefix);
  const input = { tokens: p.tokens, sampling: p.sampling, extraStops: p.extraStops, signal, logprobs: p.logprobs, ...(p.grammar ? { grammar: p.grammar } : {}) };

  if (!p.stream) {
    const result = await generate(engine, input);
    if (signal.aborted) return;
    // llama-server's timings beside OpenAI's usage, as llama-server answers (generation.ts' EngineTimings).
    const body = { ...envelope(flavor.object), choices: [flavor.choice(result.text, result.finishReason, result.logprobs)], usage: usageOf(result), ...timingsOf(result) };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
    return;
  }

  const sse = startSse(res);
  const chunk = (text: string | undefined, finishReason: FinishReason | null, logprobs?: readonly TokenLogprob[]) => ({ ...envelope(flavor.chunkObject), choices: [flavor.deltaChoice(text, finishReason, logprobs)] });
  if (flavor.firstDelta) sse.send({ ...envelope(flavor.chunkObject), choices: [{ index: 0, delta: flavor.firstDelta, finish_reason: null, logprobs: null }] });
  try {
    const result = await generate(engine, { ...input, onText: (text, logprobs) => sse.send(chunk(text, null, p.logprobs === undefined ? undefined : logprobs)) });
    // llama-server puts usage on the last chunk; OpenAI sends it in a chunk of its own when
    // asked (stream_options.include_usage). Both, so either kind of client finds it.
    sse.send({ ...chunk(undefined, result.finishReason), usage: usageOf(result), ...timingsOf(result) });
    if (p.includeUsage) sse.send({ ...envelope(flavor.chunkObject), choices: [], usage: usageOf(result) });
  } catch (error) {
    const e = error instanceof HttpError ? error : new HttpError(500, `generation failed: ${(error as Error).message}`, 'server_error');
    sse.send(e.body());
  }
  sse.done();
}

/**
 * The grammar that enforces a response format, or none for free text. Rejects with a 400 when
 * node-llama-cpp cannot build a grammar from the schema (the keywords were checked already;
 * this is what the generator itself refuses).
 */
async function grammarFor(engine: CompletionEngine, format: ResponseFormat): Promise<LlamaGrammar | undefined> {
  if (format.kind === 'text') return undefined;
  const llama = engine.model.llama;
  if (format.kind === 'json_object') return llama.getGrammarFor('json');
  try {
    return await schemaGrammar(llama, format.schema);
  } catch (error) {
    throw new HttpError(400, `response_format.json_schema '${format.name}' cannot be enforced: ${(error as Error).message}`, 'invalid_request_error', { param: 'response_format' });
  }
}

/**
 * A chat completion with tools: the answer's text as `content` (null when it is only calls),
 * its calls as `tool_calls`, finish_reason `tool_calls` when it ends with them. Streamed, each
 * call comes as OpenAI sends one: a first `delta.tool_calls` chunk with its index, id, type,
 * name and arguments '', then the arguments in fragments.
 */
async function respondWithTools(engine: CompletionEngine, messages: readonly ChatMessage[], tools: ToolRequest, p: Omit<Prepared, 'tokens' | 'extraStops'>, res: ServerResponse): Promise<void> {
  const signal = clientGone(res);
  const envelope = envelopeFor(engine, CHAT.idPrefix);
  const input = { messages, tools, sampling: p.sampling, signal };
  if (!p.stream) {
    const result = await generateWithTools(engine, input);
    if (signal.aborted) return;
    const message = result.toolCalls.length > 0
      ? { role: 'assistant', content: result.text === '' ? null : result.text, tool_calls: toolCallsBody(result.toolCalls) }
      : { role: 'assistant', content: result.text };
    const body = { ...envelope(CHAT.object), choices: [{ index: 0, message, finish_reason: result.finishReason, logprobs: null }], usage: usageOf(result) };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
    return;
  }
  const sse = startSse(res);
  const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({ ...envelope(CHAT.chunkObject), choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }] });
  sse.send(chunk({ role: 'assistant', content: '' }, null));
  try {
    const result = await generateWithTools(engine, {
      ...input,
      onText: (text) => {
        if (text !== '') sse.send(chunk({ content: text }, null));
      },
      onToolCall: (d) => sse.send(chunk({
        tool_calls: [d.id === undefined ? { index: d.index, function: { arguments: d.arguments } } : { index: d.index, id: d.id, type: 'function', function: { name: d.name, arguments: d.arguments } }],
      }, null)),
    });
    sse.send({ ...chunk({}, result.finishReason), usage: usageOf(result) });
    if (p.includeUsage) sse.send({ ...envelope(CHAT.chunkObject), choices: [], usage: usageOf(result) });
  } catch (error) {
    const e = error instanceof HttpError ? error : new HttpError(500, `generation failed: ${(error as Error).message}`, 'server_error');
    sse.send(e.body());
  }
  sse.done();
}

export async function handleChatCompletion(engine: CompletionEngine, body: unknown, _req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = readChatRequest(body);
  if (request.tools !== undefined) {
    await respondWithTools(engine, request.messages, request.tools, { sampling: request.sampling, stream: request.stream, includeUsage: request.includeUsage, logprobs: undefined }, res);
    return;
  }
  const prompt = chatPrompt(engine.model, engine.chatWrapper, request.messages);
  const grammar = await grammarFor(engine, request.responseFormat);
  await respond(engine, CHAT, { tokens: prompt.tokens, extraStops: prompt.stops, ...(grammar ? { grammar } : {}), sampling: request.sampling, stream: request.stream, includeUsage: request.includeUsage, logprobs: request.logprobs }, res);
}

export async function handleCompletion(engine: CompletionEngine, body: unknown, _req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = readCompletionRequest(body);
  const tokens = typeof request.prompt === 'string'
    ? engine.model.tokenize(request.prompt, true, 'trimLeadingSpace')
    : (request.prompt as Token[]);
  const vocab = engine.model.fileInfo.metadata.tokenizer.ggml.tokens.length;
  const bad = tokens.find((t) => t >= vocab);
  if (bad !== undefined) throw new HttpError(400, `prompt token ${bad} is outside the vocabulary (${vocab} tokens)`, 'invalid_request_error');
  await respond(engine, TEXT, { tokens, extraStops: [], sampling: request.sampling, stream: request.stream, includeUsage: request.includeUsage, logprobs: request.logprobs }, res);
}
