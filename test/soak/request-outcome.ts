// One chat request through the official openai client, streamed or not, and what came of it in
// one shape: when it started, when its first byte came, how it ended, and — if it failed — the
// error as the client saw it, sorted into the classes the invariants judge.
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';

/**
 * - http: an error response (status + OpenAI's error body);
 * - stream-event: an error event in a stream that had answered 200 (OpenAI's error, no status);
 * - aborted: the client itself gave up (AbortSignal);
 * - timeout: the client's own deadline passed;
 * - connection: no answer at all — refused, reset, or cut mid-answer (only a dead daemon may do that);
 * - broken: an answer that came but is wrong (another model, a stream cut without an error);
 * - other: anything else, e.g. a bug in the soak; never explained.
 */
export type ErrorClass = 'http' | 'stream-event' | 'aborted' | 'timeout' | 'connection' | 'broken' | 'other';

export interface RequestError {
  class: ErrorClass;
  status: number | null;
  type: string | null;
  code: string | null;
  message: string;
}

export interface Outcome {
  id: number;
  /** Who sent it: 'client 2', or the fault episode ('crash #3'). */
  origin: string;
  /** The fault episode that sent it, or null for traffic. */
  faultId: number | null;
  model: string;
  stream: boolean;
  /** Epoch ms. */
  startedAt: number;
  /** Epoch ms of the first answer byte the client saw (the first chunk, or the whole reply); null if none. */
  firstByteAt: number | null;
  endedAt: number;
  ok: boolean;
  error: RequestError | null;
  chunks: number;
}

export interface ChatRequest {
  model: string;
  stream: boolean;
  maxTokens: number;
  prompt: string;
  signal?: AbortSignal;
  /** Called with the count of content chunks so far, for each one (streamed requests only). */
  onChunk?: (count: number) => void;
}

export type RequestResult = Omit<Outcome, 'id' | 'origin' | 'faultId'>;

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED']);

/** The error as the invariants judge it. Pure. */
export function classifyError(error: unknown): RequestError {
  if (error instanceof APIUserAbortError) return { class: 'aborted', status: null, type: null, code: null, message: error.message };
  if (error instanceof APIConnectionTimeoutError) return { class: 'timeout', status: null, type: null, code: null, message: error.message };
  if (error instanceof APIConnectionError) return { class: 'connection', status: null, type: null, code: null, message: error.message };
  if (error instanceof APIError) {
    const body = (error.error ?? null) as { message?: unknown } | null;
    return {
      class: error.status === undefined ? 'stream-event' : 'http',
      status: error.status ?? null,
      type: typeof error.type === 'string' ? error.type : null,
      code: typeof error.code === 'string' ? error.code : null,
      message: typeof body?.message === 'string' ? body.message : error.message,
    };
  }
  // undici ends a body whose socket closed mid-answer with TypeError('terminated'), its cause the socket error.
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  const code = typeof cause?.code === 'string' ? cause.code : (error as { code?: unknown } | null)?.code;
  const message = error instanceof Error ? error.message : String(error);
  if ((error instanceof TypeError && message === 'terminated') || (typeof code === 'string' && CONNECTION_CODES.has(code))) {
    return { class: 'connection', status: null, type: null, code: typeof code === 'string' ? code : null, message };
  }
  return { class: 'other', status: null, type: null, code: null, message: error instanceof Error ? `${error.name}: ${message}` : message };
}

const broken = (message: string): RequestError => ({ class: 'broken', status: null, type: null, code: null, message });

/** Sends one request and resolves with its outcome; never rejects. */
export async function sendChat(client: OpenAI, request: ChatRequest): Promise<RequestResult> {
  const startedAt = Date.now();
  let firstByteAt: number | null = null;
  let chunks = 0;
  const done = (ok: boolean, error: RequestError | null): RequestResult => ({
    model: request.model, stream: request.stream, startedAt, firstByteAt, endedAt: Date.now(), ok, error, chunks,
  });
  const body = { model: request.model, messages: [{ role: 'user' as const, content: request.prompt }], max_tokens: request.maxTokens };
  const options = request.signal === undefined ? {} : { signal: request.signal };
  try {
    if (!request.stream) {
      const reply = await client.chat.completions.create(body, options);
      firstByteAt = Date.now();
      if (reply.model !== request.model) return done(false, broken(`answered by '${reply.model}'`));
      if (reply.choices.length === 0) return done(false, broken('a reply without choices'));
      return done(true, null);
    }
    const stream = await client.chat.completions.create({ ...body, stream: true }, options);
    let finished = false;
    for await (const chunk of stream) {
      firstByteAt ??= Date.now();
      if (chunk.model !== request.model) return done(false, broken(`a chunk from '${chunk.model}'`));
      const choice = chunk.choices[0];
      if (choice?.delta.content) request.onChunk?.(++chunks);
      if (choice?.finish_reason) finished = true;
    }
    // The openai client ends the iteration quietly when its own signal aborts it.
    if (request.signal?.aborted === true) return done(false, { class: 'aborted', status: null, type: null, code: null, message: 'the client aborted the stream' });
    // A stream may end only with its finish_reason, or with an error event (raised above):
    // ending quietly would be an answer cut off with nobody told.
    return finished ? done(true, null) : done(false, broken(`the stream ended after ${chunks} chunk(s) without a finish_reason or an error`));
  } catch (error) {
    return done(false, classifyError(error));
  }
}
