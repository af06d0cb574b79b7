// Forwards one validated request to the engine that serves it and streams the answer back.
//
// The hot path, so it does as little as it can: the client's body bytes go upstream as they
// came (re-serialised only when a fallback model must be named in them), and the answer is
// written to the client chunk by chunk as it arrives — never collected, never parsed, unless
// the exchange's AnswerShape says it must be: a fallback's name replacing the engine's in the
// `model` fields, or an answer re-told in another API's shape (Anthropic's Messages API for an
// engine that speaks only OpenAI's, anthropic/route.ts). Plain `data`/`write` with
// backpressure rather than `pipe()`/`pipeline()`, because the three ways a stream can end
// badly need different endings: a client that leaves must abort the engine's request (so it
// stops decoding for nobody); an engine that dies must end the client's stream with an error
// event it can read, not a socket that hangs or a close that looks like success; and an engine
// found hung (the claim's `lost`) must release its client with the reason — an error event
// mid-stream, a 504 before any answer — not leave it waiting on a socket that never closes.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { rewriteModelField, SseModelRewriter, type StreamRewriter } from './model-rewriter.js';
import { engineAnswerError, engineErrorOf } from './errors.js';
import { engineBadAnswer, errorBody, type ErrorShape, type RouterError } from '../http/errors.js';
import { ERROR_SOURCE_HEADER, SERVED_BY_HEADER } from '../http/headers.js';
import { sendError } from '../http/send-error.js';
import type { EngineClaim, EngineLost } from '../model-gateway.js';
import { isOpenedEarly, type ErrorEvent } from '../http/opened-stream.js';
import type { AbortNotice } from '../../common/notice.js';
import { traceOf } from '../http/request-trace.js';
import { UsageTap } from './usage-tap.js';

export interface UpstreamExchange {
  /** The engine's path (`/v1/chat/completions`): the client's, or the one its request was translated for. */
  path: string;
  body: Buffer;
  /** How the answer reaches the client; openAIAnswer for OpenAI's endpoints. */
  shape: AnswerShape;
}

/**
 * How the engine's answer becomes the client's. Each transform that is null leaves that kind of
 * answer as the engine sent it, unparsed and unbuffered (the hot path).
 */
export interface AnswerShape {
  /** A successful JSON answer, collected whole → the client's body; null when it is not the answer expected (502). */
  json: ((text: string) => string | null) | null;
  /** A fresh rewriter for a successful event stream. */
  stream: (() => StreamRewriter) | null;
  /**
   * The client's content type for what `stream` re-tells, where it is not an event stream
   * (Ollama's NDJSON, or one JSON object collected from the stream); absent: the engine's.
   * Such an answer is lines, so an error that ends it follows on a line of its own with no blank
   * line before it (NDJSON has none).
   */
  streamContentType?: string;
  /** An engine's error answer (status >= 400), collected whole → the client's body. */
  error: ((text: string, status: number) => string) | null;
  /** How the router's own errors are spelled (hung, unreachable, interrupted). */
  errors: ErrorShape;
  /** The SSE text of the error event that ends a stream the engine broke off. */
  streamError(error: RouterError): string;
}

/**
 * OpenAI's endpoints: the engine's answer as it is, or with `rewriteModelTo` (a fallback) in
 * every `model` field of a successful one; errors in OpenAI's shape, the engine's own re-spelled
 * (errors.ts), a prompt-size error naming `promptParam`, a grammar that could not start
 * naming `grammarParam`.
 */
export function openAIAnswer(rewriteModelTo: string | null, servedBy: string, promptParam: string | null, grammarParam: string | null = null): AnswerShape {
  return {
    json: rewriteModelTo === null ? null : (text) => rewriteModelField(text, rewriteModelTo) ?? text,
    stream: rewriteModelTo === null ? null : () => new SseModelRewriter(rewriteModelTo),
    error: (text, status) => JSON.stringify(errorBody(engineErrorOf(text, status, servedBy, promptParam, grammarParam))),
    errors: errorBody,
    streamError: openAIErrorEvent,
  };
}

/** OpenAI's error event in a stream: a `data:` line with the error body, which the SDKs raise as an APIError. */
export function openAIErrorEvent(error: RouterError): string {
  return `data: ${JSON.stringify(errorBody(error))}\n\n`;
}

/**
 * One request, checked and ready to go to whichever engine its model's claim names: the router
 * runs activation and the resend around `send`, whatever API the request speaks.
 */
export interface ModelRequest {
  /** The request's `model`, as the client named it. */
  model: string;
  /**
   * For a request that asked for an event stream: how its API spells an error event, so that the
   * router may open the stream while the model loads (progress comments) and still end it with
   * any error it meets afterwards (http/opened-stream.ts). Null: not streamed; nothing is sent early.
   */
  streamError: ErrorEvent | null;
  /**
   * The request asks the model to write text (a chat, a completion, a message, a response, an
   * infill). An embedding model only embeds: such a request for one is refused before it loads.
   */
  generates: boolean;
  /**
   * The request occupies one of the engine's slots while it is served (a generation, an
   * embedding, a rerank), so it counts against the model's `parallel` and `queueLimit`. False for
   * what the engine answers beside its slots (a token count, a template rendered): such a request
   * is never held back for a free slot nor refused for the queue.
   */
  takesSlot: boolean;
  /**
   * Sends the request to the claimed engine and relays the answer to the client (`fallingBack`:
   * the claim's model stands in for the requested one). Never rejects; see ForwardOutcome.
   */
  send(claim: EngineClaim, fallingBack: boolean, clientGone: AbortNotice): Promise<ForwardOutcome>;
}

/**
 * How a forward went, as far as the caller must act on it. 'answered': the engine's answer
 * arrived and is being relayed to the client (every ending from there on is handled here).
 * 'unreachable': the connection failed before any answer — refused, reset, or cut by the
 * client leaving — and nothing was written to the client, so the request may be sent again.
 */
export type ForwardOutcome = { kind: 'answered' } | { kind: 'unreachable'; cause: string };

/**
 * Sends the exchange upstream through `agent` to the claimed engine (its key, never the
 * client's Authorization) and, once the engine answers, relays the answer to `res`, telling the
 * claim each time bytes reach the client. Resolves as soon as the outcome is known: at the
 * answer's headers, or at a connection failure before them, which it leaves to the caller to
 * answer (a retry, or `unreachableError`). `clientGone` aborts when the client disconnects
 * before its answer is complete. When the claim is lost (the engine hung) the client is
 * answered here, with the reason, and the outcome is 'answered'. Never rejects.
 */
export function forwardToEngine(
  agent: http.Agent,
  res: ServerResponse,
  clientGone: AbortNotice,
  claim: EngineClaim,
  exchange: UpstreamExchange,
): Promise<ForwardOutcome> {
  const upstream = requestToEngine(agent, claim, exchange.path, exchange.body.length);
  const { servedBy } = claim;
  const { shape } = exchange;

  // A client that left cancels the engine's work: destroying the request closes its socket,
  // which llama-server notices and stops decoding.
  const cancel = (): void => void upstream.destroy();
  clientGone.addEventListener('abort', cancel, { once: true });

  // What was relayed so far: a cut stream gets its error event on a line of its own; a cut JSON
  // answer is cut. A stream the router opened already (progress comments) is an event stream
  // whose last comment ended with its blank line.
  const relayed: Relayed = isOpenedEarly(res)
    ? { openedTail: '\n\n', previous: null, last: null, eventStream: true }
    : { openedTail: '', previous: null, last: null, eventStream: false };
  return new Promise((resolve) => {
    let answered = false;
    upstream.once('error', (error: NodeJS.ErrnoException) => {
      const cause = error.code ?? error.message;
      if (!answered) {
        clientGone.removeEventListener('abort', cancel);
        claim.lost.removeEventListener('abort', onLost);
        resolve({ kind: 'unreachable', cause });
      } else {
        endBrokenAnswer(res, relayed, shape, servedBy, `its connection failed (${cause})`, 'engine_stream_interrupted');
      }
    });
    // Told before the hung engine is killed, so the client hears "hung" rather than a reset.
    function onLost(): void {
      const lost = claim.lost.reason as EngineLost;
      const wasAnswered = answered;
      answered = true;
      if (res.headersSent) endBrokenAnswer(res, relayed, shape, servedBy, `it made no progress and was stopped (${lost.reason})`, 'engine_hung');
      else sendError(res, hungError(servedBy, lost.reason), shape.errors);
      upstream.destroy();
      if (!wasAnswered) resolve({ kind: 'answered' });
    }
    if (claim.lost.aborted) return onLost();
    claim.lost.addEventListener('abort', onLost, { once: true });
    // The engine's side is over (answered whole, failed or destroyed): neither a client leaving
    // nor a hang found later has anything left to stop here. A claim may outlive its exchange
    // (a shared one, in the benchmarks), and its listeners must not pile up.
    upstream.once('close', () => {
      clientGone.removeEventListener('abort', cancel);
      claim.lost.removeEventListener('abort', onLost);
    });
    upstream.once('response', (answer) => {
      if (answered) return void answer.resume();
      answered = true;
      claim.progressed();
      // The request's record reads its cost from the answer as it passes (usage-tap.ts).
      traceOf(res)?.engineAnswered(answer, (keepBytes, onFirstToken) => new UsageTap(isEventStreamAnswer(answer), keepBytes, onFirstToken));
      relayAnswer(answer, res, claim, exchange, relayed);
      resolve({ kind: 'answered' });
    });
    traceOf(res)?.sent();
    upstream.end(exchange.body);
  });
}

function isEventStreamAnswer(answer: IncomingMessage): boolean {
  return (answer.headers['content-type'] ?? '').startsWith('text/event-stream');
}

/**
 * A POST of `contentLength` JSON bytes to `path` on the claimed engine, with its per-launch key
 * (never the client's Authorization), through the keep-alive `agent`. The caller ends it.
 */
export function requestToEngine(agent: http.Agent, claim: EngineClaim, path: string, contentLength: number): http.ClientRequest {
  const target = engineTarget(claim.endpoint.baseUrl);
  return http.request({
    agent,
    method: 'POST',
    hostname: target.hostname,
    port: target.port,
    path: target.pathPrefix + path,
    headers: {
      'content-type': 'application/json',
      'content-length': contentLength,
      authorization: `Bearer ${claim.endpoint.apiKey}`,
    },
  });
}

interface EngineTarget {
  hostname: string;
  port: string;
  /** The base URL's path without its trailing slash, before each request's own path. */
  pathPrefix: string;
}

/**
 * An engine's base URL as http.request takes it, parsed once per URL: a claim names the same few
 * engines request after request, and parsing the URL again was work on every request's way
 * (issue 41). Bounded, as engines come and go on fresh ports: past the bound it starts over.
 */
const engineTargets = new Map<string, EngineTarget>();
const MAX_ENGINE_TARGETS = 64;

function engineTarget(baseUrl: string): EngineTarget {
  let target = engineTargets.get(baseUrl);
  if (target === undefined) {
    const url = new URL(baseUrl);
    target = { hostname: url.hostname.replace(/^\[|\]$/g, ''), port: url.port, pathPrefix: url.pathname.replace(/\/$/, '') };
    if (engineTargets.size >= MAX_ENGINE_TARGETS) engineTargets.clear();
    engineTargets.set(baseUrl, target);
  }
  return target;
}

/** The 504 for a request whose engine was found hung before it answered. */
export function hungError(servedBy: string, reason: string): RouterError {
  return {
    status: 504,
    source: 'engine',
    type: 'engine_error',
    code: 'engine_hung',
    param: null,
    message: `The model server for '${servedBy}' made no progress and was stopped: ${reason}. llmtray restarts it; retry the request.`,
  };
}

/** The 502 for an engine whose connection failed before it answered (for the router: on the resend too). */
/** `retried`: the request had been sent once more, to a fresh engine, and that one died too. */
export function unreachableError(servedBy: string, cause: string, retried = false): RouterError {
  return {
    status: 502,
    source: 'engine',
    type: 'engine_error',
    code: 'engine_unreachable',
    param: null,
    message: `The model server for '${servedBy}' did not answer (${cause})${retried ? ', and neither did a fresh one it was sent to again' : ''}. Each death before an answer counts on the model's recovery ladder, which quarantines it after five in a row; its state in /v1/models says where it stands.`,
  };
}

/** What the relay has written so far, as far as ending it cleanly needs to know. */
interface Relayed {
  /** What went out before the engine's first byte ends with: '\n\n' after early progress comments, else ''. */
  openedTail: string;
  /**
   * The last two chunks written, newest last, from which an interrupted stream reads its last two
   * characters (an SSE event ends in a blank line; tailOf). Kept per chunk, read only then: the
   * relay's per-chunk work is on every token's way.
   */
  previous: Buffer | string | null;
  last: Buffer | string | null;
  /** The answer is an event stream, which can end with an error event; anything else can only be cut. */
  eventStream: boolean;
}

/**
 * Ends an answer that broke off after its headers went out: an event stream with an error
 * event (see endInterrupted), any other answer by cutting the connection, the only honest
 * signal left once a 200 and part of a body went out (the client sees a short body, not success).
 */
function endBrokenAnswer(res: ServerResponse, relayed: Relayed, shape: AnswerShape, servedBy: string, what: string, code: 'engine_stream_interrupted' | 'engine_hung'): void {
  traceOf(res)?.failed(brokenError(servedBy, what, code));
  if (relayed.eventStream) endInterrupted(res, shape, servedBy, what, code, tailOf(relayed));
  else if (res.headersSent) res.destroy();
  else sendError(res, code === 'engine_hung' ? hungError(servedBy, what) : unreachableError(servedBy, what), shape.errors);
}

function relayAnswer(answer: IncomingMessage, res: ServerResponse, claim: EngineClaim, exchange: UpstreamExchange, relayed: Relayed): void {
  const { servedBy } = claim;
  const { shape } = exchange;
  // A connection lost mid-answer surfaces as 'error' and then 'close' with `complete` false;
  // 'close' decides what the client is told, so the error itself needs no more than a listener.
  answer.on('error', () => {});
  const status = answer.statusCode ?? 502;
  const contentType = answer.headers['content-type'] ?? 'application/json';
  const isEventStream = contentType.startsWith('text/event-stream');

  // Headers are chosen, not copied: llama-server answers with `Access-Control-Allow-Origin: *`,
  // which would hand every web page our answers if it leaked through.
  const headers: http.OutgoingHttpHeaders = { 'content-type': contentType, [SERVED_BY_HEADER]: servedBy };
  if (status >= 400) headers[ERROR_SOURCE_HEADER] = 'engine';
  if (isEventStream) {
    headers['cache-control'] = 'no-cache';
    headers['x-accel-buffering'] = 'no';
  }

  // The router opened this request's stream while its model loaded: the 200 and the stream's
  // headers went out already, so the engine's own stream continues it as it is, and anything
  // else it answers (a refusal, or JSON for a streamed request) ends it as an error event.
  if (isOpenedEarly(res) && !(status < 400 && isEventStream)) return endOpenedWithAnswer(answer, res, status, claim);
  const errorTransform = shape.error;
  if (status >= 400 && errorTransform !== null) {
    relayCollected(answer, res, status, { ...headers, 'content-type': 'application/json' }, (text) => errorTransform(text, status), claim, shape);
    return;
  }
  if (status < 400 && !isEventStream && shape.json !== null) {
    relayCollected(answer, res, status, headers, shape.json, claim, shape);
    return;
  }
  relayed.eventStream = isEventStream;
  const rewriter = status < 400 && isEventStream ? (shape.stream?.() ?? null) : null;
  if (rewriter === null && answer.headers['content-length'] !== undefined) {
    headers['content-length'] = answer.headers['content-length'];
  }
  if (rewriter !== null && shape.streamContentType !== undefined) headers['content-type'] = shape.streamContentType;
  if (!isOpenedEarly(res)) res.writeHead(status, headers);
  answer.on('data', (chunk: Buffer) => {
    if (res.writableEnded || res.destroyed) return;
    claim.progressed();
    const out = rewriter === null ? chunk : rewriter.push(chunk);
    if (out.length === 0) return;
    relayed.previous = relayed.last;
    relayed.last = out;
    if (!res.write(out)) answer.pause();
  });
  res.on('drain', () => answer.resume());
  // 'end' comes only for a complete answer, and a few ticks before 'close': the client's answer
  // ends as soon as the engine's does, as a plain pipe would end it.
  answer.once('end', () => {
    if (!res.writableEnded) res.end(rewriter?.flush() ?? '');
  });
  answer.once('close', () => {
    if (res.writableEnded) return; // answered: complete, or the engine was found hung
    endBrokenAnswer(res, relayed, shape, servedBy, 'it closed the connection mid-answer', 'engine_stream_interrupted');
  });
}

/** Collects an engine's answer that cannot continue an early-opened stream, and ends the stream with it as an error event. */
function endOpenedWithAnswer(answer: IncomingMessage, res: ServerResponse, status: number, claim: EngineClaim): void {
  const chunks: Buffer[] = [];
  answer.on('data', (chunk: Buffer) => {
    claim.progressed();
    chunks.push(chunk);
  });
  answer.once('close', () => {
    const text = Buffer.concat(chunks).toString('utf8');
    sendError(res, answer.complete ? engineAnswerError(text, status, claim.servedBy) : unreachableError(claim.servedBy, 'it closed the connection mid-answer'));
  });
}

/**
 * Collects a small JSON answer, re-tells it with `transform` (a fallback's name, another API's
 * shape), and sends it; 502 if the engine dies first or its answer is not what was expected.
 */
function relayCollected(
  answer: IncomingMessage,
  res: ServerResponse,
  status: number,
  headers: http.OutgoingHttpHeaders,
  transform: (text: string) => string | null,
  claim: EngineClaim,
  shape: AnswerShape,
): void {
  const { servedBy } = claim;
  const chunks: Buffer[] = [];
  answer.on('data', (chunk: Buffer) => {
    claim.progressed();
    chunks.push(chunk);
  });
  const settle = (): void => {
    if (res.writableEnded) return; // already answered: at 'end', or the engine was found hung
    if (!answer.complete) {
      sendError(
        res,
        {
          status: 502,
          source: 'engine',
          type: 'engine_error',
          code: 'engine_interrupted',
          param: null,
          message: `The model server for '${servedBy}' closed the connection before it finished answering.`,
        },
        shape.errors,
      );
      return;
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const body = transform(text);
    if (body === null) {
      sendError(res, engineBadAnswer(servedBy, `answered ${status}`, text), shape.errors);
      return;
    }
    res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body) });
    res.end(body);
  };
  // 'end' comes only for a complete answer, and some ticks before 'close': the client's answer
  // goes out as soon as the engine's is whole, as relayAnswer's does. Every non-streamed chat
  // completion is collected here since the required nulls (chat-answer-shape.ts), so waiting for
  // 'close' was on most requests' way (issue 41). 'close' alone tells an answer cut short.
  answer.once('end', settle);
  answer.once('close', settle);
}

/**
 * Ends an SSE answer that the engine broke off, with an error event the SDKs raise as an
 * APIError (shape.streamError: OpenAI's `data:` line, Anthropic's `event: error`), then closes
 * — never leaves the client waiting for a `[DONE]` or `message_stop` that will not come.
 * `tail` is the end of what was written so far: a partial event is terminated first so the
 * error arrives as an event of its own.
 */
function endInterrupted(
  res: ServerResponse,
  shape: AnswerShape,
  servedBy: string,
  what: string,
  code: 'engine_stream_interrupted' | 'engine_hung',
  tail = '\n\n',
): void {
  if (res.writableEnded || res.destroyed) return;
  const event = shape.streamError(brokenError(servedBy, what, code));
  // NDJSON (an Ollama stream) ends a line with one newline; SSE ends an event with a blank line.
  const separator = shape.streamContentType !== undefined ? (tail === '' || tail.endsWith('\n') ? '' : '\n') : tail.endsWith('\n\n') ? '' : tail.endsWith('\n') ? '\n' : '\n\n';
  res.end(`${separator}${event}`);
}

/** The error event of an answer the engine broke off (endInterrupted), and what its record says. */
function brokenError(servedBy: string, what: string, code: 'engine_stream_interrupted' | 'engine_hung'): RouterError {
  return {
    status: code === 'engine_hung' ? 504 : 502,
    source: 'engine',
    type: 'engine_error',
    code,
    param: null,
    message: `The model server for '${servedBy}' stopped before the answer was complete: ${what}. The answer above is partial.`,
  };
}

/** The last two characters written so far (see Relayed). */
function tailOf(relayed: Relayed): string {
  let tail = relayed.openedTail;
  if (relayed.previous !== null) tail = lastTwoChars(tail, relayed.previous);
  if (relayed.last !== null) tail = lastTwoChars(tail, relayed.last);
  return tail;
}

function lastTwoChars(previous: string, out: Buffer | string): string {
  const text = typeof out === 'string' ? out.slice(-2) : out.subarray(-2).toString('latin1');
  return (previous + text).slice(-2);
}
