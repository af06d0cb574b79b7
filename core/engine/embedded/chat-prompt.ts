// Turns OpenAI chat messages into prompt tokens with the model's own chat template.
//
// node-llama-cpp's resolveChatWrapper picks the wrapper from the model's GGUF metadata
// (tokenizer.chat_template, or the architecture and name): the same template llama-server
// would apply, so both engines prompt a model identically. The wrapper also names the
// end-of-turn markers, which become stops. The same prompt is also written out as text for
// /apply-template (chatPromptText), so that a token count of it is the count a chat pays.
import type { BuiltinSpecialTokenValue, ChatHistoryItem, ChatWrapper, LlamaModel, LlamaText, Token } from 'node-llama-cpp';
import type { ChatMessage } from './openai-requests.js';

export interface ChatPrompt {
  /** Without the beginning-of-sequence token: node-llama-cpp's completion adds it. */
  tokens: Token[];
  stops: LlamaText[];
}

export function toChatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = messages.map((m): ChatHistoryItem => {
    switch (m.role) {
      case 'system':
      case 'developer':
        return { type: 'system', text: m.content };
      case 'assistant':
        return { type: 'model', response: [m.content] };
      case 'user':
      case 'tool':
        return { type: 'user', text: m.content };
    }
  });
  history.push({ type: 'model', response: [] });
  return history;
}

/**
 * The same prompt as text, as llama-server's /apply-template renders one: the template's special
 * tokens written as their text, so that tokenizing it with special tokens parsed finds them
 * again, and without the leading beginning-of-sequence token, which a tokenizer's add_special
 * adds. Why not detokenize chatPrompt's tokens: a SentencePiece vocabulary writes the word-start
 * mark after a special token as a space, and tokenizing that text marks the word twice (60
 * tokens came back as 65 on the demo vocabulary). Pure apart from the model's tokenizer.
 */
export function chatPromptText(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[]): string {
  const text = wrapper.generateContextState({ chatHistory: toChatHistory(messages) }).contextText.toJSON();
  if (typeof text === 'string') return text;
  return text
    .map((value, index) => {
      if (typeof value === 'string') return value;
      if (value.type === 'specialTokensText') return value.value;
      // A special token of the wrapper's own (BOS, EOS, EOT): JSON spells it by its builtin name.
      const tokens = model.tokenize(value.value as BuiltinSpecialTokenValue, 'builtin');
      if (index === 0 && tokens.length === 1 && tokens[0] === model.tokens.bos) return '';
      return model.detokenize(tokens, true);
    })
    .join('');
}

/** Pure apart from tokenizing with the loaded model; never blocks on I/O. */
export function chatPrompt(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[]): ChatPrompt {
  const state = wrapper.generateContextState({ chatHistory: toChatHistory(messages) });
  const tokens = state.contextText.tokenize(model.tokenizer);
  if (tokens.length > 0 && tokens[0] === model.tokens.bos) tokens.shift();
  return { tokens, stops: [...state.stopGenerationTriggers] };
}
