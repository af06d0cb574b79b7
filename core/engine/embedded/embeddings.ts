// POST /v1/embeddings with a node-llama-cpp embedding context.
//
// The embedding context is created on the first request, not at load: it is a second KV
// cache the size of one slot, and most chat models are never asked for embeddings, so
// paying for it up front would inflate every model's footprint for nothing. Requests are
// served one at a time (one context, one sequence).
import type { ServerResponse } from 'node:http';
import type { LlamaEmbeddingContext, LlamaModel } from 'node-llama-cpp';
import { readEmbeddingRequest } from './openai-requests.js';

export class EmbeddingService {
  private context: Promise<LlamaEmbeddingContext> | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly model: LlamaModel, private readonly modelName: string, private readonly contextSize: number, private readonly threads: number) {}

  /**
   * Embeds every input, in order. Blocks behind earlier embedding requests; rejects with
   * node-llama-cpp's error (no memory for the context, input longer than the context).
   */
  embed(inputs: readonly string[]): Promise<{ vectors: number[][]; promptTokens: number }> {
    const run = async () => {
      this.context ??= this.model.createEmbeddingContext({ contextSize: this.contextSize, threads: this.threads });
      const context = await this.context;
      const vectors: number[][] = [];
      let promptTokens = 0;
      for (const text of inputs) {
        promptTokens += this.model.tokenize(text).length;
        vectors.push([...(await context.getEmbeddingFor(text)).vector]);
      }
      return { vectors, promptTokens };
    };
    const result = this.queue.then(run, run);
    this.queue = result.catch(() => undefined);
    return result;
  }

  async handle(body: unknown, res: ServerResponse): Promise<void> {
    const { inputs } = readEmbeddingRequest(body);
    const { vectors, promptTokens } = await this.embed(inputs);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({
      object: 'list',
      model: this.modelName,
      data: vectors.map((embedding, index) => ({ object: 'embedding', index, embedding })),
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    }));
  }
}
