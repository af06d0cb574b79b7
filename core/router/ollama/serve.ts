// Ollama's API on llmtray's listener: which of its paths exist, and what answers each. router.ts
// sends every path `isOllamaPath` names here, after the same guards as `/v1` (Host, Origin,
// client keys; never the admin token); every other `/api/` path stays the admin API.
//
// The model routes (/api/chat, /api/generate, /api/embed, /api/embeddings) go through the
// router's `serveModelRequest` like every other API: one activation, one claim, one resend rule.
// /api/pull and /api/delete go to the daemon's pulls (pulls.ts, over core/pull). The rest answers
// from the gateway's cards (models.ts), or refuses by name.
import type http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage } from '../../contracts/error-message.js';
import { invalidRequest, tooLarge, wrongMethod, type ErrorShape, type RouterError } from '../http/errors.js';
import { readBody } from '../http/read-body.js';
import { sendError } from '../http/send-error.js';
import type { ModelRequest } from '../engine/upstream.js';
import type { ModelGateway } from '../model-gateway.js';
import { embeddingRequest, toOllamaEmbedding } from './embeddings.js';
import { ollamaErrorBody, ollamaModelNotFound, ollamaNotImplemented } from './errors.js';
import { OLLAMA_API_VERSION, psEntry, showAnswer, tagsEntry } from './models.js';
import { catalogNamesFor, ollamaNameOf } from './names.js';
import { generationRequest, loadAnswer, sendJson } from './route.js';
import { readOllamaBody, toOllamaGeneration, type OllamaBody, type OllamaModelFacts } from './request.js';
import { serveDelete, servePull, type OllamaPulls } from './pulls.js';

type Method = 'GET' | 'POST' | 'DELETE';

/** Ollama's paths and the method each takes; `/api/blobs/<digest>` apart. */
const OLLAMA_ROUTES: Record<string, Method> = {
  '/api/version': 'GET',
  '/api/tags': 'GET',
  '/api/ps': 'GET',
  '/api/show': 'POST',
  '/api/chat': 'POST',
  '/api/generate': 'POST',
  '/api/embed': 'POST',
  '/api/embeddings': 'POST',
  '/api/pull': 'POST',
  '/api/delete': 'DELETE',
  '/api/copy': 'POST',
  '/api/create': 'POST',
  '/api/push': 'POST',
};

const BLOBS = '/api/blobs/';

/** Whether `path` is Ollama's API rather than llmtray's admin API (which keeps every other `/api/` path). */
export function isOllamaPath(path: string): boolean {
  return OLLAMA_ROUTES[path] !== undefined || path.startsWith(BLOBS);
}

/** What the Ollama routes need of the router that serves them. */
export interface OllamaContext {
  gateway: ModelGateway;
  agent: http.Agent;
  bodyLimitBytes: number;
  /** The router's one path for a model request (router.ts), with the body already read. */
  serveModelRequest(req: IncomingMessage, res: ServerResponse, shape: ErrorShape, client: string | null, build: (raw: Buffer) => ModelRequest | RouterError, body: Buffer): Promise<void>;
  /** The tray's unload, for `keep_alive: 0` with nothing to generate; absent: refused with 501. */
  unload?: (modelId: string) => Promise<{ ok: boolean; message: string }>;
  /** The daemon's pulls from the Hugging Face Hub, for `/api/pull` and `/api/delete`; absent: both refused with 501. */
  pulls?: OllamaPulls;
  /** Per pull id, how many `/api/pull` requests follow a pull an Ollama request started (pulls.ts: the last to leave early cancels it). */
  pullFollowers?: Map<string, number>;
}

const NO_PULLS = 'this listener has no pulls; `llmtray pull hf.co/OWNER/REPO:QUANT` pulls a model into a running daemon.';
const COPY_REFUSED =
  "llmtray's names come from config.yaml (`aliases:` and the models' ids), which llmtray does not write while it runs; add `aliases: { NEW: SOURCE }` there, and the running daemon picks it up.";

/** Answers one request on an Ollama path. Never throws: every failure is an answer in Ollama's shape. */
/** `client`: the client key's name, or null (local), for the request's record. */
export function serveOllama(req: IncomingMessage, res: ServerResponse, path: string, context: OllamaContext, client: string | null): void {
  const refuse = (error: RouterError): void => {
    req.resume();
    sendError(res, error, ollamaErrorBody);
  };
  if (path.startsWith(BLOBS)) return refuse(ollamaNotImplemented(path, 'llmtray creates no models from uploaded blobs; put the GGUF file in a model folder (modelDirs) instead.'));
  const method = OLLAMA_ROUTES[path] as Method;
  // Every route here takes its one method, as Ollama's server does.
  if (req.method !== method) return refuse({ ...wrongMethod(path, 'GET'), message: `${path} accepts ${method} only.`, headers: { allow: method } });
  switch (path) {
    case '/api/version':
      return sendJson(res, { version: OLLAMA_API_VERSION });
    case '/api/tags':
      return void listTags(res, context.gateway).catch((error: unknown) => refuse(failed(error)));
    case '/api/ps':
      return void listResident(res, context.gateway).catch((error: unknown) => refuse(failed(error)));
    case '/api/pull':
    case '/api/delete':
      if (context.pulls === undefined) return refuse(ollamaNotImplemented(path, NO_PULLS));
      return void withPullBody(req, res, context, path, context.pulls).catch((error: unknown) => refuse(failed(error)));
    case '/api/copy':
      return refuse(ollamaNotImplemented(path, COPY_REFUSED));
    case '/api/create':
      return refuse(ollamaNotImplemented(path, 'llmtray serves GGUF files as they are; a model with another context, template or parameters is an entry in config.yaml (models:).'));
    case '/api/push':
      return refuse(ollamaNotImplemented(path, 'llmtray pushes no models to a registry.'));
    default:
      return void withBody(req, res, context, path, client).catch((error: unknown) => refuse(failed(error)));
  }
}

function failed(error: unknown): RouterError {
  return { status: 500, source: 'router', type: 'server_error', code: 'internal_error', param: null, message: `llmtray's router failed on this request: ${errorMessage(error)}` };
}

/** The catalog id an Ollama name means, and what the translation must know of it; or Ollama's 404 (501 on a gateway without model facts). */
function lookUp(gateway: ModelGateway, name: string): { modelId: string; facts: OllamaModelFacts } | RouterError {
  for (const candidate of catalogNamesFor(name)) {
    const modelId = gateway.resolve(candidate)?.modelId;
    if (modelId === undefined) continue;
    if (gateway.modelFacts === undefined) return ollamaNotImplemented("Ollama's model routes", 'this listener knows no model facts (whether a model sees images, its context).');
    const facts = gateway.modelFacts(modelId);
    if (facts !== undefined) return { modelId, facts };
  }
  return ollamaModelNotFound(name, gateway.modelIds().map(ollamaNameOf));
}

async function withPullBody(req: IncomingMessage, res: ServerResponse, context: OllamaContext, path: string, pulls: OllamaPulls): Promise<void> {
  const read = await readBody(req, context.bodyLimitBytes);
  if (read.kind === 'aborted') return;
  if (read.kind === 'too_large') return sendError(res, tooLarge(read.receivedBytes, context.bodyLimitBytes), ollamaErrorBody);
  let body: unknown;
  try {
    body = JSON.parse(read.body.toString('utf8'));
  } catch (error) {
    return sendError(res, invalidRequest(null, `The request body is not JSON: ${errorMessage(error)}`), ollamaErrorBody);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return sendError(res, invalidRequest(null, 'The request body must be a JSON object.'), ollamaErrorBody);
  const fields = body as Record<string, unknown>;
  if (path === '/api/delete') return serveDelete(res, pulls, fields);
  return servePull(res, pulls, fields, (context.pullFollowers ??= new Map()));
}

async function withBody(req: IncomingMessage, res: ServerResponse, context: OllamaContext, path: string, client: string | null): Promise<void> {
  const read = await readBody(req, context.bodyLimitBytes);
  if (read.kind === 'aborted') return;
  if (read.kind === 'too_large') return sendError(res, tooLarge(read.receivedBytes, context.bodyLimitBytes), ollamaErrorBody);
  const parsed = readOllamaBody(read.body);
  if (!parsed.ok) return sendError(res, parsed.error, ollamaErrorBody);
  const found = lookUp(context.gateway, parsed.value.model);
  if (!('modelId' in found)) return sendError(res, found, ollamaErrorBody);
  if (path === '/api/show') return show(res, context.gateway, found.modelId, parsed.value);
  const build = buildFor(res, context, path, parsed.value, found);
  if (!('send' in build) && 'status' in build) return sendError(res, build, ollamaErrorBody);
  if ('unload' in build) return unload(res, context, found.modelId, build.unload);
  return context.serveModelRequest(req, res, ollamaErrorBody, client, () => build, read.body);
}

/** The model request for a generation or embedding route, the unload it asks for instead, or its refusal. */
function buildFor(
  res: ServerResponse,
  context: OllamaContext,
  path: string,
  read: OllamaBody,
  found: { modelId: string; facts: OllamaModelFacts },
): ModelRequest | RouterError | { unload: { kind: 'chat' | 'generate'; model: string } } {
  const keepAlive = (modelId: string, ttlMs: number): void => context.gateway.keepAlive?.(modelId, ttlMs);
  const target = { modelId: found.modelId, keepAlive };
  if (path === '/api/embed' || path === '/api/embeddings') {
    const embedding = toOllamaEmbedding(path === '/api/embed' ? 'embed' : 'embeddings', read, found.facts);
    return embedding.ok ? embeddingRequest(context.agent, res, embedding.value, target) : embedding.error;
  }
  const kind = path === '/api/chat' ? 'chat' : 'generate';
  const generation = toOllamaGeneration(kind, read, found.facts);
  if (!generation.ok) return generation.error;
  // Ollama's unload: nothing to generate and keep_alive 0. Nothing is loaded for it.
  if (generation.value.empty && generation.value.keepAliveMs === 0) return { unload: { kind, model: generation.value.model } };
  return generationRequest(context.agent, res, kind, generation.value, target);
}

async function unload(res: ServerResponse, context: OllamaContext, modelId: string, asked: { kind: 'chat' | 'generate'; model: string }): Promise<void> {
  if (context.unload === undefined) return sendError(res, ollamaNotImplemented('keep_alive: 0', 'this listener has no way to unload models.'), ollamaErrorBody);
  // An app's unload does not lift a person's pin: the admin Unload would unpin it, so it is not asked.
  if (context.gateway.isPinned?.(modelId) === true) {
    return sendError(res, { ...invalidRequest('keep_alive', `'${modelId}' is pinned in llmtray, so an app's keep_alive 0 does not unload it; unpin it first (llmtray unpin ${modelId}).`), status: 409 }, ollamaErrorBody);
  }
  const result = await context.unload(modelId);
  if (!result.ok) return sendError(res, invalidRequest('model', result.message), ollamaErrorBody);
  sendJson(res, loadAnswer(asked.kind, asked.model, 'unload'));
}

async function show(res: ServerResponse, gateway: ModelGateway, modelId: string, read: OllamaBody): Promise<void> {
  const card = await gateway.describe?.(modelId, { verbose: read.body['verbose'] === true });
  if (card === undefined) return sendError(res, ollamaNotImplemented('/api/show', 'this listener has no model cards.'), ollamaErrorBody);
  sendJson(res, showAnswer(card));
}

async function listTags(res: ServerResponse, gateway: ModelGateway): Promise<void> {
  const cards = await Promise.all(gateway.modelIds().map((id) => gateway.describe?.(id, { verbose: false })));
  sendJson(res, { models: cards.filter((card) => card !== undefined).map(tagsEntry) });
}

async function listResident(res: ServerResponse, gateway: ModelGateway): Promise<void> {
  const residents = gateway.residents?.() ?? [];
  const cards = await Promise.all(residents.map((resident) => gateway.describe?.(resident.modelId, { verbose: false })));
  sendJson(res, { models: residents.map((resident, i) => psEntry(resident, cards[i])) });
}
