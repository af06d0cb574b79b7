// The engine's HTTP surface: llama-server's endpoint subset on one node:http server.
//
// It listens before the model is loaded, as llama-server does, so /health can answer 503
// with the load progress while loading and the supervisor sees a live process rather than a
// closed port. Every endpoint except /health needs the API key when one is set: the router
// holds the key, and recent llama-server builds allow every CORS origin, so an engine port
// without a key would be open to any web page on the machine.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { handleChatCompletion, handleCompletion, type CompletionEngine } from './completion-handlers.js';
import type { EmbeddingService } from './embeddings.js';
import { badRequest, HttpError } from './http-error.js';
import { metricsText, modelsBody, slotsBody, type StatusSource } from './status-endpoints.js';
import { handleApplyTemplate, handleTokenize } from './tokenize-endpoints.js';

export interface ServingEngine extends CompletionEngine, StatusSource {
  embeddings: EmbeddingService;
}

export type EnginePhase = { phase: 'loading'; progress: number } | { phase: 'ready'; engine: ServingEngine };

export interface EngineServerOptions {
  apiKey: string | undefined;
  /** Read on every request: the load finishing switches the answers over. */
  phase: () => EnginePhase;
  log: (line: string) => void;
}

const MAX_BODY_BYTES = 16 * 1024 * 1024;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}

function keyMatches(header: string | undefined, key: string): boolean {
  const given = header?.startsWith('Bearer ') ? header.slice('Bearer '.length) : '';
  // Hash both sides so the comparison takes the same time whatever the lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(key).digest();
  return timingSafeEqual(a, b) && given.length > 0;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the request body is over ${MAX_BODY_BYTES} bytes`, 'invalid_request_error');
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (error) {
    throw badRequest(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

type Route = (engine: ServingEngine, req: IncomingMessage, res: ServerResponse) => Promise<void> | void;

const ROUTES: Record<string, Route> = {
  'GET /v1/models': (e, _q, res) => sendJson(res, 200, modelsBody(e)),
  'GET /slots': (e, _q, res) => sendJson(res, 200, slotsBody(e)),
  'GET /metrics': (e, _q, res) => {
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
    res.end(metricsText(e));
  },
  'POST /v1/chat/completions': async (e, req, res) => handleChatCompletion(e, await readJson(req), req, res),
  'POST /v1/completions': async (e, req, res) => handleCompletion(e, await readJson(req), req, res),
  'POST /v1/embeddings': async (e, req, res) => e.embeddings.handle(await readJson(req), res),
  'POST /tokenize': async (e, req, res) => handleTokenize(e, await readJson(req), res),
  'POST /apply-template': async (e, req, res) => handleApplyTemplate(e, await readJson(req), res),
};

/** llama-server answers these without the /v1 prefix too. */
const ALIASES: Record<string, string> = {
  'GET /models': 'GET /v1/models',
  'POST /chat/completions': 'POST /v1/chat/completions',
  'POST /completions': 'POST /v1/completions',
  'POST /embeddings': 'POST /v1/embeddings',
};

export function createEngineServer(opts: EngineServerOptions): Server {
  return createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const key = `${req.method ?? 'GET'} ${path}`;
    const phase = opts.phase();
    const handle = async (): Promise<void> => {
      if (path === '/health' || path === '/v1/health') {
        if (phase.phase === 'loading') {
          sendJson(res, 503, { ...new HttpError(503, 'Loading model', 'unavailable_error').body(), progress: phase.progress });
        } else {
          sendJson(res, 200, { status: 'ok' });
        }
        return;
      }
      if (opts.apiKey !== undefined && !keyMatches(req.headers.authorization, opts.apiKey)) {
        throw new HttpError(401, 'Invalid API Key', 'authentication_error');
      }
      const route = ROUTES[ALIASES[key] ?? key];
      if (!route) throw new HttpError(404, `File Not Found: ${req.method} ${path}`, 'not_found_error');
      if (phase.phase === 'loading') throw new HttpError(503, 'Loading model', 'unavailable_error');
      await route(phase.engine, req, res);
    };
    handle().catch((error: unknown) => {
      // A client that left while waiting for a slot is not a server error: nobody to answer.
      if (res.destroyed) return;
      const e = error instanceof HttpError ? error : new HttpError(500, (error as Error)?.message ?? String(error), 'server_error');
      if (e.status >= 500) opts.log(`srv  log_server_r: request: ${key} ${e.status}: ${e.message}`);
      if (res.headersSent) res.end();
      else sendJson(res, e.status, e.body());
    });
  });
}
