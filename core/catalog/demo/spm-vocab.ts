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
export type SpmTokenType = 1 | 2 | 3 | 4 | 6;
const NORMAL: SpmTokenType = 1;
const UNKNOWN: SpmTokenType = 2;
const CONTROL: SpmTokenType = 3;
/** An added token matched in any text (not only with special tokens parsed), as Qwen2.5's `<tool_call>`. */
const USER_DEFINED: SpmTokenType = 4;
const BYTE: SpmTokenType = 6;

export interface SpmVocab {
  tokens: string[];
  scores: number[];
  types: SpmTokenType[];
  /** Whether the model may generate this token: printable ASCII only, never a control token. */
  emittable: boolean[];
  /**
   * Tokens the model writes only when a request raises them (`logit_bias`): the tool-call
   * markers. Their logit sits a little below every emittable token's, where a bias of +100
   * reaches and no sampler at ordinary temperatures does; the control tokens' sit out of reach.
   */
  reluctant: boolean[];
  unkId: number;
  bosId: number;
  eosId: number;
}

const SPACE_PIECE = '\u2581';
/** The demo template's tool-call markers (CHAT_TEMPLATE), each one token. */
export const TOOL_CALL_MARKERS = ['<tool_call>', '</tool_call>'] as const;

function isPrintableAscii(code: number): boolean {
  return code >= 0x20 && code <= 0x7e;
}

function buildVocab(): SpmVocab {
  const tokens: string[] = [];
  const scores: number[] = [];
  const types: SpmTokenType[] = [];
  const emittable: boolean[] = [];
  const reluctant: boolean[] = [];
  const add = (piece: string, type: SpmTokenType, score: number, canEmit: boolean, onlyWhenRaised = false): void => {
    tokens.push(piece);
    types.push(type);
    scores.push(score);
    emittable.push(canEmit);
    reluctant.push(onlyWhenRaised);
  };
  add('<unk>', UNKNOWN, 0, false);
  add('<s>', CONTROL, 0, false);
  // eos is never emitted unless a request raises it (reluctant): every generation runs to
  // max_tokens or a stop string, so tests and benchmarks know how many tokens a request decodes.
  add('</s>', CONTROL, 0, false, true);
  add('<|im_start|>', CONTROL, 0, false);
  add('<|im_end|>', CONTROL, 0, false);
  for (let b = 0; b < 256; b++) {
    add(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, BYTE, 0, isPrintableAscii(b));
  }
  add(SPACE_PIECE, NORMAL, -1, true);
  for (let c = 0x21; c <= 0x7e; c++) add(String.fromCharCode(c), NORMAL, -2 - (c - 0x21), true);
  // Last, so that every earlier token keeps its id and its generated weights (drawn in order).
  // One token each, as in Qwen2.5's vocabulary: llama.cpp's grammar for a required call on
  // llama-server lets text come before the call's marker, so a random-weight model would write
  // text to the token limit; one marker token is what a request's logit_bias can raise.
  for (const marker of TOOL_CALL_MARKERS) add(marker, USER_DEFINED, 0, false, true);
  return { tokens, scores, types, emittable, reluctant, unkId: 0, bosId: 1, eosId: 2 };
}

/**
 * llama-server arguments that make a random-weight demo model answer a required tool call with
 * the call, as a model trained for tools would weigh it: `<tool_call>` raised over text
 * (llama.cpp's grammar for a required call lets text come before the call, and the demo would
 * write text to the token limit) and the end of text over a second call once the first closes.
 * As a server's default they weigh on every request, and a plain answer then ends at once:
 * no bias raises the marker where a grammar allows it and not where nothing constrains the
 * text. A request's own `logit_bias` replaces them. The embedded engine forces the call itself
 * and has no `--logit-bias`, so these are llama-server's only (a model's `engineArgs`).
 */
export function llamaServerToolNudge(): string[] {
  const vocab = spmVocab();
  return ['--logit-bias', `${vocab.tokens.indexOf(TOOL_CALL_MARKERS[0])}+90`, '--logit-bias', `${vocab.eosId}+100`];
}

let cached: SpmVocab | undefined;

/** The shared vocabulary (built once; callers must not mutate it). */
export function spmVocab(): SpmVocab {
  cached ??= buildVocab();
  return cached;
}

/**
 * The demo chat template: ChatML, with Qwen2.5's tool format (tools listed in the system turn,
 * calls as `<tool_call>` JSON blocks, results as `<tool_response>` blocks in a user turn) less
 * the newlines inside a call's markers: the demo models never write a newline, and llama.cpp
 * takes the call's opening as the template spells it (`<tool_call>\n` would be a marker the
 * demo could not complete, so its grammar would read `<tool_call>` alone as text), so
 * both engines format tool requests the way a real tool-calling model does: llama-server
 * through its Jinja engine, node-llama-cpp by reading the call syntax out of the template
 * (the embedded engine reports `tool_call_format: template` for it). A conversation without
 * tools renders exactly as plain ChatML: `<|im_start|>role\ncontent<|im_end|>\n` per message.
 */
export const CHAT_TEMPLATE =
  "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}" +
  "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}" +
  "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}" +
  "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>{\"name\": <function-name>, \"arguments\": <args-json-object>}</tool_call><|im_end|>\\n' }}" +
  "{%- endif %}" +
  "{%- for message in messages %}" +
  "{%- if message['role'] == 'system' and tools and loop.first %}" +
  "{%- elif message['role'] == 'assistant' and message['tool_calls'] %}" +
  "{{- '<|im_start|>assistant' }}{%- if message['content'] %}{{- '\\n' + message['content'] }}{%- endif %}" +
  "{%- for tool_call in message['tool_calls'] %}{%- if tool_call['function'] is defined %}{%- set tool_call = tool_call['function'] %}{%- endif %}" +
  "{{- '\\n<tool_call>{\"name\": \"' + tool_call['name'] + '\", \"arguments\": ' }}{{- tool_call['arguments'] | tojson }}{{- '}</tool_call>' }}{%- endfor %}" +
  "{{- '<|im_end|>\\n' }}" +
  "{%- elif message['role'] == 'tool' %}" +
  "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}" +
  "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}" +
  "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}" +
  "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endif %}" +
  "{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
