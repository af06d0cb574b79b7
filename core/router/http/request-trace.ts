// One request's record in the making (core/contracts/requests/request-record.ts): started where every
// model request enters (router.ts' serveModelRequest), told what happens to it on the way (its
// model, a wait, the engine that took it, its answer's cost), written once when its response
// closes, whatever ended it.
//
// Why remembered per response (a WeakMap, as opened-stream.ts does) rather than passed along:
// the places that learn how a request ends — sendError for every refusal, the relay in
// engine/upstream.ts for the answer and a broken stream — are called from each API's route
// (openai/, anthropic/, responses/, llama/) through several layers; threading a trace through
// all of their signatures would touch every route for a concern none of them has.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { LOCAL_CLIENT, type RequestRecord, type RequestWait } from '../../contracts/requests/request-record.js';
import type { RouterError } from './errors.js';

/** The cost figures an engine's answer carried (engine/usage-tap.ts reads them); null where it did not say. */
export interface EngineUsage {
  promptTokens: number | null;
  cachedTokens: number | null;
  completionTokens: number | null;
  /** The engine's own prompt time, ms (llama-server's timings.prompt_ms). */
  promptMs: number | null;
  /** The engine's own generation speed, tokens/s (llama-server's timings.predicted_per_second). */
  tokensPerSecond: number | null;
}

/** Reads an answer's chunks as they pass (engine/usage-tap.ts): the figures at its end, and as much of its body as was asked. */
export interface AnswerTap {
  push(chunk: Buffer): void;
  /** Call once, when the answer ended. */
  end(): EngineUsage;
  body(): string;
  readonly truncated: boolean;
  /** The engine's own words for an error it answered, or ended its stream with; null when none. */
  readonly errorMessage: string | null;
}

/** Makes the tap for one answer: `keepBytes` of its body to keep, `onFirstToken` called once at its first token. */
export type AnswerTapFactory = (keepBytes: number, onFirstToken: () => void) => AnswerTap;

/**
 * Where finished records go: the daemon's request log. Both methods are called on the request
 * path: non-blocking, never throwing.
 */
export interface RequestRecorder {
  /** A request's record, once its response closed. */
  record(record: RequestRecord): void;
  /** `activity.keepBodies`: how many bytes of each body to keep, 0 for none; read per request, so a config reload applies to the next. */
  keepBodiesBytes(): number;
}

/** The status of a request whose client left before its answer was complete: nginx's 499, since no status was ever sent. */
export const CLIENT_LEFT_STATUS = 499;

const traces = new WeakMap<ServerResponse, RequestTrace>();
let lastId = 0;

/** The trace of `res`'s request, if it is a model request being recorded. */
export function traceOf(res: ServerResponse): RequestTrace | undefined {
  return traces.get(res);
}

/**
 * Starts recording the request `res` answers; the record is written to `recorder` when `res`
 * closes. `client`: the name of the key it presented, null where none is configured.
 */
export function startTrace(res: ServerResponse, route: string, client: string | null, recorder: RequestRecorder): RequestTrace {
  const trace = new RequestTrace(res, route, client ?? LOCAL_CLIENT, recorder);
  traces.set(res, trace);
  return trace;
}

export class RequestTrace {
  private readonly id = `r${++lastId}`;
  private readonly at = Date.now();
  private readonly arrived = performance.now();
  private readonly keepBytes: number;
  private model: string | null = null;
  private servedBy: string | null = null;
  private stream = false;
  private waited: RequestWait | null = null;
  private waitingSince: number | null = null;
  private waitMs = 0;
  private sentAt: number | null = null;
  private firstTokenAt: number | null = null;
  private lastChunkAt: number | null = null;
  private usage: EngineUsage | null = null;
  private engineStatus: number | null = null;
  private error: RouterError | null = null;
  private requestBody: string | null = null;
  private truncatedRequest = false;
  private tap: AnswerTap | null = null;

  constructor(
    private readonly res: ServerResponse,
    private readonly route: string,
    private readonly client: string,
    private readonly recorder: RequestRecorder,
  ) {
    this.keepBytes = recorder.keepBodiesBytes();
    res.once('close', () => this.finish());
  }

  /** The request's body, kept only where bodies are. */
  received(body: Buffer): void {
    if (this.keepBytes > 0) this.requestBody = body.subarray(0, this.keepBytes).toString('utf8');
    if (this.keepBytes > 0 && body.length > this.keepBytes) this.truncatedRequest = true;
  }

  /** The model it asked for (the catalog id once resolved, else the name as sent) and whether it asked for a stream. */
  asked(model: string, stream: boolean): void {
    this.model = model;
    this.stream = stream;
  }

  /** It starts to wait for an engine, for `why`. Only the first wait's reason is kept; the time of every wait adds up. */
  waiting(why: RequestWait): void {
    this.waited ??= why;
    this.waitingSince = performance.now();
  }

  /** An engine took it (`servedBy`: the model that answers). */
  taken(servedBy: string): void {
    this.servedBy = servedBy;
    if (this.waitingSince !== null) this.waitMs += performance.now() - this.waitingSince;
    this.waitingSince = null;
  }

  /** It was sent to the engine now (the start of the engine's prompt time, for a whole answer's first token). */
  sent(): void {
    this.sentAt = performance.now();
  }

  /** The engine answered: its answer is read as it passes, by the tap `makeTap` makes, never held back. */
  engineAnswered(answer: IncomingMessage, makeTap: AnswerTapFactory): void {
    this.engineStatus = answer.statusCode ?? null;
    const tap = makeTap(this.keepBytes, () => (this.firstTokenAt = performance.now()));
    this.tap = tap;
    answer.on('data', (chunk: Buffer) => {
      this.lastChunkAt = performance.now();
      tap.push(chunk);
    });
    answer.once('close', () => (this.usage = tap.end()));
  }

  /** It ended with `error` (a refusal, or a broken answer's error): what its client was told. The first one counts. */
  failed(error: RouterError): void {
    this.error ??= error;
  }

  private finish(): void {
    traces.delete(this.res);
    if (this.waitingSince !== null) this.waitMs += performance.now() - this.waitingSince;
    const end = performance.now();
    const usage = this.usage ?? this.tap?.end() ?? null;
    const completed = this.res.writableFinished;
    const status = this.error?.status ?? (completed ? this.res.statusCode : CLIENT_LEFT_STATUS);
    const error = this.error?.message ?? (completed ? this.engineError(status) : 'the client left before its answer was complete');
    const record: RequestRecord = {
      id: this.id,
      at: this.at,
      route: this.route,
      model: this.model,
      servedBy: this.servedBy,
      client: this.client,
      status,
      stream: this.stream,
      waited: this.waited,
      waitMs: Math.round(this.waitMs),
      firstTokenMs: this.firstTokenMs(usage),
      promptTokens: usage?.promptTokens ?? null,
      cachedTokens: usage?.cachedTokens ?? null,
      completionTokens: usage?.completionTokens ?? null,
      tokensPerSecond: this.tokensPerSecond(usage),
      durationMs: Math.round(end - this.arrived),
      error,
      ...(this.keepBytes > 0 ? { bodies: { request: this.requestBody ?? '', answer: this.tap?.body() ?? '', truncated: this.truncatedRequest || this.tap?.truncated === true } } : {}),
    };
    this.recorder.record(record);
  }

  /** An error the engine answered (or ended a 200 stream with), in its own words; null for an answer. */
  private engineError(status: number): string | null {
    const words = this.tap?.errorMessage ?? null;
    if (status >= 400) return words ?? `the model server answered ${this.engineStatus ?? status}`;
    return words;
  }

  /** See RequestRecord.firstTokenMs. */
  private firstTokenMs(usage: EngineUsage | null): number | null {
    if (this.stream && this.firstTokenAt !== null) return Math.round(this.firstTokenAt - this.arrived);
    if (!this.stream && this.sentAt !== null && usage?.promptMs != null) return Math.round(this.sentAt - this.arrived + usage.promptMs);
    return null;
  }

  /** The engine's own speed, else the tokens after the first over the time from the first token to the last chunk. */
  private tokensPerSecond(usage: EngineUsage | null): number | null {
    if (usage === null) return null;
    if (usage.tokensPerSecond !== null) return round1(usage.tokensPerSecond);
    const written = usage.completionTokens;
    if (written === null || written < 2 || this.firstTokenAt === null || this.lastChunkAt === null) return null;
    const seconds = (this.lastChunkAt - this.firstTokenAt) / 1000;
    return seconds > 0 ? round1((written - 1) / seconds) : null;
  }
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}
