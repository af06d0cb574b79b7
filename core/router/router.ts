// llmtray's OpenAI-compatible endpoint: local apps send `/v1/...` here with a `model` name,
// and the router finds (or loads) the engine that serves it and streams the answer through.
// Anthropic's Messages API (`/v1/messages`) is served on the same path, by the same activation:
// only the last step, how the request reaches the engine, is its own (anthropic-route.ts).
//
// The router owns the loopback listener, so its guards (Host, Origin) run for every request
// on it; paths outside `/v1` go to `fallthrough` (the admin API, /metrics, the dashboard's
// files), which then never has to think about DNS rebinding. See README.md for the flow.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OpenAIModelList } from '../contracts/openai.js';
import { formatBytes } from '../policy/reasons.js';
import { activate } from './activation.js';
import { anthropicErrorBody } from './anthropic-errors.js';
import { countTokensRequest, messagesRequest } from './anthropic-route.js';
import { errorBody, sendError, type ErrorShape, type RouterError } from './errors.js';
import type { ModelGateway, RouterModelEntry } from './model-gateway.js';
import { readBody } from './read-body.js';
import { answerPreflight, applyCors, refuseApiKey, refuseHostOrOrigin } from './request-guard.js';
import { forwardToEngine, openAIAnswer, openAIErrorEvent, unreachableError, type ModelRequest } from './upstream.js';
import { ProgressComments } from './progress-comments.js';
import { parseRequest, type OpenAIEndpoint } from './validate-request.js';
import { pathOf } from '../common/url-path.js';

export interface RouterOptions {
  gateway: ModelGateway;
  /** How long a request waits for a cold model before a 503 with Retry-After, ms. Default 45 000. */
  activationWaitMs?: number;
  /** The Retry-After of that 503, seconds. Default 10. */
  retryAfterSeconds?: number;
  /** Largest accepted request body, bytes (413 above). Default 10 MiB. */
  bodyLimitBytes?: number;
  /** When set, `/v1` requests must send `Authorization: Bearer <apiKey>` or `x-api-key: <apiKey>` (401 otherwise). */
  apiKey?: string;
  /** Origins that web pages may call from, with CORS headers; '*' for any. Default none. */
  corsOrigins?: readonly string[];
  /** Host names served besides loopback ones, for a deliberate LAN listener. Default none. */
  allowedHosts?: readonly string[];
  /** Handles every request outside `/v1` once the Host/Origin guards passed. Default: 404. */
  fallthrough?: (req: IncomingMessage, res: ServerResponse) => void;
}

export interface ListenOptions {
  /** Default 0: a free port, reported in the result. */
  port?: number;
  /** Default '127.0.0.1'. Anything else exposes the models to the network; see allowedHosts. */
  host?: string;
}

export interface ListeningRouter {
  server: http.Server;
  port: number;
  /** The base URL clients use, e.g. `http://127.0.0.1:8080/v1`. */
  url: string;
  /** Stops accepting, ends open connections, and releases the engine connections. */
  close(): Promise<void>;
}

export interface Router {
  /** The request handler for the whole listener; never throws, always answers or hands over. */
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** Creates an HTTP server with `handle` and listens; resolves once it accepts connections. */
  listen(options?: ListenOptions): Promise<ListeningRouter>;
  /** Drops the pooled keep-alive connections to engines. Idempotent. */
  close(): void;
}

export const DEFAULT_ACTIVATION_WAIT_MS = 45_000;
export const DEFAULT_BODY_LIMIT_BYTES = 10 * 1024 * 1024;
const DEFAULT_RETRY_AFTER_SECONDS = 10;

const GENERATION_ROUTES: Record<string, OpenAIEndpoint> = {
  '/v1/chat/completions': 'chat.completions',
  '/v1/completions': 'completions',
  '/v1/embeddings': 'embeddings',
};

/** Anthropic's Messages API: each path's request builder (anthropic-route.ts). */
const ANTHROPIC_ROUTES = {
  '/v1/messages': messagesRequest,
  '/v1/messages/count_tokens': countTokensRequest,
} as const;

/** Whose error shape a path's client reads: Anthropic's SDKs cannot read OpenAI's. */
function errorShapeFor(path: string): ErrorShape {
  return path === '/v1/messages' || path.startsWith('/v1/messages/') ? anthropicErrorBody : errorBody;
}

export function createRouter(options: RouterOptions): Router {
  const { gateway } = options;
  const guard = {
    allowedHosts: options.allowedHosts ?? [],
    corsOrigins: options.corsOrigins ?? [],
    apiKey: options.apiKey,
  };
  const activation = {
    waitMs: options.activationWaitMs ?? DEFAULT_ACTIVATION_WAIT_MS,
    retryAfterSeconds: options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS,
  };
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  // Keep-alive to the engines: a chat front end sends a request per keystroke-pause, and a new
  // TCP handshake per request is latency for nothing on the hot path.
  const agent = new http.Agent({ keepAlive: true });

  function handle(req: IncomingMessage, res: ServerResponse): void {
    const shape = errorShapeFor(pathOf(req.url));
    try {
      route(req, res, shape);
    } catch (error) {
      sendError(res, internal(error), shape);
    }
  }

  function route(req: IncomingMessage, res: ServerResponse, shape: ErrorShape): void {
    const refusal = refuseHostOrOrigin(req, guard);
    if (refusal !== null) return sendError(res, refusal, shape);
    const path = pathOf(req.url);
    if (path !== '/v1' && !path.startsWith('/v1/')) {
      if (options.fallthrough !== undefined) return options.fallthrough(req, res);
      return sendError(res, notFound(`Nothing is served at ${path}; the OpenAI-compatible API is under /v1.`));
    }
    if (answerPreflight(req, res, guard.corsOrigins)) return;
    applyCors(req, res, guard.corsOrigins);
    const unauthorized = refuseApiKey(req, guard.apiKey);
    if (unauthorized !== null) return sendError(res, unauthorized, shape);

    const endpoint = GENERATION_ROUTES[path];
    if (endpoint !== undefined) {
      if (req.method !== 'POST') return sendError(res, wrongMethod(path, 'POST'));
      const build = (raw: Buffer): ModelRequest | RouterError => openAIRequest(res, endpoint, path, raw);
      serveModelRequest(req, res, shape, build).catch((error: unknown) => sendError(res, internal(error)));
      return;
    }
    if (path === '/v1/messages' || path === '/v1/messages/count_tokens') {
      if (req.method !== 'POST') return sendError(res, wrongMethod(path, 'POST'), shape);
      const build = (raw: Buffer): ModelRequest | RouterError => ANTHROPIC_ROUTES[path](agent, res, raw);
      serveModelRequest(req, res, shape, build).catch((error: unknown) => sendError(res, internal(error), shape));
      return;
    }
    if (path === '/v1/models' || path.startsWith('/v1/models/')) {
      if (req.method !== 'GET') return sendError(res, wrongMethod(path, 'GET'));
      return serveModels(res, path === '/v1/models' ? null : safeDecode(path.slice('/v1/models/'.length)));
    }
    sendError(
      res,
      notFound(`Unknown endpoint ${req.method ?? ''} ${path}; llmtray serves /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/models, and Anthropic's /v1/messages and /v1/messages/count_tokens.`),
      shape,
    );
  }

  /** An OpenAI endpoint's request: the body as it came, re-serialised only to name a fallback. */
  function openAIRequest(res: ServerResponse, endpoint: OpenAIEndpoint, path: string, raw: Buffer): ModelRequest | RouterError {
    const parsed = parseRequest(endpoint, raw);
    if (!parsed.ok) return parsed.error;
    return {
      model: parsed.model,
      streamError: parsed.body['stream'] === true ? openAIErrorEvent : null,
      send: (claim, fallingBack, clientGone) =>
        forwardToEngine(agent, res, clientGone, claim, {
          path,
          // Re-serialised only to name the fallback: the engine must be asked for the model it serves.
          body: fallingBack ? Buffer.from(JSON.stringify({ ...parsed.body, model: claim.servedBy })) : raw,
          shape: openAIAnswer(fallingBack ? claim.servedBy : null),
        }),
    };
  }

  /**
   * Reads and checks a request (`build` refuses what is malformed), finds its model, activates it
   * and sends the request to the claimed engine, once more if that engine was unreachable. The
   * same path for every API: `shape` spells the errors the client's API reads.
   */
  async function serveModelRequest(req: IncomingMessage, res: ServerResponse, shape: ErrorShape, build: (raw: Buffer) => ModelRequest | RouterError): Promise<void> {
    const exchange = trackExchange(res);
    const read = await readBody(req, bodyLimitBytes);
    if (read.kind === 'aborted') return;
    if (read.kind === 'too_large') return sendError(res, tooLarge(read.receivedBytes, bodyLimitBytes), shape);
    const request = build(read.body);
    if (!('send' in request)) return sendError(res, request, shape);
    const resolved = gateway.resolve(request.model);
    if (resolved === undefined) return sendError(res, unknownModel(request.model, gateway.modelIds()), shape);
    // A streamed request that has to wait hears why, as SSE comments, from the moment it waits.
    const { streamError } = request;
    const progress =
      streamError === null ? null : new ProgressComments(res, resolved.modelId, () => gateway.waitProgress?.(resolved.modelId) ?? null, streamError);

    // At most two tries. An engine that dies closes its sockets before its exit reaches the
    // supervisor, so a request sent in that gap meets a refused or reset connection though the
    // model still looked ready. Nothing reached the client yet and the router still holds the
    // body, so it waits until the death is known and activates again (a relaunch, with its own
    // activation bound); a second failure is answered 502. Never after an answer began: part of
    // an answer cannot be taken back. Cost of the rule: a request that itself kills the engine
    // kills it twice — the recovery ladder still quarantines a model that dies on every request.
    for (let attempt = 1; ; attempt++) {
      const ready = await activate(gateway, resolved.modelId, exchange.clientGone, activation, () => progress?.start());
      progress?.stop();
      if (ready.kind === 'client_gone') return;
      if (ready.kind === 'refused') return sendError(res, ready.error, shape);
      const { claim } = ready;
      exchange.finishWith(claim.release);
      if (exchange.clientGone.aborted) return;

      const outcome = await request.send(claim, claim.servedBy !== resolved.modelId, exchange.clientGone);
      if (outcome.kind === 'answered' || exchange.clientGone.aborted) return;
      if (attempt === 2) return sendError(res, unreachableError(claim.servedBy, outcome.cause), shape);
      // This try is over: its claim must not hold a dead engine "busy" meanwhile.
      exchange.finishNow();
      await gateway.engineUnreachable(claim.servedBy, claim.endpoint, exchange.clientGone);
      if (exchange.clientGone.aborted) return;
    }
  }

  function serveModels(res: ServerResponse, modelName: string | null): void {
    const entries = gateway.listModels();
    if (modelName === null) return sendJson(res, { object: 'list', data: entries } satisfies OpenAIModelList<RouterModelEntry>);
    const id = gateway.resolve(modelName)?.modelId;
    const entry = entries.find((candidate) => candidate.id === id);
    if (entry === undefined) return sendError(res, unknownModel(modelName, gateway.modelIds()));
    sendJson(res, entry);
  }

  return {
    handle,
    listen: (listenOptions) => listen(handle, agent, listenOptions),
    close: () => agent.destroy(),
  };
}

/**
 * The client's side of one exchange: `clientGone` aborts when the client disconnects before
 * its answer is complete, and each in-flight count's `finished` runs exactly once: when the
 * response closes for any reason (including a close that came before the count began), or
 * earlier through `finishNow` when a try ends and the request is sent again.
 */
function trackExchange(res: ServerResponse): { clientGone: AbortSignal; finishWith(finished: () => void): void; finishNow(): void } {
  const gone = new AbortController();
  let closed = false;
  let finished: (() => void) | null = null;
  res.once('close', () => {
    closed = true;
    if (!res.writableFinished) gone.abort('client_gone');
    finished?.();
    finished = null;
  });
  return {
    clientGone: gone.signal,
    finishWith(callback) {
      if (closed) callback();
      else finished = callback;
    },
    finishNow() {
      finished?.();
      finished = null;
    },
  };
}

async function listen(handle: Router['handle'], agent: http.Agent, options: ListenOptions = {}): Promise<ListeningRouter> {
  const host = options.host ?? '127.0.0.1';
  const server = http.createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    port,
    url: `http://${urlHost}:${port}/v1`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}

function sendJson(res: ServerResponse, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function unknownModel(name: string, modelIds: readonly string[]): RouterError {
  const known = modelIds.length === 0 ? 'no models are configured' : `the models are: ${[...modelIds].sort().join(', ')}`;
  return { ...notFound(`Model '${name}' does not exist; ${known}.`), code: 'model_not_found', param: 'model' };
}

function notFound(message: string): RouterError {
  return { status: 404, source: 'router', type: 'not_found_error', code: 'not_found', param: null, message };
}

function wrongMethod(path: string, allowed: 'GET' | 'POST'): RouterError {
  return {
    status: 405,
    source: 'router',
    type: 'invalid_request_error',
    code: 'method_not_allowed',
    param: null,
    message: `${path} accepts ${allowed} only.`,
    headers: { allow: allowed },
  };
}

function tooLarge(receivedBytes: number, limitBytes: number): RouterError {
  return {
    status: 413,
    source: 'router',
    type: 'invalid_request_error',
    code: 'request_too_large',
    param: null,
    message: `The request body is at least ${formatBytes(receivedBytes)} (${receivedBytes} bytes); this endpoint accepts at most ${formatBytes(limitBytes)} (${limitBytes} bytes, the bodyLimitBytes setting).`,
  };
}

function internal(error: unknown): RouterError {
  return {
    status: 500,
    source: 'router',
    type: 'server_error',
    code: 'internal_error',
    param: null,
    message: `llmtray's router failed on this request: ${error instanceof Error ? error.message : String(error)}`,
  };
}
