// The demo chat template (spm-vocab.ts), rendered by node-llama-cpp's Jinja engine as the
// embedded engine renders it: plain ChatML without tools, so prompts are what they were and
// what llama-server builds; Qwen2.5's tool format with them, which node-llama-cpp reads out of
// the template as the model's own call syntax.
import { JinjaTemplateChatWrapper, LlamaText } from 'node-llama-cpp';
import { describe, expect, it } from 'vitest';
import { CHAT_TEMPLATE } from '../../../core/catalog/demo/spm-vocab.js';

const wrapper = new JinjaTemplateChatWrapper({ template: CHAT_TEMPLATE });
const text = (value: string | LlamaText): string => LlamaText(value).toString();

describe('the demo chat template', () => {
  it('renders a conversation without tools as plain ChatML', () => {
    const rendered = wrapper.generateContextState({
      chatHistory: [{ type: 'system', text: 'Be brief.' }, { type: 'user', text: 'hi' }, { type: 'model', response: ['hello'] }, { type: 'user', text: 'again' }, { type: 'model', response: [] }],
    }).contextText.toString();
    expect(rendered).toBe('<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nhello<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n');
  });

  it('has a tool call format node-llama-cpp reads as the model’s own', () => {
    expect(wrapper.usingJinjaFunctionCallTemplate).toBe(true);
    const call = wrapper.settings.functions.call;
    expect([text(call.prefix), text(call.paramsPrefix), text(call.suffix)]).toEqual(['<tool_call>{"name": "', '", "arguments": ', '}</tool_call>']);
    const rendered = wrapper.generateContextState({
      chatHistory: [{ type: 'user', text: 'hi' }, { type: 'model', response: [{ type: 'functionCall', name: 'f', params: { a: 1 }, result: 'ok' }] }],
      availableFunctions: { f: { description: 'F', params: { type: 'object', properties: { a: { type: 'integer' } } } } },
      documentFunctionParams: true,
    }).contextText.toString();
    expect(rendered).toContain('<tools>\n{"type": "function", "function": {"name": "f", "description": "F", "parameters": ');
    expect(rendered).toContain('<|im_start|>assistant\n<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n"ok"\n</tool_response><|im_end|>');
  });
});
