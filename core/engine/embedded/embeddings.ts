// POST /v1/embeddings with a node-llama-cpp embedding context.
//
// The embedding context is created on the first request, not at load: it is a second KV
// cache the size of one slot, and most chat models are never asked for embeddings, so
// paying for it up front would inflate every model's footprint for nothing. Requests are
// served one at a time (one context, one sequence).
import type { ServerResponse } from 'node:http';
import type { LlamaEmbeddingContext, LlamaModel, Token } from 'node-llama-cpp';
import { badRequest } from './http-error.js';
import { readEmbeddingRequest } from './openai/openai-requests.js';

/**
 * The vector scaled to length 1 (Euclidean), as llama-server answers /v1/embeddings (its
 * embd_normalize 2) and OpenAI's embeddings are: retrieval apps take a dot product for the
 * cosine. node-llama-cpp gives the pooled vector unscaled. A zero vector stays as it is.
 */
export function unitLength(vector: ArrayLike<number>): number[] {
  let sum = 0;
  for (let i = 0; i < vector.length; i++) sum += (vector[i] ?? 0) ** 2;
  const norm = Math.sqrt(sum);
  return Array.from(vector, (v) => (norm > 0 ? v / norm : v));
}

/** A vector as OpenAI's base64 encoding carries it: little-endian float32, as the SDKs decode it. */
export function base64Float32(vector: readonly number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
  return bytes.toString('base64');
}

export class EmbeddingService {
  private context: Promise<LlamaEmbeddingContext> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly model: LlamaModel, private readonly modelName: string, private readonly contextSize: number, private readonly threads: number) {}

  /**
   * Embeds every input, in order. Blocks behind earlier embedding requests; rejects with
   * node-llama-cpp's error (no memory for the context, input longer than the context).
   */
  embed(inputs: readonly (string | number[])[]): Promise<{ vectors: number[][]; promptTokens: number }> {
    const vocab = this.model.fileInfo.metadata.tokenizer.ggml.tokens.length;
    inputs.forEach((input, i) => {
      if (typeof input === 'string') return;
      const bad = input.find((t) => t >= vocab);
      if (bad !== undefined) throw badRequest(`input[${i}] has token ${bad}, outside the vocabulary (${vocab} tokens)`, 'input');
    });
    const run = async () => {
      this.context ??= this.model.createEmbeddingContext({ contextSize: this.contextSize, threads: this.threads });
      const context = await this.context;
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (const input of inputs) {
        const tokens = typeof input === 'string' ? input : (input as Token[]);
        // What the context evaluates: the input with the beginning and end tokens it adds (an
        // encoder's [CLS] and [SEP]), as llama-server counts it.
        promptTokens += context.calculateInputLength(tokens);
        vectors.push(unitLength((await context.getEmbeddingFor(tokens)).vector));
      }
      return { vectors, promptTokens };
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  async handle(body: unknown, res: ServerResponse): Promise<void> {
    const { inputs, encoding } = readEmbeddingRequest(body);
    const { vectors, promptTokens } = await this.embed(inputs);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({
      object: 'list',
      model: this.modelName,
      data: vectors.map((vector, index) => ({ object: 'embedding', index, embedding: encoding === 'base64' ? base64Float32(vector) : vector })),
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    }));
  }
}
