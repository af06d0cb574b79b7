// llama-server's `ignore_eos`: a -inf logit bias on every end-of-generation token of the
// vocabulary (its logit_bias_eog: eos, eot, and every token the vocabulary marks as ending a
// generation), so the answer runs to its token limit or a stop string.
//
// Why TokenBias's map is filled directly: TokenBias.set skips end-of-generation tokens on
// purpose (node-llama-cpp 3.21.1 keeps callers from barring the end of an answer), and barring it
// is exactly what ignore_eos asks. The map is what node-llama-cpp hands to llama.cpp's own
// logit-bias sampler (LlamaContext's getTokenBiasesForAddon, AddonSampler's
// llama_sampler_init_logit_bias), the sampler llama-server biases with too.
import { TokenBias, type LlamaModel, type Token } from 'node-llama-cpp';

const endTokensOf = new WeakMap<LlamaModel, readonly Token[]>();

/** Every token of the model's vocabulary that ends a generation; the vocabulary is read once per model. */
export function endOfGenerationTokens(model: LlamaModel): readonly Token[] {
  let tokens = endTokensOf.get(model);
  if (tokens === undefined) {
    tokens = [...model.iterateAllTokens()].filter((token) => model.isEogToken(token));
    endTokensOf.set(model, tokens);
  }
  return tokens;
}

/** A TokenBias under which no end-of-generation token can be sampled. */
export function endOfGenerationBarred(model: LlamaModel): TokenBias {
  const bias = new TokenBias(model.tokenizer);
  const biases = (bias as unknown as { _biases: Map<Token, number> })._biases;
  if (!(biases instanceof Map)) throw new Error('node-llama-cpp\'s TokenBias has no _biases map: ignore_eos needs the TokenBias of node-llama-cpp 3.21.1');
  for (const token of endOfGenerationTokens(model)) biases.set(token, -Infinity);
  return bias;
}
