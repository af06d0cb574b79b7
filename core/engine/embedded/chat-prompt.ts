// Turns OpenAI chat messages into prompt tokens with the model's own chat template.
//
// node-llama-cpp's resolveChatWrapper picks the wrapper from the model's GGUF metadata
// (tokenizer.chat_template, or the architecture and name): the same template llama-server
// would apply, so both engines prompt a model identically. The wrapper also names the
// end-of-turn markers, which become stops.
import type { ChatHistoryItem, ChatWrapper, LlamaModel, LlamaText, Token } from 'node-llama-cpp';
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

/** Pure apart from tokenizing with the loaded model; never blocks on I/O. */
export function chatPrompt(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[]): ChatPrompt {
  const state = wrapper.generateContextState({ chatHistory: toChatHistory(messages) });
  const tokens = state.contextText.tokenize(model.tokenizer);
  if (tokens.length > 0 && tokens[0] === model.tokens.bos) tokens.shift();
  return { tokens, stops: [...state.stopGenerationTriggers] };
}
