// The read-only endpoints: /v1/models, /slots and /metrics, shaped as llama-server's.
//
// /slots and /metrics exist for hang detection: /health stays 200 during a wedged decode, so
// the supervisor watches n_prompt_tokens_processed and n_decoded (per slot) and
// llamacpp:prompt_tokens_total and llamacpp:tokens_predicted_total move while requests are
// processing. The prompt counters are what moves before the first token of a long prompt.
import type { ChatWrapper, LlamaModel } from 'node-llama-cpp';
import { toolCallFormat } from './chat-wrapper.js';
import { promptTokensProcessed, type SlotPool } from './slot-pool.js';

export interface StatusSource {
  model: LlamaModel;
  draftModel: LlamaModel | undefined;
  modelName: string;
  chatWrapper: ChatWrapper;
  contextPerSlot: number;
  pool: SlotPool;
  createdAt: number;
}

export function modelsBody(s: StatusSource): unknown {
  return {
    object: 'list',
    data: [{
      id: s.modelName,
      object: 'model',
      created: Math.floor(s.createdAt / 1000),
      owned_by: 'llamacpp',
      meta: {
        n_ctx_train: s.model.trainContextSize,
        n_embd: s.model.embeddingVectorSize,
        n_vocab: s.model.fileInfo.metadata.tokenizer.ggml.tokens.length,
        size: s.model.size,
        n_slots: s.pool.slots.length,
        n_ctx_slot: s.contextPerSlot,
        // How tool calls are written: the template's own syntax, or node-llama-cpp's (chat-wrapper.ts).
        tool_call_format: toolCallFormat(s.chatWrapper),
      },
    }],
  };
}

export function slotsBody(s: StatusSource): unknown {
  return s.pool.slots.map((slot) => ({
    id: slot.id,
    id_task: slot.taskId,
    n_ctx: s.contextPerSlot,
    speculative: s.draftModel !== undefined,
    is_processing: slot.processing,
    n_prompt_tokens: slot.nPrompt,
    n_prompt_tokens_processed: promptTokensProcessed(slot),
    n_decoded: slot.nDecoded,
    // Cumulative draft statistics (validated + refuted = drafts checked): shows the draft works.
    ...(s.draftModel ? { draft: slot.sequence.tokenPredictions } : {}),
    // llama-server nests the progress counters here; kept so tools written for it work too.
    next_token: [{ has_next_token: slot.processing, n_remain: -1, n_decoded: slot.nDecoded }],
  }));
}

export function metricsText(s: StatusSource): string {
  const c = s.pool.counters;
  const rows: [string, 'counter' | 'gauge', string, number][] = [
    ['prompt_tokens_total', 'counter', 'Number of prompt tokens processed.', s.pool.promptTokensTotal],
    ['tokens_predicted_total', 'counter', 'Number of generation tokens processed.', c.tokensPredictedTotal],
    ['requests_total', 'counter', 'Number of generation requests started.', c.requestsTotal],
    ['requests_processing', 'gauge', 'Number of requests processing.', s.pool.busy],
    ['requests_deferred', 'gauge', 'Number of requests deferred.', s.pool.deferred],
  ];
  return rows.map(([name, type, help, value]) => `# HELP llamacpp:${name} ${help}\n# TYPE llamacpp:${name} ${type}\nllamacpp:${name} ${value}\n`).join('');
}
