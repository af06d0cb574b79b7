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
 * The demo chat template: ChatML, with Qwen2.5's tool format (tools listed in the system turn,
 * calls as `<tool_call>` JSON blocks, results as `<tool_response>` blocks in a user turn), so
 * both engines format tool requests the way a real tool-calling model does: llama-server
 * through its Jinja engine, node-llama-cpp by reading the call syntax out of the template
 * (the embedded engine reports `tool_call_format: template` for it). A conversation without
 * tools renders exactly as plain ChatML: `<|im_start|>role\ncontent<|im_end|>\n` per message.
 */
export const CHAT_TEMPLATE =
  "{%- if tools %}{{- '<|im_start|>system\\n' }}{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}" +
  "{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>' }}" +
  "{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}" +
  "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\\n</tool_call><|im_end|>\\n' }}" +
  "{%- endif %}" +
  "{%- for message in messages %}" +
  "{%- if message['role'] == 'system' and tools and loop.first %}" +
  "{%- elif message['role'] == 'assistant' and message['tool_calls'] %}" +
  "{{- '<|im_start|>assistant' }}{%- if message['content'] %}{{- '\\n' + message['content'] }}{%- endif %}" +
  "{%- for tool_call in message['tool_calls'] %}{%- if tool_call['function'] is defined %}{%- set tool_call = tool_call['function'] %}{%- endif %}" +
  "{{- '\\n<tool_call>\\n{\"name\": \"' + tool_call['name'] + '\", \"arguments\": ' }}{{- tool_call['arguments'] | tojson }}{{- '}\\n</tool_call>' }}{%- endfor %}" +
  "{{- '<|im_end|>\\n' }}" +
  "{%- elif message['role'] == 'tool' %}" +
  "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}" +
  "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}" +
  "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}" +
  "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{%- endif %}" +
  "{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";
