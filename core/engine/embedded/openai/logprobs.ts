// Token log probabilities: OpenAI's `logprobs` / `top_logprobs` (chat) and `logprobs: N`
// (legacy completions), read from node-llama-cpp's per-token distribution and shaped as
// OpenAI answers them.
//
// What a logprob means here. llama-server (its default, `post_sampling_probs: false`) reports
// the model's own distribution: the softmax of the raw logits over the whole vocabulary,
// whatever the sampler then does. node-llama-cpp 3.21.1 exposes no raw logits; it reports the
// distribution after its sampler chain. Under greedy sampling (temperature 0) that chain is
// the greedy pick alone, so the numbers are exactly llama-server's: the softmax of the raw
// logits, the sampled token first. With temperature > 0 the chain has already cut the
// candidates (top_k, top_p, min_p) and scaled them by the temperature, so the numbers are the
// distribution the token was drawn from (llama-server's `post_sampling_probs: true`); the
// model's own would need every token decoded twice. A repeat penalty and a response_format
// grammar act before the pick and so show in the numbers too (a token the grammar forbids is
// never listed). With a grammar and temperature > 0, one seed can draw other tokens with
// logprobs than without: node-llama-cpp then applies the grammar before the draw, not after.
//
// How they are read without a generation loop of our own: LlamaCompletion (stop strings,
// grammar, held-back text) asks its sequence for tokens through `evaluate`; while a request
// wants log probabilities, the slot's sequence answers that call through its own
// `evaluateWithMetadata`, which yields the same tokens with their distribution.
import type { LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { badRequest } from '../http-error.js';

/** OpenAI's limits: 20 alternatives per token in chat, 5 in legacy completions. */
const MAX_CHAT_TOP_LOGPROBS = 20;
const MAX_COMPLETION_LOGPROBS = 5;

/** OpenAI's logprob for a token outside the listed candidates ("very unlikely"); also a probability that underflowed to 0. */
const UNLIKELY = -9999;

export interface TokenAlternative {
  token: string;
  logprob: number;
  /** UTF-8 bytes of `token`. A token that is part of a multi-byte character shows as U+FFFD: node-llama-cpp detokenizes to strings only. */
  bytes: number[];
}

export interface TokenLogprob extends TokenAlternative {
  /** The most likely tokens at this position, most likely first, at most as many as asked. */
  top: TokenAlternative[];
  /** Where the token starts in the generated text, in code points (legacy completions' text_offset). */
  offset: number;
}

type Body = Record<string, unknown>;

function integerIn(body: Body, field: string, max: number): number | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0 || v > max) {
    throw badRequest(`'${field}' must be an integer from 0 to ${max}, got ${JSON.stringify(v)}`, field);
  }
  return v;
}

/**
 * Chat's `logprobs` (boolean) and `top_logprobs` (0..20): the alternatives per token to give,
 * or undefined for no log probabilities. `top_logprobs` above 0 without `logprobs: true` is
 * refused as OpenAI refuses it: it would otherwise be silently dropped.
 */
export function readChatLogprobs(body: Body): number | undefined {
  const logprobs = body['logprobs'];
  if (logprobs !== undefined && logprobs !== null && typeof logprobs !== 'boolean') {
    throw badRequest(`'logprobs' must be a boolean, got ${JSON.stringify(logprobs)}`, 'logprobs');
  }
  const top = integerIn(body, 'top_logprobs', MAX_CHAT_TOP_LOGPROBS) ?? 0;
  if (logprobs !== true && top > 0) throw badRequest("'top_logprobs' requires 'logprobs': true", 'top_logprobs');
  return logprobs === true ? top : undefined;
}

/** Legacy completions' `logprobs` (0..5 alternatives per token), or undefined when absent. */
export function readCompletionLogprobs(body: Body): number | undefined {
  // false is what some clients send for "none"; it asks for nothing.
  if (body['logprobs'] === false) return undefined;
  return integerIn(body, 'logprobs', MAX_COMPLETION_LOGPROBS);
}

/** One generated token as sampled: its probability and the most likely tokens at its position. */
interface Step {
  token: Token;
  probability: number;
  top: [Token, number][];
}

export interface LogprobsRecording {
  /** Every token released so far, in order: the answer's tokens. */
  readonly all: readonly TokenLogprob[];
  /** Records the tokens LlamaCompletion releases (its onToken), in order. */
  release(tokens: readonly Token[]): void;
  /** The tokens released since the last call: those of the text chunk that follows them. */
  drain(): TokenLogprob[];
  /** Gives the sequence its own `evaluate` back. Idempotent. */
  stop(): void;
}

const logOf = (probability: number): number => (probability > 0 ? Math.log(probability) : UNLIKELY);

/**
 * Starts recording the distribution of every token `sequence` generates, keeping the `top`
 * most likely tokens at each position. The sequence must be this request's alone until `stop`
 * (a slot's, held).
 */
export function recordLogprobs(model: LlamaModel, sequence: LlamaContextSequence, top: number): LogprobsRecording {
  const steps: Step[] = [];
  // The full distribution is a vocabulary-sized map per token; with no alternatives asked,
  // the sampled token's probability alone is enough.
  const metadata = top > 0 ? { probabilities: true } as const : { confidence: true } as const;
  sequence.evaluate = async function* (tokens, options) {
    const iterator = sequence.evaluateWithMetadata(tokens, metadata, options);
    let next: void | Token | Token[] = undefined;
    try {
      for (;;) {
        const step = await iterator.next(next);
        if (step.done) return;
        // One of the two, as `metadata` asked.
        const { token, probabilities, confidence } = step.value as { token: Token; probabilities?: Map<Token, number>; confidence?: number };
        const best: [Token, number][] = [];
        for (const entry of probabilities ?? []) {
          if (best.length >= top || entry[1] <= 0) break;
          best.push(entry);
        }
        steps.push({ token, probability: probabilities?.get(token) ?? confidence ?? 0, top: best });
        next = yield token;
      }
    } finally {
      await iterator.return();
    }
  };

  const all: TokenLogprob[] = [];
  const released: Token[] = [];
  let drained = 0;
  let offset = 0;
  const piece = (token: Token, before: readonly Token[]): TokenAlternative => {
    const text = model.detokenize([token], false, before);
    return { token: text, logprob: 0, bytes: [...Buffer.from(text, 'utf8')] };
  };
  return {
    all,
    release(tokens) {
      for (const token of tokens) {
        // Released tokens are the generated ones in order, except after a stop string, where
        // node-llama-cpp may re-tokenize the text before it: such a token takes its
        // probability from the distribution at its position, if it was listed there.
        const step = steps[released.length];
        const probability = step === undefined ? 0
          : step.token === token ? step.probability
            : step.top.find(([t]) => t === token)?.[1] ?? 0;
        const alternatives = (step?.top ?? []).map(([t, p]) => ({ ...piece(t, released), logprob: logOf(p) }));
        const own = { ...piece(token, released), logprob: logOf(probability) };
        all.push({ ...own, top: alternatives, offset });
        offset += [...own.token].length;
        released.push(token);
      }
    },
    drain() {
      const chunk = all.slice(drained);
      drained = all.length;
      return chunk;
    },
    stop() {
      Reflect.deleteProperty(sequence, 'evaluate');
    },
  };
}

/** A chat choice's `logprobs`: OpenAI's ChatCompletionTokenLogprob per token. */
export function chatLogprobs(tokens: readonly TokenLogprob[]): { content: unknown[]; refusal: null } {
  return {
    content: tokens.map((t) => ({
      token: t.token,
      logprob: t.logprob,
      bytes: t.bytes,
      top_logprobs: t.top.map((a) => ({ token: a.token, logprob: a.logprob, bytes: a.bytes })),
    })),
    refusal: null,
  };
}

/** A legacy completion choice's `logprobs`: parallel lists, the alternatives as {text: logprob}. */
export function completionLogprobs(tokens: readonly TokenLogprob[]): Record<string, unknown> {
  return {
    tokens: tokens.map((t) => t.token),
    token_logprobs: tokens.map((t) => t.logprob),
    // Two tokens can spell the same text (a character and its byte token); the likelier one
    // keeps the key.
    top_logprobs: tokens.map((t) => {
      const byText = new Map<string, number>();
      for (const a of t.top) if (!byText.has(a.token)) byText.set(a.token, a.logprob);
      return Object.fromEntries(byText);
    }),
    text_offset: tokens.map((t) => t.offset),
  };
}
