// Forwards one validated request to the engine that serves it and streams the answer back.
//
// The hot path, so it does as little as it can: the client's body bytes go upstream as they
// came (re-serialised only when a fallback model must be named in them), and the answer is
// written to the client chunk by chunk as it arrives — never collected, never parsed, unless a
// fallback's name must replace the engine's in the `model` fields. Plain `data`/`write` with
// backpressure rather than `pipe()`/`pipeline()`, because the two ways a stream can end
// badly need different endings: a client that leaves must abort the engine's request (so it
// stops decoding for nobody), and an engine that dies must end the client's stream with an
// error event it can read, not a socket that hangs or a close that looks like success.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { OpenAIErrorBody } from '../contracts/openai.js';
import { ERROR_SOURCE_HEADER, errorBody, sendError, type RouterError } from './errors.js';

export const SERVED_BY_HEADER = 'x-llmtray-served-by';

export interface UpstreamExchange {
  /** The engine's origin, e.g. `http://127.0.0.1:41234`. */
  baseUrl: string;
  /** The engine's per-launch key; the client's own Authorization is never forwarded. */
  apiKey: string;
  /** The request path, forwarded unchanged (`/v1/chat/completions`). */
  path: string;
  body: Buffer;
  /** The model that answers; named in the `x-llmtray-served-by` header. */
  servedBy: string;
  /** When set, every `model` field of a successful answer is replaced by this (fallback). */
  rewriteModelTo: string | null;
}

/**
 * How a forward went, as far as the caller must act on it. 'answered': the engine's answer
 * arrived and is being relayed to the client (every ending from there on is handled here).
 * 'unreachable': the connection failed before any answer — refused, reset, or cut by the
 * client leaving — and nothing was written to the client, so the request may be sent again.
 */
export type ForwardOutcome = { kind: 'answered' } | { kind: 'unreachable'; cause: string };

/**
 * Sends the exchange upstream through `agent` and, once the engine answers, relays the answer
 * to `res`. Resolves as soon as the outcome is known: at the answer's headers, or at a
 * connection failure before them, which it leaves to the caller to answer (a retry, or
 * `unreachableError`). `clientGone` aborts when the client disconnects before its answer is
 * complete. Never rejects.
 */
export function forwardToEngine(agent: http.Agent, res: ServerResponse, clientGone: AbortSignal, exchange: UpstreamExchange): Promise<ForwardOutcome> {
  const target = new URL(exchange.baseUrl);
  const upstream = http.request({
    agent,
    method: 'POST',
    hostname: target.hostname.replace(/^\[|\]$/g, ''),
    port: target.port,
    path: target.pathname.replace(/\/$/, '') + exchange.path,
    headers: {
      'content-type': 'application/json',
      'content-length': exchange.body.length,
      authorization: `Bearer ${exchange.apiKey}`,
    },
  });

  // A client that left cancels the engine's work: destroying the request closes its socket,
  // which llama-server notices and stops decoding.
  const cancel = (): void => void upstream.destroy();
  clientGone.addEventListener('abort', cancel, { once: true });

  return new Promise((resolve) => {
    let answered = false;
    upstream.once('error', (error: NodeJS.ErrnoException) => {
      const cause = error.code ?? error.message;
      if (!answered) {
        clientGone.removeEventListener('abort', cancel);
        resolve({ kind: 'unreachable', cause });
      } else if (res.headersSent) {
        endInterrupted(res, exchange.servedBy, `its connection failed (${cause})`);
      } else {
        sendError(res, unreachableError(exchange.servedBy, cause));
      }
    });
    upstream.once('response', (answer) => {
      answered = true;
      relayAnswer(answer, res, exchange);
      resolve({ kind: 'answered' });
    });
    upstream.end(exchange.body);
  });
}

/** The 502 for an engine whose connection failed before it answered (for the router: on the resend too). */
export function unreachableError(servedBy: string, cause: string): RouterError {
  return {
    status: 502,
    source: 'engine',
    type: 'engine_error',
    code: 'engine_unreachable',
    param: null,
    message: `The model server for '${servedBy}' did not answer (${cause}); llmtray's controller will notice and restart or replace it.`,
  };
}

function relayAnswer(answer: IncomingMessage, res: ServerResponse, exchange: UpstreamExchange): void {
  // A connection lost mid-answer surfaces as 'error' and then 'close' with `complete` false;
  // 'close' decides what the client is told, so the error itself needs no more than a listener.
  answer.on('error', () => {});
  const status = answer.statusCode ?? 502;
  const contentType = answer.headers['content-type'] ?? 'application/json';
  const isEventStream = contentType.startsWith('text/event-stream');
  const rewriteTo = status < 400 ? exchange.rewriteModelTo : null;

  // Headers are chosen, not copied: llama-server answers with `Access-Control-Allow-Origin: *`,
  // which would hand every web page our answers if it leaked through.
  const headers: http.OutgoingHttpHeaders = { 'content-type': contentType, [SERVED_BY_HEADER]: exchange.servedBy };
  if (status >= 400) headers[ERROR_SOURCE_HEADER] = 'engine';
  if (isEventStream) {
    headers['cache-control'] = 'no-cache';
    headers['x-accel-buffering'] = 'no';
  }

  if (rewriteTo !== null && !isEventStream) {
    relayRewrittenJson(answer, res, status, headers, rewriteTo, exchange.servedBy);
    return;
  }
  if (rewriteTo === null && answer.headers['content-length'] !== undefined) {
    headers['content-length'] = answer.headers['content-length'];
  }
  res.writeHead(status, headers);
  const rewriter = rewriteTo === null ? null : new SseModelRewriter(rewriteTo);
  let tail = '';
  answer.on('data', (chunk: Buffer) => {
    if (res.destroyed) return;
    const out = rewriter === null ? chunk : rewriter.push(chunk);
    if (out.length === 0) return;
    tail = lastTwoChars(tail, out);
    if (!res.write(out)) answer.pause();
  });
  res.on('drain', () => answer.resume());
  answer.once('close', () => {
    if (answer.complete) {
      res.end(rewriter?.flush() ?? '');
    } else if (isEventStream) {
      endInterrupted(res, exchange.servedBy, 'it closed the connection mid-answer', tail);
    } else {
      // A plain JSON answer whose headers already went out cannot turn into a 502; cutting the
      // connection is the only honest signal left (the client sees a short body, not success).
      res.destroy();
    }
  });
}

/** Collects a small JSON answer, names the fallback model in it, and sends it; 502 if the engine dies first. */
function relayRewrittenJson(
  answer: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: http.OutgoingHttpHeaders,
  rewriteTo: string,
  servedBy: string,
): void {
  const chunks: Buffer[] = [];
  answer.on('data', (chunk: Buffer) => chunks.push(chunk));
  answer.once('close', () => {
    if (!answer.complete) {
      sendError(res, {
        status: 502,
        source: 'engine',
        type: 'engine_error',
        code: 'engine_interrupted',
        param: null,
        message: `The model server for '${servedBy}' closed the connection before it finished answering.`,
      });
      return;
    }
    const raw = Buffer.concat(chunks);
    const body = rewriteModelField(raw.toString('utf8'), rewriteTo) ?? raw;
    res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  });
}

/**
 * Ends an SSE answer that the engine broke off, with an error event OpenAI's SDKs raise as an
 * APIError, then closes — never leaves the client waiting for a `[DONE]` that will not come.
 * `tail` is the end of what was written so far: a partial event is terminated first so the
 * error arrives as an event of its own.
 */
function endInterrupted(res: ServerResponse, servedBy: string, what: string, tail = '\n\n'): void {
  if (res.writableEnded || res.destroyed) return;
  const event: OpenAIErrorBody = errorBody({
    type: 'engine_error',
    code: 'engine_stream_interrupted',
    param: null,
    message: `The model server for '${servedBy}' stopped before the answer was complete: ${what}. The answer above is partial.`,
  });
  const separator = tail.endsWith('\n\n') ? '' : tail.endsWith('\n') ? '\n' : '\n\n';
  res.end(`${separator}data: ${JSON.stringify(event)}\n\n`);
}

function lastTwoChars(previous: string, out: Buffer | string): string {
  const text = typeof out === 'string' ? out.slice(-2) : out.subarray(-2).toString('latin1');
  return (previous + text).slice(-2);
}

/** Replaces a JSON object's top-level `model` string; null when the text is not such an object. */
export function rewriteModelField(json: string, model: string): string | null {
  try {
    const value: unknown = JSON.parse(json);
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !('model' in value)) return null;
    return JSON.stringify({ ...value, model });
  } catch {
    return null;
  }
}

/**
 * Rewrites the `model` of each `data: {...}` line of an SSE stream, line by line as chunks
 * arrive. Only whole lines are rewritten; a line split across chunks waits for its end, which
 * costs at most one event's latency. Other lines (comments, `[DONE]`, `event:`) pass unchanged.
 */
export class SseModelRewriter {
  private pending = '';
  private readonly decoder = new StringDecoder('utf8');

  constructor(private readonly model: string) {}

  /** The rewritten text for every line completed by `chunk`. */
  push(chunk: Buffer): string {
    const text = this.pending + this.decoder.write(chunk);
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline === -1) {
      this.pending = text;
      return '';
    }
    this.pending = text.slice(lastNewline + 1);
    return text
      .slice(0, lastNewline + 1)
      .split('\n')
      .map((line) => this.rewriteLine(line))
      .join('\n');
  }

  /** Whatever was held back, rewritten; call once at the end of the stream. */
  flush(): string {
    const rest = this.pending + this.decoder.end();
    this.pending = '';
    return this.rewriteLine(rest);
  }

  private rewriteLine(line: string): string {
    if (!line.startsWith('data:')) return line;
    const carriageReturn = line.endsWith('\r') ? '\r' : '';
    const payload = line.slice('data:'.length, line.length - carriageReturn.length).trim();
    if (!payload.startsWith('{')) return line;
    const rewritten = rewriteModelField(payload, this.model);
    return rewritten === null ? line : `data: ${rewritten}${carriageReturn}`;
  }
}
