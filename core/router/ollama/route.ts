// How a request in Ollama's API reaches the engine that serves its model: read and translated
// before the load (request.ts), then, once the engine is known, sent to its
// /v1/chat/completions (or /v1/embeddings) and its answer re-told in Ollama's shapes (stream.ts
// for a chat or generation, embeddings.ts for vectors). The router runs the same activation,
// claims, resend and hang handling as for every other API (router.ts).
//
// Not streamed while the model loads: `streamError` is null, so a streamed Ollama request that
// waits gets no early 200 and no progress comments (NDJSON has no comments, and an object that
// is not an answer would be read as one). It gets its answer's headers when the engine answers,
// or the refusal with its status; core/router/README.md says so.
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { inEngineWords } from '../engine/request.js';
import { forwardToEngine, type AnswerShape, type ModelRequest } from '../engine/upstream.js';
import type { RouterError } from '../http/errors.js';
import { sendError } from '../http/send-error.js';
import type { EngineClaim } from '../model-gateway.js';
import { refusedField, refusedTools } from '../openai/request-fields.js';
import { ollamaEngineError, ollamaErrorBody, ollamaErrorLine, ollamaRefused } from './errors.js';
import { ChatStreamToOllama } from './stream.js';
import type { OllamaGeneration } from './request.js';

export const NDJSON = 'application/x-ndjson';

/** What a builder is told besides the request: the model's catalog id, and how to set its idle TTL. */
export interface OllamaTarget {
  modelId: string;
  keepAlive: (modelId: string, ttlMs: number) => void;
}

/** `/api/chat` or `/api/generate`, translated (request.ts), as a model request. */
export function generationRequest(agent: http.Agent, res: ServerResponse, kind: 'chat' | 'generate', generation: OllamaGeneration, target: OllamaTarget): ModelRequest {
  const receivedMs = performance.now();
  return {
    model: target.modelId,
    streamError: null,
    generates: true,
    takesSlot: true,
    send(claim, fallingBack, clientGone) {
      if (generation.keepAliveMs !== null) target.keepAlive(target.modelId, generation.keepAliveMs);
      // An empty prompt is Ollama's load: the activation just loaded it, so it is answered here.
      if (generation.empty) return Promise.resolve(answerLoaded(res, kind, generation.model));
      const chat = forThisEngine(generation, claim);
      if (!chat.ok) {
        sendError(res, chat.error, ollamaErrorBody);
        return Promise.resolve({ kind: 'answered' });
      }
      const body = { model: fallingBack ? claim.servedBy : target.modelId, ...chat.value };
      const sentMs = performance.now();
      const frame = { kind, model: generation.model, stream: generation.stream, receivedMs, sentMs, now: () => performance.now() };
      const promptField = kind === 'chat' ? 'messages' : 'prompt';
      const shape: AnswerShape = {
        json: null,
        stream: () => new ChatStreamToOllama(frame),
        streamContentType: generation.stream ? NDJSON : 'application/json',
        error: (text, status) => ollamaEngineError(text, status, claim.servedBy, promptField),
        errors: ollamaErrorBody,
        streamError: ollamaErrorLine,
      };
      // A conversation kept across its model's eviction goes back into the engine first, as for /v1/chat/completions.
      const restored = claim.beforeChat?.(body) ?? Promise.resolve();
      return restored.then(() => forwardToEngine(agent, res, clientGone, claim, { path: '/v1/chat/completions', body: Buffer.from(JSON.stringify(body)), shape }));
    },
  };
}

/** The chat request as `claim`'s engine takes it: `think` said its way, what it cannot do refused by name. */
function forThisEngine(generation: OllamaGeneration, claim: EngineClaim): { ok: true; value: Record<string, unknown> } | { ok: false; error: RouterError } {
  const { servedBy } = claim;
  if (generation.think === true && claim.engine === 'embedded') {
    return { ok: false, error: ollamaRefused('think', `the embedded engine serving '${servedBy}' renders no thinking block; serve the model with llama-server (engine: llama-server) to have it think`) };
  }
  const chat =
    generation.think === null || claim.engine !== 'llama-server' ? generation.chat : { ...generation.chat, chat_template_kwargs: { enable_thinking: generation.think } };
  const refusal = refusedField('chat.completions', chat, claim.engine, servedBy) ?? refusedTools(chat, claim.toolCalls, servedBy);
  if (refusal !== null) return { ok: false, error: refusal };
  return inEngineWords(chat, claim.engine, servedBy);
}

/** Ollama's answer to a load: done at once, `done_reason` "load". */
function answerLoaded(res: ServerResponse, kind: 'chat' | 'generate', model: string): { kind: 'answered' } {
  sendJson(res, loadAnswer(kind, model, 'load'));
  return { kind: 'answered' };
}

/** Ollama's answer to a load or an unload, which generate nothing. */
export function loadAnswer(kind: 'chat' | 'generate', model: string, reason: 'load' | 'unload'): Record<string, unknown> {
  const text = kind === 'chat' ? { message: { role: 'assistant', content: '' } } : { response: '' };
  return { model, created_at: new Date().toISOString(), ...text, done: true, done_reason: reason };
}

export function sendJson(res: ServerResponse, value: unknown, status = 200): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
