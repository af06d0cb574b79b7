// The nudge that lets the README's tool example be answered with the call on llama-server
// (spm-vocab.ts, llamaServerToolNudge): token ids taken from the demo vocabulary, given by the
// demo's config to the model the example calls and to no other, for llama-server only, read
// back through the config parser as a person's file is, and the ids the README prints.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../core/catalog/config/load-config.js';
import type { DemoModel, DemoModelId, DemoModels } from '../../../core/catalog/demo/demo-models.js';
import { llamaServerToolNudge, spmVocab } from '../../../core/catalog/demo/spm-vocab.js';
import { demoConfigText } from '../../../core/daemon/demo-config.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const model = (id: DemoModelId): DemoModel => ({ id, path: `/demo/${id}.gguf`, bytes: 1, description: id });
const MODELS: DemoModels = { chat: model('demo-chat'), draft: model('demo-draft'), tiny: model('demo-tiny'), broken: model('demo-broken'), embed: model('demo-embed') };

/** `--logit-bias TOKEN+BIAS` pairs as the tokens' text and the bias. */
function biases(args: readonly string[]): [string, number][] {
  const pairs: [string, number][] = [];
  for (let i = 0; i < args.length; i += 2) {
    expect(args[i]).toBe('--logit-bias');
    const [, id, bias] = /^(\d+)\+(\d+)$/.exec(args[i + 1] ?? '') ?? [];
    pairs.push([spmVocab().tokens[Number(id)] ?? `no token ${id}`, Number(bias)]);
  }
  return pairs;
}

describe("the demo's tool nudge for llama-server", () => {
  it('raises the one-token <tool_call> marker over text and the end of text above it', () => {
    expect(biases(llamaServerToolNudge())).toEqual([['<tool_call>', 90], [spmVocab().tokens[spmVocab().eosId], 100]]);
  });

  it("is demo-tiny's, for llama-server only: the embedded engine takes no --logit-bias, and demo-chat's plain answers must not end at once", () => {
    const parsed = parseConfigText(demoConfigText(MODELS, { fallbackAndAliases: true, broken: true, embed: true }), '/demo/config.yaml', { platform: 'linux', env: {}, homeDir: '/home/ada' });
    if (!parsed.ok) throw new Error(parsed.errors.join('\n'));
    const withArgs = parsed.config.models.filter((m) => m.args.length > 0 || Object.keys(m.engineArgs).length > 0);
    expect(withArgs.map((m) => [m.id, m.args, m.engineArgs])).toEqual([['demo-tiny', [], { 'llama-server': llamaServerToolNudge() }]]);
  });

  it("is what the README prints, and the README's tool example calls demo-tiny", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const printed = llamaServerToolNudge().map((arg) => (arg.startsWith('--') ? arg : JSON.stringify(arg))).join(', ');
    expect(readme).toContain(`engineArgs: { llama-server: [${printed}] }`);
    expect(readme).toMatch(/model: 'demo-tiny',\n\s+messages: \[\{ role: 'user', content: 'Weather in Oslo\?' \}\],\n\s+tools:/);
  });
});
