// Which chat wrapper turns a conversation into the model's prompt: its own template.
//
// Why not node-llama-cpp's resolveChatWrapper for a model with a template: it looks for a
// specialised wrapper whose rendering matches the template, by rendering the template against
// every candidate over a matrix of options and test conversations. That search was the largest
// part of the embedded engine's cold start after its own runtime: 0.5–1.7 s of JavaScript on
// every load of demo-chat on the 2-core project machine (a CPU profile of the engine, issue 14),
// where rendering the template directly takes milliseconds. The search can only end in a
// wrapper that renders what the template renders, or in the template itself; llama-server
// renders the template itself. So the template is used as it is, and the prompt is the one
// llama-server would build. resolveChatWrapper stays for what the template cannot do: a model
// without one (it guesses from the name and architecture) or a template node-llama-cpp
// cannot render.
//
// Stops: the template's end-of-turn text becomes a stop (chat-prompt.ts), and generation also
// ends at every end-of-generation token, as llama-server's does.
import { JinjaTemplateChatWrapper, resolveChatWrapper, type ChatWrapper, type LlamaModel } from 'node-llama-cpp';

/**
 * The wrapper for `model`: its GGUF chat template rendered directly, else node-llama-cpp's
 * resolution. Synchronous (milliseconds with a template; up to a second or two in the fallback);
 * never throws for a loaded model. `warn` hears why a template was not used.
 */
export function chatWrapperFor(model: LlamaModel, warn: (line: string) => void): ChatWrapper {
  const template = model.fileInfo.metadata.tokenizer?.chat_template;
  if (typeof template === 'string' && template.trim() !== '') {
    try {
      return new JinjaTemplateChatWrapper({ template, tokenizer: model.tokenizer });
    } catch (error) {
      warn(`srv    load_model: the model's chat template cannot be rendered (${(error as Error).message}); choosing a chat format from its name instead`);
    }
  }
  return resolveChatWrapper(model);
}

/**
 * Which syntax the model's tool calls are read and written in, as /v1/models reports it:
 * `template` when node-llama-cpp read the call and result format out of the model's own chat
 * template (a Qwen-style `<tool_call>` block, say); `generic` when the template renders no tool
 * calls and node-llama-cpp's generic function-calling format is used with it; else the name of
 * the node-llama-cpp chat format chosen for a model without a usable template, whose tool
 * syntax is that format's own.
 */
export function toolCallFormat(wrapper: ChatWrapper): string {
  if (wrapper instanceof JinjaTemplateChatWrapper) return wrapper.usingJinjaFunctionCallTemplate ? 'template' : 'generic';
  return `node-llama-cpp:${wrapper.wrapperName}`;
}

/**
 * Renders a small ChatML template once, so that the template engine's code is loaded and
 * compiled before a model arrives: a warm spare engine (main.ts) calls it while it waits.
 * Cheap (tens of milliseconds once); never throws.
 */
export function warmTemplateEngine(): void {
  try {
    const chatMl = "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    new JinjaTemplateChatWrapper({ template: chatMl }).generateContextState({ chatHistory: [{ type: 'user', text: 'hi' }, { type: 'model', response: [] }] });
  } catch {
    // Only a warm-up: the real template is rendered (or refused) at load.
  }
}
