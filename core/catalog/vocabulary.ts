// Whether a draft model can speculate for a primary: the same check llama.cpp makes
// (`common_speculative_are_compatible` in common/speculative.cpp), done ahead of time from the
// GGUF metadata so a bad pairing is a config error instead of a launch that fails later.
//
// Why not "same token count and same hash of all tokens": real pairs differ in padding. Qwen2.5
// 0.5B has 151 936 tokens and Qwen2.5 7B 152 064, and llama.cpp accepts them because it allows
// up to 128 extra tokens and compares token text only below the smaller size (and from id 5
// on, where special tokens such as <s> may be spelt differently). A strict check would refuse
// the most common draft pairing there is. We keep a hash of every prefix length that such a
// comparison could need, so two models compare without keeping their token lists in memory.
import { createHash } from 'node:crypto';

/** llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE. */
export const MAX_VOCAB_SIZE_DIFFERENCE = 128;
/** llama.cpp's SPEC_VOCAB_CHECK_START_TOKEN_ID. */
const CHECK_START_TOKEN_ID = 5;

export interface VocabularyFingerprint {
  /** tokenizer.ggml.model ("llama", "gpt2", …). */
  tokenizerModel: string;
  tokenCount: number;
  bosId: number | null;
  eosId: number | null;
  addBos: boolean | null;
  /** Hash of the token texts from id 5 to the end. */
  tokensHash: string;
  /**
   * prefixHashes[i] hashes the token texts from id 5 up to (not including)
   * `tokenCount - MAX_VOCAB_SIZE_DIFFERENCE + i`; only lengths a comparison can need.
   */
  prefixHashes: string[];
}

export interface TokenizerFacts {
  model: string;
  tokens: readonly string[];
  bosId?: number | null;
  eosId?: number | null;
  addBos?: boolean | null;
}

export function vocabularyFingerprint(tokenizer: TokenizerFacts): VocabularyFingerprint {
  const { tokens } = tokenizer;
  const firstPrefix = tokens.length - MAX_VOCAB_SIZE_DIFFERENCE;
  const hash = createHash('sha256');
  const prefixHashes: string[] = [];
  const record = (length: number) => {
    if (length >= firstPrefix) prefixHashes[length - firstPrefix] = hash.copy().digest('hex').slice(0, 32);
  };
  for (let length = 0; length < tokens.length; length++) {
    record(length);
    // Length-prefixed so ["ab", "c"] and ["a", "bc"] hash differently.
    if (length >= CHECK_START_TOKEN_ID) hash.update(`${tokens[length]!.length}:${tokens[length]}`);
  }
  record(tokens.length);
  return {
    tokenizerModel: tokenizer.model,
    tokenCount: tokens.length,
    bosId: tokenizer.bosId ?? null,
    eosId: tokenizer.eosId ?? null,
    addBos: tokenizer.addBos ?? null,
    tokensHash: prefixHashes[prefixHashes.length - 1] ?? '',
    prefixHashes,
  };
}

function prefixHash(fingerprint: VocabularyFingerprint, length: number): string | undefined {
  return fingerprint.prefixHashes[length - (fingerprint.tokenCount - MAX_VOCAB_SIZE_DIFFERENCE)];
}

/** Why `draft` cannot speculate for `primary`, as the second half of a sentence; undefined when it can. */
export function vocabularyMismatch(primary: VocabularyFingerprint, draft: VocabularyFingerprint): string | undefined {
  const both = (a: unknown, b: unknown) => `${String(a)} vs ${String(b)}`;
  if (primary.tokenizerModel !== draft.tokenizerModel) return `tokenizer types differ (${both(primary.tokenizerModel, draft.tokenizerModel)})`;
  if (primary.addBos !== draft.addBos) return `add_bos_token differs (${both(primary.addBos, draft.addBos)})`;
  if (primary.bosId !== draft.bosId || primary.eosId !== draft.eosId) {
    return `special tokens differ (bos ${both(primary.bosId, draft.bosId)}, eos ${both(primary.eosId, draft.eosId)})`;
  }
  const difference = Math.abs(primary.tokenCount - draft.tokenCount);
  if (difference > MAX_VOCAB_SIZE_DIFFERENCE) {
    return `vocabulary sizes differ by ${difference} tokens (${both(primary.tokenCount, draft.tokenCount)}; llama.cpp allows ${MAX_VOCAB_SIZE_DIFFERENCE})`;
  }
  const common = Math.min(primary.tokenCount, draft.tokenCount);
  if (prefixHash(primary, common) !== prefixHash(draft, common)) {
    return `token texts differ within the first ${common} tokens (${primary.tokenCount} tokens, hash ${primary.tokensHash.slice(0, 12)} vs ${draft.tokenCount} tokens, hash ${draft.tokensHash.slice(0, 12)})`;
  }
  return undefined;
}
