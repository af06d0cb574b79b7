// One generation on one slot: the single path under both /v1/chat/completions and
// /v1/completions, so limits, stops, counting and cancellation behave the same for both.
import type { LlamaGrammar, LlamaModel, LlamaText, Token } from 'node-llama-cpp';
import { endOfGenerationBarred } from './end-of-generation-bias.js';
import { HttpError } from './http-error.js';
import { recordLogprobs, type TokenLogprob } from './openai/logprobs.js';
import type { SamplingParams } from './openai/openai-requests.js';
import { sharedPrefix } from '../saved-conversations/store.js';
import type { SavedSlots } from './saved-slots.js';
import type { Slot, SlotPool } from './slot-pool.js';

export type FinishReason = 'stop' | 'length';

export interface GenerationResult {
  text: string;
  finishReason: FinishReason;
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens that came from the slot's cache, a restored conversation included, and were not evaluated. */
  cachedTokens: number;
  /** The answer's tokens with their log probabilities, when asked for (`GenerationInput.logprobs`). */
  logprobs?: TokenLogprob[];
  /** How long the prompt and the answer took, in llama-server's words (EngineTimings). */
  timings?: EngineTimings;
}

/**
 * llama-server's `timings` on an answer (and on a stream's last chunk), which the router's request
 * records read (core/router/engine/usage-tap.ts): the same figures from either engine. `prompt_ms`
 * runs from the slot's start to the first answer token; `predicted_ms` from there to the last,
 * so the speed counts the tokens after the first, as llama-server's does.
 */
export interface EngineTimings {
  cache_n: number;
  prompt_n: number;
  prompt_ms: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_second?: number;
}

function timingsOf(promptTokens: number, cachedTokens: number, completionTokens: number, started: number, firstTokenAt: number | null, ended: number): EngineTimings {
  const promptMs = (firstTokenAt ?? ended) - started;
  const predictedMs = firstTokenAt === null ? 0 : ended - firstTokenAt;
  const round = (ms: number): number => Math.round(ms * 1000) / 1000;
  return {
    cache_n: cachedTokens,
    prompt_n: promptTokens - cachedTokens,
    prompt_ms: round(promptMs),
    predicted_n: completionTokens,
    predicted_ms: round(predictedMs),
    ...(completionTokens > 1 && predictedMs > 0 ? { predicted_per_second: round(((completionTokens - 1) * 1000) / predictedMs) } : {}),
  };
}

export interface GenerationInput {
  /** Prompt tokens without the beginning-of-sequence token (node-llama-cpp adds it). */
  tokens: Token[];
  sampling: SamplingParams;
  /** Stops besides the request's own: the chat template's end-of-turn markers. */
  extraStops?: readonly LlamaText[];
  /** Constrains every token to a grammar (response_format's JSON); the answer ends when it is complete. */
  grammar?: LlamaGrammar;
  /** Log probabilities of the answer's tokens, with this many alternatives each; undefined: none. */
  logprobs?: number;
  /** Receives text as it is generated (stop strings held back until ruled out), with its tokens' log probabilities when asked for. */
  onText?: (text: string, logprobs: TokenLogprob[]) => void;
  /** Aborting ends the generation early (client gone); the result then holds what was made. */
  signal: AbortSignal;
}

export interface GenerationTarget {
  model: LlamaModel;
  pool: SlotPool;
  contextPerSlot: number;
  savedSlots?: SavedSlots | undefined;
}

/** The prompt as the slot's sequence holds it after a completion: with the beginning-of-sequence token node-llama-cpp adds. */
export function promptAsHeld(model: LlamaModel, tokens: readonly Token[]): Token[] {
  return model.tokens.shouldPrependBosToken && model.tokens.bos !== null ? [model.tokens.bos, ...tokens] : [...tokens];
}

/**
 * How many of the prompt's tokens `slot` already holds, once a saved conversation sharing more
 * of it is restored there (saved-slots.ts): OpenAI's `cached_tokens`. `held`: the prompt as the
 * sequence will hold it (promptAsHeld for a completion; LlamaChat holds its rendering as it is).
 * The prompt's last token is evaluated even when held (its logits give the first answer
 * token), so it never counts. Blocks for a restore's load.
 *
 * `cachePrompt` false (llama-server's `cache_prompt: false`): the slot's history is cleared
 * instead, so the whole prompt is evaluated again, and 0 is held; nothing is restored. Blocks
 * for a save of the slot in flight, which reads the history being cleared.
 */
export async function cachedPrefix(target: Pick<GenerationTarget, 'savedSlots'>, slot: Slot, held: readonly Token[], cachePrompt: boolean): Promise<number> {
  if (!cachePrompt) {
    await target.savedSlots?.saved(slot);
    await slot.sequence.clearHistory();
    return 0;
  }
  await target.savedSlots?.restoreInto(slot, held);
  return Math.max(0, Math.min(sharedPrefix(slot.sequence.contextTokens, held), held.length - 1));
}

/**
 * The prompt's size as the slot holds it (with the beginning-of-sequence token node-llama-cpp
 * adds). Throws HttpError 400 when it does not fit the slot's context: llama-server's
 * exceed_context_size_error, where node-llama-cpp would silently cut the prompt instead.
 */
export function fittingPromptTokens(target: GenerationTarget, tokens: readonly Token[]): number {
  const { model, contextPerSlot } = target;
  const promptTokens = tokens.length + (model.tokens.shouldPrependBosToken && model.tokens.bos !== null ? 1 : 0);
  if (promptTokens >= contextPerSlot) {
    throw new HttpError(400, `the request exceeds the available context size (${promptTokens} prompt tokens, ${contextPerSlot} per slot), try increasing it`,
      'exceed_context_size_error', { n_prompt_tokens: promptTokens, n_ctx: contextPerSlot });
  }
  return promptTokens;
}

/**
 * The penalties as node-llama-cpp takes them; none unless one is asked for (llama-server's
 * default) or `repeat_last_n` is 0. `contextPerSlot`: what `repeat_last_n: -1` looks back on.
 */
export function repeatPenaltyOf(s: SamplingParams, contextPerSlot: number): { penalty: number; frequencyPenalty: number; presencePenalty: number; lastTokens: number } | false {
  const penalised = s.repeatPenalty !== 1 || s.frequencyPenalty !== 0 || s.presencePenalty !== 0;
  if (!penalised || s.repeatLastN === 0) return false;
  return { penalty: s.repeatPenalty, frequencyPenalty: s.frequencyPenalty, presencePenalty: s.presencePenalty, lastTokens: s.repeatLastN === -1 ? contextPerSlot : s.repeatLastN };
}

/**
 * Waits for a slot, generates, frees the slot. Blocks for the whole generation.
 * Rejects with HttpError 400 when the prompt does not fit the slot's context (llama-server's
 * exceed_context_size_error; node-llama-cpp would silently cut the prompt instead), with the
 * signal's reason if the caller gives up while waiting for a slot, or with node-llama-cpp's
 * error if decoding fails.
 */
export async function generate(target: GenerationTarget, input: GenerationInput): Promise<GenerationResult> {
  const { pool } = target;
  const promptTokens = fittingPromptTokens(target, input.tokens);
  // node-llama-cpp reads maxTokens 0 as "no limit"; OpenAI and llama-server mean "nothing".
  if (input.sampling.maxTokens === 0) return { text: '', finishReason: 'length', promptTokens, completionTokens: 0, cachedTokens: 0, ...(input.logprobs === undefined ? {} : { logprobs: [] }) };
  const slot = await pool.acquire(promptTokens, input.signal);
  // Clearing the history for cache_prompt false can fail (a disposed sequence): the slot goes back all the same.
  const cachedTokens = await cachedPrefix(target, slot, promptAsHeld(target.model, input.tokens), input.sampling.cachePrompt).catch((error: unknown) => {
    pool.release(slot);
    throw error;
  });
  const started = performance.now();
  let firstTokenAt: number | null = null;
  const logprobs = input.logprobs === undefined ? undefined : recordLogprobs(target.model, slot.sequence, input.logprobs);
  const onText = input.onText;
  try {
    let completionTokens = 0;
    const s = input.sampling;
    const { response, metadata } = await slot.completion.generateCompletionWithMeta(input.tokens, {
      maxTokens: s.maxTokens,
      temperature: s.temperature,
      topK: s.topK,
      topP: s.topP,
      minP: s.minP,
      seed: s.seed,
      repeatPenalty: repeatPenaltyOf(s, target.contextPerSlot),
      ...(s.ignoreEos ? { tokenBias: endOfGenerationBarred(target.model) } : {}),
      customStopTriggers: [...s.stop, ...(input.extraStops ?? [])],
      ...(input.grammar ? { grammar: input.grammar } : {}),
      // llama-server stops at the end of the slot's context (its context shift is off by
      // default); node-llama-cpp would otherwise drop old tokens and carry on.
      disableContextShift: true,
      signal: input.signal,
      stopOnAbortSignal: true,
      onToken: (tokens) => {
        firstTokenAt ??= performance.now();
        completionTokens += tokens.length;
        pool.countDecoded(slot, tokens.length);
        logprobs?.release(tokens);
      },
      ...(onText ? { onTextChunk: (text: string) => onText(text, logprobs?.drain() ?? []) } : {}),
    });
    return {
      text: response,
      finishReason: metadata.stopReason === 'maxTokens' ? 'length' : 'stop',
      promptTokens,
      completionTokens,
      cachedTokens,
      ...(logprobs ? { logprobs: [...logprobs.all] } : {}),
      timings: timingsOf(promptTokens, cachedTokens, completionTokens, started, firstTokenAt, performance.now()),
    };
  } finally {
    logprobs?.stop();
    pool.release(slot);
    target.savedSlots?.saveWhenIdle(slot);
  }
}
