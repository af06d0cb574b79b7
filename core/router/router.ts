// llmtray's OpenAI-compatible endpoint: local apps send `/v1/...` here with a `model` name,
// and the router finds (or loads) the engine that serves it and streams the answer through.
// Anthropic's Messages API (`/v1/messages`), OpenAI's Responses API, Ollama's API (`/api/chat`,
// `/api/tags`, …) and llama.cpp's own routes are served on the same path, by the same activation:
// only the last step, how the request reaches the engine, is each API's own, in its folder
// (openai/route.ts, anthropic/route.ts, responses/route.ts, ollama/serve.ts, llama/routes.ts).
//
// The router owns the loopback listener, so its guards (Host, Origin) run for every request
// on it; paths outside `/v1` (but Ollama's, which share `/api/` with the admin API, and
// llama.cpp's) go to `fallthrough` (the admin API, /metrics, the dashboard's files), which then
// never has to think about DNS rebinding. See README.md for the flow.
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OpenAIModelList } from '../contracts/protocols/openai.js';
import { arrivedOnLoopback } from '../common/loopback.js';
import { Notice } from '../common/notice.js';
import { pathOf } from '../common/url-path.js';
import { activate } from './activation.js';
import type { ModelGateway, RouterModelEntry } from './model-gateway.js';
import { embeddingModelAsked, errorBody, internal, modelBeingWritten, notFound, tooLarge, unknownModel, wrongMethod, type ErrorShape, type RouterError } from './http/errors.js';
import { sendError } from './http/send-error.js';
import { lingerOnClose } from './http/lingering-close.js';
import { answerProtocolErrors } from './http/protocol-errors.js';
import { readBody } from './http/read-body.js';
import { checkClientKey, type ClientKey } from './http/client-keys.js';
import { answerPreflight, applyCors, forbidden, refuseHostOrOrigin, type GuardOptions } from './http/request-guard.js';
import { ProgressComments } from './http/progress-comments.js';
import { startTrace, type RequestRecorder } from './http/request-trace.js';
import type { RequestWait } from '../contracts/requests/request-record.js';
import { assertNever } from '../contracts/assert-never.js';
import { unreachableError, type ModelRequest } from './engine/upstream.js';
import { openAIRequest } from './openai/route.js';
import type { OpenAIEndpoint } from './openai/validate-request.js';
import { anthropicErrorBody } from './anthropic/errors.js';
import { countTokensRequest, messagesRequest } from './anthropic/route.js';
import { responsesRequest } from './responses/route.js';
import { ollamaErrorBody } from './ollama/errors.js';
import { isOllamaPath, serveOllama, type OllamaContext } from './ollama/serve.js';
import type { OllamaPulls } from './ollama/pulls.js';
import { isLlamaCompatPath, llamaRouterStatus, llamaServerRouteRequest, MODEL_COMMAND_ROUTES, runModelCommand, type ModelCommands } from './llama/routes.js';

export interface RouterOptions {
  gateway: ModelGateway;
  /** How long a request waits for a cold model before a 503 with Retry-After, ms. Default 45 000. */
  activationWaitMs?: number;
  /** The Retry-After of that 503, seconds. Default 10. */
  retryAfterSeconds?: number;
  /** Largest accepted request body, bytes (413 above). Default 10 MiB. */
  bodyLimitBytes?: number;
  /**
   * Who may use the listener, read on every request so that a config reload applies to the
   * next one (a key removed from listen.clientKeys stops working at once). Default: loopback
   * names only, no keys, no CORS, the fallthrough for loopback connections only.
   */
  access?: () => RouterAccess;
  /** Handles every request outside `/v1` once the guards passed. Default: 404. */
  fallthrough?: (req: IncomingMessage, res: ServerResponse) => void;
  /** The tray's load and unload, for llama.cpp router mode's `POST /models/load` and `/models/unload` (llama/routes.ts). Absent: 501. */
  modelCommands?: ModelCommands;
  /** Where each model request's record goes once it ended (http/request-trace.ts). Absent: nothing is recorded, nothing is read from answers. */
  requests?: RequestRecorder;
  /** The daemon's pulls from the Hugging Face Hub, for Ollama's `/api/pull` and `/api/delete` (ollama/pulls.ts). Absent: 501. */
  pulls?: OllamaPulls;
}

export interface RouterAccess extends GuardOptions {
  /** Keys `/v1` requests must present once there is one (http/client-keys.ts). */
  clientKeys: readonly ClientKey[];
  /** A network listener: `/v1` refuses everything while no key is configured. */
  keysRequired: boolean;
  /**
   * Whether connections that did not arrive on a loopback address may reach the fallthrough
   * (the admin API, /metrics, the dashboard). The admin API has its own token as well; this
   * keeps it off the network unless the person asked (listen.admin: network).
   */
  fallthroughFromNetwork: boolean;
}

export const LOOPBACK_ONLY_ACCESS: RouterAccess = {
  clientKeys: [],
  keysRequired: false,
  allowedHosts: [],
  corsOrigins: [],
  fallthroughFromNetwork: false,
};

export interface ListenOptions {
  /** Default 0: a free port, reported in the result. */
  port?: number;
  /** Default '127.0.0.1'. Anything else exposes the models to the network; see RouterAccess. */
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

/** Anthropic's Messages API: each path's request builder (anthropic/route.ts). */
const ANTHROPIC_ROUTES = {
  '/v1/messages': messagesRequest,
  '/v1/messages/count_tokens': countTokensRequest,
} as const;

/** OpenAI's Responses API, answered through chat completions (responses/route.ts). */
const RESPONSES_PATH = '/v1/responses';

/** Whose error shape a path's client reads: Anthropic's SDKs cannot read OpenAI's, nor Ollama's clients either. */
function errorShapeFor(path: string): ErrorShape {
  if (isOllamaPath(path)) return ollamaErrorBody;
  return path === '/v1/messages' || path.startsWith('/v1/messages/') ? anthropicErrorBody : errorBody;
}

export function createRouter(options: RouterOptions): Router {
  const { gateway } = options;
  const accessNow = options.access ?? (() => LOOPBACK_ONLY_ACCESS);
  const activation = {
    waitMs: options.activationWaitMs ?? DEFAULT_ACTIVATION_WAIT_MS,
    retryAfterSeconds: options.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS,
  };
  const bodyLimitBytes = options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  /** A name no model answers to: a file still being written under it is coming (503), anything else does not exist (404). */
  const noSuchModel = (name: string): RouterError => {
    const file = gateway.beingWritten?.(name);
    return file === undefined ? unknownModel(name, gateway.modelIds()) : modelBeingWritten(file, activation.retryAfterSeconds);
  };
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
    const path = pathOf(req.url);
    const endpoint = GENERATION_ROUTES[path];
    const anthropic = path === '/v1/messages' || path === '/v1/messages/count_tokens' ? path : null;
    // Only a model request's body is read (readBody); any other is drained as it arrives, and so
    // is one refused before its body is read. Closing a socket with unread bytes in it makes the
    // kernel send a reset, and a client still sending loses the tail of the answer (the fuzz
    // suite found a GET with a megabyte of chunked body getting half a dashboard file).
    const llamaCompat = isLlamaCompatPath(path);
    const responses = path === RESPONSES_PATH;
    const ollama = isOllamaPath(path);
    if (req.method !== 'POST' || (endpoint === undefined && anthropic === null && !responses && !llamaCompat && !ollama)) req.resume();
    const refuse = (error: RouterError): void => {
      req.resume();
      sendError(res, error, shape);
    };
    const access = accessNow();
    const refusal = refuseHostOrOrigin(req, access);
    if (refusal !== null) return refuse(refusal);
    if (path !== '/v1' && !path.startsWith('/v1/') && !llamaCompat && !ollama) {
      if (!access.fallthroughFromNetwork && !arrivedOnLoopback(req.socket.localAddress)) {
        return refuse(forbidden(`${path} is served on loopback only: the admin API, /metrics and the dashboard answer connections to 127.0.0.1 or [::1]. Use them on this machine, or set listen.admin: network in llmtray's config.yaml to serve them on the network too (the admin API still needs its token).`));
      }
      if (options.fallthrough !== undefined) return options.fallthrough(req, res);
      return refuse(notFound(`Nothing is served at ${path}; the OpenAI-compatible API is under /v1.`));
    }
    if (answerPreflight(req, res, access.corsOrigins)) return;
    applyCors(req, res, access.corsOrigins);
    const key = checkClientKey(req, access.clientKeys, access.keysRequired);
    if (!key.ok) return refuse(key.error);
    if (ollama) return serveOllama(req, res, path, ollamaContext, key.name);

    if (endpoint !== undefined) {
      if (req.method !== 'POST') return refuse(wrongMethod(path, 'POST'));
      const build = (raw: Buffer): ModelRequest | RouterError => openAIRequest(agent, res, endpoint, path, raw);
      serveModelRequest(req, res, shape, key.name, build).catch((error: unknown) => refuse(internal(error)));
      return;
    }
    if (anthropic !== null) {
      if (req.method !== 'POST') return refuse(wrongMethod(path, 'POST'));
      const build = (raw: Buffer): ModelRequest | RouterError => ANTHROPIC_ROUTES[anthropic](agent, res, raw);
      serveModelRequest(req, res, shape, key.name, build).catch((error: unknown) => refuse(internal(error)));
      return;
    }
    if (responses) {
      if (req.method !== 'POST') return refuse(wrongMethod(path, 'POST'));
      const build = (raw: Buffer): ModelRequest | RouterError => responsesRequest(agent, res, raw);
      serveModelRequest(req, res, shape, key.name, build).catch((error: unknown) => refuse(internal(error)));
      return;
    }
    if (llamaCompat) {
      if (req.method !== 'POST') return refuse(wrongMethod(path, 'POST'));
      const command = MODEL_COMMAND_ROUTES[path];
      if (command !== undefined) {
        readBody(req, bodyLimitBytes)
          .then((read) => {
            if (read.kind === 'aborted') return;
            if (read.kind === 'too_large') return sendError(res, tooLarge(read.receivedBytes, bodyLimitBytes));
            const resolve = (name: string): string | undefined => gateway.resolve(name)?.modelId;
            return runModelCommand(res, read.body, command, options.modelCommands, resolve, noSuchModel);
          })
          .catch((error: unknown) => refuse(internal(error)));
        return;
      }
      const build = (raw: Buffer): ModelRequest | RouterError => llamaServerRouteRequest(agent, res, path, raw);
      serveModelRequest(req, res, shape, key.name, build).catch((error: unknown) => refuse(internal(error)));
      return;
    }
    if (path === '/v1/models' || path.startsWith('/v1/models/')) {
      if (req.method !== 'GET') return refuse(wrongMethod(path, 'GET'));
      return serveModels(res, path === '/v1/models' ? null : safeDecode(path.slice('/v1/models/'.length)));
    }
    refuse(
      notFound(`Unknown endpoint ${req.method ?? ''} ${path}; llmtray serves /v1/chat/completions, /v1/completions, /v1/embeddings, /v1/responses, /v1/models, Anthropic's /v1/messages and /v1/messages/count_tokens, and Ollama's API under /api/ (/api/chat, /api/generate, /api/tags, …).`),
    );
  }

  /**
   * Reads and checks a request (`build` refuses what is malformed), finds its model, activates it
   * and sends the request to the claimed engine, once more if that engine was unreachable. The
   * same path for every API: `shape` spells the errors the client's API reads. `body`: the body,
   * where the API's own dispatch read it already (Ollama's, which decides by the body whether a
   * request is one for a model at all).
   */
  async function serveModelRequest(req: IncomingMessage, res: ServerResponse, shape: ErrorShape, client: string | null, build: (raw: Buffer) => ModelRequest | RouterError, body?: Buffer): Promise<void> {
    const exchange = trackExchange(res);
    const trace = options.requests === undefined ? null : startTrace(res, pathOf(req.url), client, options.requests);
    const read = body === undefined ? await readBody(req, bodyLimitBytes) : ({ kind: 'read', body } as const);
    if (read.kind === 'aborted') return;
    if (read.kind === 'too_large') return sendError(res, tooLarge(read.receivedBytes, bodyLimitBytes), shape);
    trace?.received(read.body);
    const request = build(read.body);
    if (!('send' in request)) return sendError(res, request, shape);
    const { streamError } = request;
    trace?.asked(request.model, streamError !== null);
    const resolved = gateway.resolve(request.model);
    if (resolved === undefined) return sendError(res, noSuchModel(request.model), shape);
    trace?.asked(resolved.modelId, streamError !== null);
    if (request.generates && resolved.embeddingsOnly !== null) return sendError(res, embeddingModelAsked(resolved.modelId, resolved.embeddingsOnly), shape);
    // A streamed request that has to wait hears why, as SSE comments, from the moment it waits.
    const progress =
      streamError === null ? null : new ProgressComments(res, resolved.modelId, () => gateway.waitProgress?.(resolved.modelId) ?? null, streamError);

    // At most two tries. An engine that dies closes its sockets before its exit reaches the
    // supervisor, so a request sent in that gap meets a refused or reset connection though the
    // model still looked ready. Nothing reached the client yet and the router still holds the
    // body, so it waits until the death is known and activates again (a relaunch, with its own
    // activation bound); a second failure is answered 502. Never after an answer began: part of
    // an answer cannot be taken back. Cost of the rule: a request that itself kills the engine
    // kills it twice — and, as it never answered, each death counts on the recovery ladder, which
    // quarantines a model that dies on every request (the ladder starts over only once a server
    // has answered: Controller.served).
    for (let attempt = 1; ; attempt++) {
      const onWaiting = (): void => {
        trace?.waiting(waitOf(gateway, resolved.modelId));
        progress?.start();
      };
      const ready = await activate(gateway, resolved.modelId, exchange.clientGone, activation, onWaiting, request.takesSlot);
      progress?.stop();
      if (ready.kind === 'client_gone') return;
      if (ready.kind === 'refused') return sendError(res, ready.error, shape);
      const { claim } = ready;
      trace?.taken(claim.servedBy);
      exchange.finishWith(claim.release);
      if (exchange.clientGone.aborted) return;

      const outcome = await request.send(claim, claim.servedBy !== resolved.modelId, exchange.clientGone);
      if (outcome.kind === 'answered' || exchange.clientGone.aborted) return;
      if (attempt === 2) return sendError(res, unreachableError(claim.servedBy, outcome.cause, true), shape);
      // This try is over: its claim must not hold a dead engine "busy" meanwhile.
      exchange.finishNow();
      await gateway.engineUnreachable(claim.servedBy, claim.endpoint, exchange.clientGone.signal);
      if (exchange.clientGone.aborted) return;
    }
  }

  const ollamaContext: OllamaContext = {
    gateway,
    agent,
    bodyLimitBytes,
    serveModelRequest,
    ...(options.modelCommands === undefined ? {} : { unload: options.modelCommands.unload }),
    ...(options.pulls === undefined ? {} : { pulls: options.pulls, pullFollowers: new Map<string, number>() }),
  };

  function serveModels(res: ServerResponse, modelName: string | null): void {
    // llama.cpp router mode's `status` beside llmtray's own `state`, for clients made for it.
    const entries = gateway.listModels().map((entry) => ({ ...entry, status: llamaRouterStatus(entry.state) }));
    if (modelName === null) return sendJson(res, { object: 'list', data: entries } satisfies OpenAIModelList<RouterModelEntry>);
    const id = gateway.resolve(modelName)?.modelId;
    const entry = entries.find((candidate) => candidate.id === id);
    if (entry === undefined) return sendError(res, noSuchModel(modelName));
    sendJson(res, entry);
  }

  return {
    handle,
    listen: (listenOptions) => listen(handle, agent, listenOptions),
    close: () => agent.destroy(),
  };
}

/** What a request that starts to wait waits for, in its record's words: its model's load, or room (memory, a turn, a free slot). */
function waitOf(gateway: ModelGateway, modelId: string): RequestWait {
  const progress = gateway.waitProgress?.(modelId);
  if (progress === undefined) return 'load';
  switch (progress.kind) {
    case 'loading':
    case 'queued':
    case 'retry':
    case 'stopping':
      return 'load';
    case 'memory':
    case 'turn':
    // A free slot of its model (parallel): room in the engine rather than in memory, but room all the same, made when another request ends.
    case 'slot':
      return 'room';
    default:
      return assertNever(progress);
  }
}

/**
 * The client's side of one exchange: `clientGone` aborts when the client disconnects before
 * its answer is complete, and each in-flight count's `finished` runs exactly once: when the
 * response closes for any reason (including a close that came before the count began), or
 * earlier through `finishNow` when a try ends and the request is sent again.
 */
function trackExchange(res: ServerResponse): { clientGone: Notice; finishWith(finished: () => void): void; finishNow(): void } {
  // A Notice rather than an AbortController: every request makes one, and almost none fires (notice.ts).
  const gone = new Notice();
  let closed = false;
  let finished: (() => void) | null = null;
  res.once('close', () => {
    closed = true;
    if (!res.writableFinished) gone.abort('client_gone');
    finished?.();
    finished = null;
  });
  return {
    clientGone: gone,
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
  // No Host header is the guard's to refuse (a JSON 403 naming the rule), not a bare 400 from Node.
  const server = http.createServer({ requireHostHeader: false }, handle);
  answerProtocolErrors(server);
  lingerOnClose(server);
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
