// A vocabulary as large as the real models' (128,256 tokens for Llama 3, 151,936 for Qwen2.5
// and Qwen3), for the benchmarks' real-shape models: the cost of a model's output layer, its
// sampling over every token and its token-embedding rows grows with the vocabulary, and the
// demo's 358 tokens hide all three.
//
// How: the demo's SentencePiece vocabulary first (so prompts tokenize exactly as on the demo
// models, one token per character, and the prompt sizes the benchmarks choose stay what they
// say), then filler pieces up to the size asked. Every filler is four characters from [a-z0-9],
// and no piece of two or three characters is in the vocabulary, so SentencePiece's merges,
// which only join two pieces into a third that exists, never build one from text: a filler is
// never an input token. The model may emit them (printable ASCII), so sampling chooses among
// the whole vocabulary as it does on a real model.
//
// The ASCII control bytes (a newline, a tab) may be emitted too, unlike on the demo models: the
// real shapes tie their output layer to the token embeddings (real-shape-gguf.ts), so a token
// the model must never emit carries its -NEVER mark in its input row as well, and a prompt whose
// last token is one (a chat prompt ends in a newline) would turn every mark upside down. Those
// bytes are valid UTF-8, which is all an engine's answer needs.
import { spmVocab, type SpmVocab } from '../../../core/catalog/demo/spm-vocab.js';

const FILLER_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';
/** Far below every demo piece's score: a filler never wins a merge it could take part in. */
const FILLER_SCORE = -10_000;

function fillerPiece(index: number): string {
  let piece = '';
  let n = index;
  for (let i = 0; i < 4; i++) {
    piece += FILLER_ALPHABET[n % FILLER_ALPHABET.length];
    n = Math.floor(n / FILLER_ALPHABET.length);
  }
  return piece;
}

/** `<0x01>`..`<0x1F>` and `<0x7F>`: SentencePiece's byte tokens for ASCII's control characters (NUL left out). */
function isAsciiControlByte(piece: string): boolean {
  const byte = /^<0x([0-9A-F]{2})>$/.exec(piece);
  if (byte === null) return false;
  const code = Number.parseInt(byte[1] ?? '', 16);
  return (code >= 0x01 && code < 0x20) || code === 0x7f;
}

/** The demo vocabulary grown to `size` tokens. Throws when `size` is smaller than the demo's or beyond the fillers there are. */
export function realShapeVocab(size: number): SpmVocab {
  const demo = spmVocab();
  const fillers = size - demo.tokens.length;
  if (fillers < 0) throw new Error(`a vocabulary of ${size} tokens is smaller than the demo's ${demo.tokens.length}`);
  if (fillers > FILLER_ALPHABET.length ** 4) throw new Error(`a vocabulary of ${size} tokens needs more fillers than four characters spell`);
  const tokens = [...demo.tokens];
  const scores = [...demo.scores];
  const types = [...demo.types];
  const emittable = demo.tokens.map((piece, id) => demo.emittable[id] === true || isAsciiControlByte(piece));
  // The demo's reluctant tokens (eos, the tool-call markers) are never emitted on a real-shape
  // model: its logits spread over far more tokens, and an eos inside a timed decode would end it.
  const reluctant = demo.reluctant.map(() => false);
  for (let i = 0; i < fillers; i++) {
    tokens.push(fillerPiece(i));
    scores.push(FILLER_SCORE - i);
    types.push(1);
    emittable.push(true);
    reluctant.push(false);
  }
  return { ...demo, tokens, scores, types, emittable, reluctant };
}
