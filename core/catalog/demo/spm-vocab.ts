// The vocabulary every generated model shares: a SentencePiece ("llama") vocabulary that can
// spell any text through byte fallback.
//
// Layout: <unk>, <s>, </s>, the ChatML markers, the 256 byte tokens <0x00>..<0xFF>, then the
// SentencePiece space "▁" and one normal token per printable ASCII character. The normal
// tokens make prompts tokenize the way real SPM models do (one token per character, not
// three bytes per space); the byte tokens make every other string representable.
//
// Which tokens a model may EMIT is decided here too (`emittable`), because a real
// llama-server rejects a completion that is not valid UTF-8: a lone byte token >= 0x80 would
// break it. The generated output matrix keeps every other token's logit far below.

/** GGUF tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
export type SpmTokenType = 1 | 2 | 3 | 6;
const NORMAL: SpmTokenType = 1;
const UNKNOWN: SpmTokenType = 2;
const CONTROL: SpmTokenType = 3;
const BYTE: SpmTokenType = 6;

export interface SpmVocab {
  tokens: string[];
  scores: number[];
  types: SpmTokenType[];
  /** Whether the model may generate this token: printable ASCII only, never a control token. */
  emittable: boolean[];
  unkId: number;
  bosId: number;
  eosId: number;
}

const SPACE_PIECE = '\u2581';

function isPrintableAscii(code: number): boolean {
  return code >= 0x20 && code <= 0x7e;
}

function buildVocab(): SpmVocab {
  const tokens: string[] = [];
  const scores: number[] = [];
  const types: SpmTokenType[] = [];
  const emittable: boolean[] = [];
  const add = (piece: string, type: SpmTokenType, score: number, canEmit: boolean): void => {
    tokens.push(piece);
    types.push(type);
    scores.push(score);
    emittable.push(canEmit);
  };
  add('<unk>', UNKNOWN, 0, false);
  add('<s>', CONTROL, 0, false);
  // eos is never emitted on purpose: every generation runs to max_tokens or a stop string,
  // so tests and benchmarks know how many tokens a request decodes.
  add('</s>', CONTROL, 0, false);
  add('<|im_start|>', CONTROL, 0, false);
  add('<|im_end|>', CONTROL, 0, false);
  for (let b = 0; b < 256; b++) {
    add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, BYTE, 0, isPrintableAscii(b));
  }
  add(SPACE_PIECE, NORMAL, -1, true);
  for (let c = 0x21; c <= 0x7e; c++) add(String.fromCharCode(c), NORMAL, -2 - (c - 0x21), true);
  return { tokens, scores, types, emittable, unkId: 0, bosId: 1, eosId: 2 };
}

let cached: SpmVocab | undefined;

/** The shared vocabulary (built once; callers must not mutate it). */
export function spmVocab(): SpmVocab {
  cached ??= buildVocab();
  return cached;
}

/**
 * A ChatML template, so both llama-server and node-llama-cpp format chat requests the same
 * way (node-llama-cpp recognises it as ChatML; llama-server runs it through its Jinja engine).
 */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
