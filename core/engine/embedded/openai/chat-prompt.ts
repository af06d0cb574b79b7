// Turns OpenAI chat messages into prompt tokens with the model's own chat template.
//
// The wrapper (chat-wrapper.ts) is the model's own GGUF chat template, the one llama-server
// applies, so both engines prompt a model identically. The wrapper also names the
// end-of-turn markers, which become stops. The same prompt is also written out as text for
// /apply-template (chatPromptText), so that a token count of it is the count a chat pays.
import type { BuiltinSpecialTokenValue, ChatHistoryItem, ChatModelFunctionCall, ChatModelFunctions, ChatWrapper, ChatWrapperGenerateContextStateOptions, LlamaModel, LlamaText, Token } from 'node-llama-cpp';
import type { ChatMessage } from './openai-requests.js';

export interface ChatPrompt {
  /** Without the beginning-of-sequence token: node-llama-cpp's completion adds it. */
  tokens: Token[];
  stops: LlamaText[];
  /**
   * The rendering began with the beginning-of-sequence token (taken off `tokens`): LlamaChat,
   * which evaluates the rendering as it is, holds it then, and otherwise holds none.
   */
  bosRendered: boolean;
}

/**
 * A tool message's content as the call's result: parsed when it is JSON, because the chat
 * wrapper writes a result as JSON (a plain string would come out quoted twice).
 */
function toolResult(content: string): unknown {
  try {
    return JSON.parse(content);
  } catch {
    return content;
  }
}

/**
 * The conversation as node-llama-cpp's history. An assistant turn's tool calls become function
 * call items of its response, each carrying its result from the tool messages after it (matched
 * by tool_call_id, else in order), which is how the chat wrapper renders a call and its result
 * through the model's own template. The tool messages are consumed by their calls
 * (readChatMessages checked that each answers one).
 */
export function toChatHistory(messages: readonly ChatMessage[]): ChatHistoryItem[] {
  const history: ChatHistoryItem[] = [];
  messages.forEach((m, i) => {
    switch (m.role) {
      case 'system':
      case 'developer':
        history.push({ type: 'system', text: m.content });
        return;
      case 'user':
        history.push({ type: 'user', text: m.content });
        return;
      case 'tool':
        return;
      case 'assistant': {
        const calls = m.toolCalls ?? [];
        let next = i + 1;
        const results = new Map<number, string>();
        while (messages[next]?.role === 'tool') {
          const result = messages[next] as ChatMessage;
          const byId = calls.findIndex((c, k) => !results.has(k) && c.id !== '' && c.id === result.toolCallId);
          const k = byId >= 0 ? byId : calls.findIndex((_, k2) => !results.has(k2));
          if (k >= 0) results.set(k, result.content);
          next++;
        }
        const items = calls.map((c, k): ChatModelFunctionCall => ({
          type: 'functionCall', name: c.name, params: c.arguments, result: toolResult(results.get(k) ?? ''), ...(k === 0 ? { startsNewChunk: true } : {}),
        }));
        history.push({ type: 'model', response: [...(m.content === '' && items.length > 0 ? [] : [m.content]), ...items] });
      }
    }
  });
  // The answer to generate: a new model turn, or, after calls and their results, the rest of
  // the turn that made them (node-llama-cpp's shape: results inside the response, the model
  // going on after them); a second model turn would be joined to it with a blank line.
  const last = history.at(-1);
  if (last?.type !== 'model' || last.response.at(-1) === undefined || typeof last.response.at(-1) === 'string') history.push({ type: 'model', response: [] });
  return history;
}

/** What the wrapper renders: the conversation, and the tools it declares with their parameters. */
function contextOptions(messages: readonly ChatMessage[], functions: ChatModelFunctions | undefined): ChatWrapperGenerateContextStateOptions {
  return { chatHistory: toChatHistory(messages), ...(functions ? { availableFunctions: functions, documentFunctionParams: true } : {}) };
}

/**
 * The same prompt as text, as llama-server's /apply-template renders one: the template's special
 * tokens written as their text, so that tokenizing it with special tokens parsed finds them
 * again, and without the leading beginning-of-sequence token, which a tokenizer's add_special
 * adds. Why not detokenize chatPrompt's tokens: a SentencePiece vocabulary writes the word-start
 * mark after a special token as a space, and tokenizing that text marks the word twice (60
 * tokens came back as 65 on the demo vocabulary). Pure apart from the model's tokenizer.
 * `functions` as for chatPrompt.
 */
export function chatPromptText(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[], functions?: ChatModelFunctions): string {
  const text = wrapper.generateContextState(contextOptions(messages, functions)).contextText.toJSON();
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

/**
 * Pure apart from tokenizing with the loaded model; never blocks on I/O. `functions`: the tools
 * the prompt declares, rendered (with their parameters) as the template writes them.
 */
export function chatPrompt(model: LlamaModel, wrapper: ChatWrapper, messages: readonly ChatMessage[], functions?: ChatModelFunctions): ChatPrompt {
  const state = wrapper.generateContextState(contextOptions(messages, functions));
  const tokens = state.contextText.tokenize(model.tokenizer);
  const bosRendered = tokens.length > 0 && tokens[0] === model.tokens.bos;
  if (bosRendered) tokens.shift();
  return { tokens, stops: [...state.stopGenerationTriggers], bosRendered };
}
