// Ollama's `/api/embed` (`input`: a text or a list) and its older `/api/embeddings` (`prompt`:
// one text), sent to the engine's /v1/embeddings as floats, so the vectors are the ones
// /v1/embeddings gives for the same text, and re-told in Ollama's shapes: `{model, embeddings,
// total_duration, load_duration, prompt_eval_count}` and `{embedding}`.
import type http from 'node:http';
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { isObject } from '../../common/is-object.js';
import { forwardToEngine, type ModelRequest } from '../engine/upstream.js';
import { describe, invalidRequest, type RouterError } from '../http/errors.js';
import type { Translated } from '../openai/chat-translation.js';
import { ollamaEngineError, ollamaErrorBody, ollamaErrorLine, ollamaRefused } from './errors.js';
import { OLLAMA_FIELDS, refusedOllamaField } from './fields.js';
import { readKeepAlive } from './keep-alive.js';
import { numCtxRefusal, type OllamaBody, type OllamaModelFacts } from './request.js';
import type { OllamaTarget } from './route.js';

export interface OllamaEmbedding {
  kind: 'embed' | 'embeddings';
  model: string;
  inputs: string[];
  keepAliveMs: number | null;
}

/** `/api/embed` or `/api/embeddings`, checked, or the refusal naming what cannot be said. */
export function toOllamaEmbedding(kind: 'embed' | 'embeddings', read: OllamaBody, facts: OllamaModelFacts): Translated<OllamaEmbedding> {
  const { body, model } = read;
  const { name: _old, ...fields } = body;
  const refused = refusedOllamaField(OLLAMA_FIELDS[kind], fields);
  if (refused !== null) return { ok: false, error: ollamaRefused(refused.field, refused.why) };
  const options = optionsRefusal(body['options'], facts);
  if (options !== null) return { ok: false, error: options };
  const keepAlive = readKeepAlive(body['keep_alive']);
  if (!keepAlive.ok) return { ok: false, error: invalidRequest('keep_alive', keepAlive.message) };
  const field = kind === 'embed' ? 'input' : 'prompt';
  const value = body[field];
  const inputs = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((text) => typeof text === 'string')) {
    const expected = kind === 'embed' ? 'a text or a non-empty list of texts' : 'a text';
    return { ok: false, error: invalidRequest(field, `'${field}' must be ${expected}; got ${describe(value)}.`) };
  }
  if (kind === 'embeddings' && typeof value !== 'string') return { ok: false, error: invalidRequest('prompt', `'prompt' must be a text; got ${describe(value)}.`) };
  return { ok: true, value: { kind, model, inputs: inputs as string[], keepAliveMs: keepAlive.ms } };
}

/** An embedding samples nothing: of the options only `num_ctx` means something (checked), the rest is refused by name. */
function optionsRefusal(options: unknown, facts: OllamaModelFacts): RouterError | null {
  if (options === undefined || options === null) return null;
  if (!isObject(options)) return invalidRequest('options', `'options' must be an object; got ${describe(options)}.`);
  for (const [option, value] of Object.entries(options)) {
    if (value === undefined || value === null) continue;
    if (option === 'num_ctx') {
      const refusal = numCtxRefusal(value, facts);
      if (refusal !== null) return refusal;
      continue;
    }
    return ollamaRefused(`options.${option}`, 'an embedding samples nothing, so it takes no sampling or generation options (num_ctx only)');
  }
  return null;
}

/** The embedding as a model request to the engine's /v1/embeddings. */
export function embeddingRequest(agent: http.Agent, res: ServerResponse, embedding: OllamaEmbedding, target: OllamaTarget): ModelRequest {
  const receivedMs = performance.now();
  return {
    model: target.modelId,
    streamError: null,
    generates: false,
    takesSlot: true,
    send(claim, fallingBack, clientGone) {
      if (embedding.keepAliveMs !== null) target.keepAlive(target.modelId, embedding.keepAliveMs);
      const sentMs = performance.now();
      const body = { model: fallingBack ? claim.servedBy : target.modelId, input: embedding.inputs, encoding_format: 'float' };
      return forwardToEngine(agent, res, clientGone, claim, {
        path: '/v1/embeddings',
        body: Buffer.from(JSON.stringify(body)),
        shape: {
          json: (text) => ollamaVectors(text, embedding, { receivedMs, sentMs, endMs: performance.now() }),
          stream: null,
          error: (text, status) => ollamaEngineError(text, status, claim.servedBy, embedding.kind === 'embed' ? 'input' : 'prompt'),
          errors: ollamaErrorBody,
          streamError: ollamaErrorLine,
        },
      });
    },
  };
}

/** The engine's /v1/embeddings answer in Ollama's shape; null when it is not such an answer. */
export function ollamaVectors(text: string, embedding: Pick<OllamaEmbedding, 'kind' | 'model'>, times: { receivedMs: number; sentMs: number; endMs: number }): string | null {
  let answer: unknown;
  try {
    answer = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(answer) || !Array.isArray(answer['data'])) return null;
  const vectors: number[][] = [];
  for (const item of answer['data']) {
    if (!isObject(item) || !Array.isArray(item['embedding'])) return null;
    vectors[typeof item['index'] === 'number' ? item['index'] : vectors.length] = item['embedding'] as number[];
  }
  if (embedding.kind === 'embeddings') return JSON.stringify({ embedding: vectors[0] ?? [] });
  const usage = isObject(answer['usage']) ? answer['usage'] : {};
  const nanoseconds = (ms: number): number => Math.max(0, Math.round(ms * 1e6));
  return JSON.stringify({
    model: embedding.model,
    embeddings: vectors,
    total_duration: nanoseconds(times.endMs - times.receivedMs),
    load_duration: nanoseconds(times.sentMs - times.receivedMs),
    prompt_eval_count: typeof usage['prompt_tokens'] === 'number' ? usage['prompt_tokens'] : 0,
  });
}
