import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { argvFor, DRAFT_MAX_TOKENS, EMBEDDED_CAPABILITIES, readsApiKeyFile, type LaunchSpec } from '../../../core/engine/launch-spec.js';
import { detectCapabilities } from '../../../core/engine/llama-server/capabilities.js';
import { smallerContext } from '../../../core/policy/levels.js';

const text = (name: string): string => readFileSync(new URL(`../../fixtures/${name}`, import.meta.url), 'utf8');
/** `llama-server --version` of the build whose help is the recent fixture, and of an older one. */
const RECENT_VERSION = 'version: 0.4.0-dev (build 1, commit 80fb11a)\nbuilt with GNU 12.2.0 for Linux x86_64\n';
const OLD_VERSION = 'version: 4567 (1d1e6a90)\nbuilt with cc (Ubuntu 13.2.0-23ubuntu4) 13.2.0 for x86_64-linux-gnu\n';
const recent = detectCapabilities(text('llama-server-help.txt'), RECENT_VERSION);
const old = detectCapabilities(text('llama-server-help-old.txt'), OLD_VERSION);

const spec: LaunchSpec = {
  modelId: 'qwen-7b',
  engine: 'llama-server',
  modelPath: '/models/qwen-7b.gguf',
  contextTokens: 32_768,
  gpuLayers: 'all',
  aliases: ['qwen'],
  extraArgs: ['--flash-attn', 'on'],
  env: {},
};
/** The supervisor's usual way: the key in a file, only the path on the argv. */
const KEY_FILE = { keyFile: '/data/engine-keys/0123abcd.key' };
const withDraft: LaunchSpec = { ...spec, draft: { modelPath: '/models/qwen-0.5b.gguf', gpuLayers: 'all' } };

/** The value after `flag`, or undefined when the flag is absent. */
function valueOf(argv: string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

describe('argvFor', () => {
  it('full: the configured context and GPU layers, explicit, with auto-fit off', () => {
    const argv = argvFor(spec, 'full', recent, 41_234, KEY_FILE);
    expect(argv.slice(0, 6)).toEqual(['-m', '/models/qwen-7b.gguf', '-c', '32768', '-ngl', 'all']);
    expect(valueOf(argv, '--fit')).toBe('off');
    expect(valueOf(argv, '--host')).toBe('127.0.0.1');
    expect(valueOf(argv, '--port')).toBe('41234');
    expect(valueOf(argv, '--api-key-file')).toBe('/data/engine-keys/0123abcd.key');
    expect(valueOf(argv, '--alias')).toBe('qwen-7b,qwen');
  });

  it("smaller-context: the policy's smaller context, the same GPU layers", () => {
    const argv = argvFor(spec, 'smaller-context', recent, 1, KEY_FILE);
    expect(valueOf(argv, '-c')).toBe(String(smallerContext(32_768)));
    expect(Number(valueOf(argv, '-c'))).toBeLessThan(32_768);
    expect(valueOf(argv, '-ngl')).toBe('all');
  });

  it('minimal: nothing on the GPU, the draft included', () => {
    const argv = argvFor(withDraft, 'minimal', recent, 1, KEY_FILE);
    expect(valueOf(argv, '-ngl')).toBe('0');
    expect(valueOf(argv, '-ngld')).toBe('0');
    expect(valueOf(argv, '-c')).toBe(String(smallerContext(32_768)));
  });

  it('partial: the smaller context, half the layers on the GPU, the draft as configured', () => {
    const argv = argvFor({ ...withDraft, layers: 32 }, 'partial', recent, 1, KEY_FILE);
    expect(valueOf(argv, '-c')).toBe(String(smallerContext(32_768)));
    // 16 blocks and the output layer, which llama.cpp's -ngl counts as one more.
    expect(valueOf(argv, '-ngl')).toBe('17');
    expect(valueOf(argv, '-ngld')).toBe('all');
  });

  it('partial: halves the layers a numeric gpuLayers puts on the GPU, not the whole model', () => {
    expect(valueOf(argvFor({ ...spec, gpuLayers: 20, layers: 32 }, 'partial', recent, 1, KEY_FILE), '-ngl')).toBe('11');
    expect(valueOf(argvFor({ ...spec, gpuLayers: 40, layers: 33 }, 'partial', old, 1, { key: 'k' }), '-ngl')).toBe('17');
  });

  it.each([
    ['the layer count is unknown', { ...withDraft }],
    ['there is no GPU (gpuLayers 0)', { ...withDraft, gpuLayers: 0, draft: { modelPath: '/models/qwen-0.5b.gguf', gpuLayers: 0 }, layers: 32 }],
    ['one layer cannot be split', { ...withDraft, layers: 1 }],
  ] satisfies [string, LaunchSpec][])('partial is the minimal argv when %s, as its footprint is', (_name, partialSpec) => {
    const argv = argvFor(partialSpec, 'partial', recent, 1, KEY_FILE);
    expect(valueOf(argv, '-ngl')).toBe('0');
    expect(valueOf(argv, '-ngld')).toBe('0');
    expect(argv).toEqual(argvFor(partialSpec, 'minimal', recent, 1, KEY_FILE));
  });

  it('partial: never more layers on the GPU than smaller-context, at its context, and the minimal argv when none', () => {
    const gpuLayers = fc.oneof(fc.constant<'all'>('all'), fc.integer({ min: 0, max: 300 }));
    fc.assert(
      fc.property(gpuLayers, gpuLayers, fc.option(fc.integer({ min: -2, max: 200 }), { nil: undefined }), (primary, draft, layers) => {
        const s: LaunchSpec = { ...spec, gpuLayers: primary, draft: { modelPath: '/models/d.gguf', gpuLayers: draft }, layers };
        const partial = argvFor(s, 'partial', old, 1, { key: 'k' });
        const smaller = argvFor(s, 'smaller-context', old, 1, { key: 'k' });
        expect(valueOf(partial, '-c')).toBe(valueOf(smaller, '-c'));
        const ngl = Number(valueOf(partial, '-ngl'));
        if (ngl === 0) {
          expect(partial).toEqual(argvFor(s, 'minimal', old, 1, { key: 'k' }));
        } else {
          const atFull = Math.min(Number(valueOf(smaller, '-ngl')), layers ?? 0);
          // ngl − 1 blocks: the output layer is the one more.
          expect(2 * (ngl - 1)).toBeLessThanOrEqual(atFull);
          expect(ngl).toBeGreaterThanOrEqual(2);
          expect(valueOf(partial, '-ngld')).toBe(valueOf(smaller, '-ngld'));
        }
      }),
      { numRuns: 2_000 },
    );
  });

  it('a recent build: draft with --spec-type draft-simple and --spec-draft-n-max', () => {
    const argv = argvFor(withDraft, 'full', recent, 1, KEY_FILE);
    expect(valueOf(argv, '-md')).toBe('/models/qwen-0.5b.gguf');
    expect(valueOf(argv, '-ngld')).toBe('all');
    expect(valueOf(argv, '--spec-type')).toBe('draft-simple');
    expect(valueOf(argv, '--spec-draft-n-max')).toBe(String(DRAFT_MAX_TOKENS));
    expect(argv).not.toContain('--draft-max');
  });

  it("an older build: --draft-max, no --spec-type, no --fit, and a layer count instead of 'all'", () => {
    const argv = argvFor(withDraft, 'full', old, 1, { key: 'k' });
    expect(valueOf(argv, '--draft-max')).toBe(String(DRAFT_MAX_TOKENS));
    expect(argv).not.toContain('--spec-type');
    expect(argv).not.toContain('--spec-draft-n-max');
    expect(argv).not.toContain('--fit');
    expect(valueOf(argv, '-ngl')).toBe('999');
    expect(valueOf(argv, '-ngld')).toBe('999');
  });

  it('the embedded engine: its fixed flag set, no draft-length or spec-type flags', () => {
    const savedConversations = { dir: '/data/conversations', minTokens: 256, budgetBytes: 1024 ** 3 };
    const argv = argvFor({ ...withDraft, engine: 'embedded', threads: 1, parallel: 2, savedConversations }, 'full', EMBEDDED_CAPABILITIES, 1, KEY_FILE);
    const flags = argv.filter((a) => a.startsWith('-') && !spec.extraArgs.includes(a));
    for (const flag of flags) expect(EMBEDDED_CAPABILITIES.flags.has(flag), flag).toBe(true);
    expect(valueOf(argv, '-t')).toBe('1');
    expect(valueOf(argv, '-np')).toBe('2');
  });

  it('gives the embedded engine the folder it keeps conversations in across evictions, and llama-server its staging folder there (it saves only when asked)', () => {
    const keeping = { ...spec, savedConversations: { dir: '/data/conversations', minTokens: 300, budgetBytes: 2 * 1024 ** 3 } };
    const embedded = argvFor({ ...keeping, engine: 'embedded' }, 'full', EMBEDDED_CAPABILITIES, 1, KEY_FILE);
    expect(valueOf(embedded, '--slot-save-path')).toBe('/data/conversations');
    expect(valueOf(embedded, '--slot-save-min-tokens')).toBe('300');
    expect(valueOf(embedded, '--slot-save-budget-mib')).toBe('2048');
    // Not the store's folder: that one is named by an identity known only once the server runs.
    const server = argvFor(keeping, 'full', recent, 1, KEY_FILE);
    expect(valueOf(server, '--slot-save-path')).toBe('/data/conversations/.llama-server');
    // llama-server has no such flags: its limits are the adapter's (saved-slots.ts).
    expect(server).not.toContain('--slot-save-min-tokens');
    expect(argvFor({ ...spec, engine: 'embedded' }, 'full', EMBEDDED_CAPABILITIES, 1, KEY_FILE)).not.toContain('--slot-save-path');
  });

  it('passes numeric GPU layers through and puts user arguments last', () => {
    const argv = argvFor({ ...spec, gpuLayers: 20 }, 'full', recent, 1, KEY_FILE);
    expect(valueOf(argv, '-ngl')).toBe('20');
    expect(argv.slice(-2)).toEqual(['--flash-attn', 'on']);
  });

  it('adds the projector where the engine takes one and refuses where it cannot', () => {
    const multimodal = { ...spec, projectorPath: '/models/mmproj.gguf' };
    expect(valueOf(argvFor(multimodal, 'full', recent, 1, KEY_FILE), '--mmproj')).toBe('/models/mmproj.gguf');
    expect(() => argvFor(multimodal, 'full', old, 1, { key: 'k' })).toThrow(/no --mmproj flag.*\/models\/mmproj\.gguf.*'qwen-7b'/);
  });

  it('keeps the key off the argv of every build that reads a key file: the recent llama-server and the embedded engine', () => {
    for (const [name, capabilities] of [['recent llama-server', recent], ['embedded', EMBEDDED_CAPABILITIES]] as const) {
      expect(readsApiKeyFile(capabilities), name).toBe(true);
      const argv = argvFor(withDraft, 'full', capabilities, 1, KEY_FILE);
      expect(valueOf(argv, '--api-key-file'), name).toBe(KEY_FILE.keyFile);
      expect(argv, name).not.toContain('--api-key');
    }
  });

  it('passes the key itself only to a build without --api-key-file, and refuses a key file there', () => {
    expect(readsApiKeyFile(old)).toBe(false);
    const argv = argvFor(spec, 'full', old, 1, { key: 's3cret' });
    expect(valueOf(argv, '--api-key')).toBe('s3cret');
    expect(argv).not.toContain('--api-key-file');
    expect(() => argvFor(spec, 'full', old, 1, KEY_FILE)).toThrow(/no --api-key-file flag.*'qwen-7b'/);
  });

  /** A build from before --jinja was on by default (llama.cpp's own words then). */
  const jinjaOff = detectCapabilities(
    `${text('llama-server-help-old.txt')}\n--jinja                                 use jinja template for chat (default: disabled)\n--embedding, --embeddings               restrict to only support embedding use case\n`,
    OLD_VERSION,
  );

  it('asks for the model’s own chat template with --jinja only where the build has it off by default', () => {
    expect(jinjaOff.jinja).toBe('flag');
    expect(argvFor(spec, 'full', jinjaOff, 1, { key: 'k' })).toContain('--jinja');
    expect(recent.jinja).toBe('default');
    expect(argvFor(spec, 'full', recent, 1, KEY_FILE)).not.toContain('--jinja');
    expect(old.jinja).toBe('absent');
    expect(argvFor(spec, 'full', old, 1, { key: 'k' })).not.toContain('--jinja');
  });

  it('starts an embedding model with --embeddings, a chat model without (it would serve embeddings only), and refuses where the build cannot', () => {
    const embedder = { ...spec, embeddings: { modelPools: true } };
    expect(argvFor(embedder, 'full', recent, 1, KEY_FILE)).toContain('--embeddings');
    expect(argvFor(embedder, 'full', recent, 1, KEY_FILE)).not.toContain('--pooling');
    expect(argvFor(embedder, 'full', jinjaOff, 1, { key: 'k' })).toContain('--embeddings');
    expect(argvFor(spec, 'full', recent, 1, KEY_FILE)).not.toContain('--embeddings');
    expect(() => argvFor(embedder, 'full', old, 1, { key: 'k' })).toThrow(/no --embeddings flag.*'qwen-7b'/);
    // The embedded engine embeds with any model and takes no such flag.
    expect(argvFor({ ...embedder, engine: 'embedded' }, 'full', EMBEDDED_CAPABILITIES, 1, KEY_FILE)).not.toContain('--embeddings');
  });

  it('turns off the CPU\'s extra weight buffers with --no-repack where the person asked, and refuses by name where the engine cannot', () => {
    const noRepack: LaunchSpec = { ...spec, noRepack: true };
    expect(argvFor(noRepack, 'minimal', recent, 1, KEY_FILE)).toContain('--no-repack');
    expect(argvFor(spec, 'minimal', recent, 1, KEY_FILE)).not.toContain('--no-repack');
    expect(() => argvFor(noRepack, 'full', old, 1, { key: 'k' })).toThrow(/'qwen-7b'.*repack: false.*no --no-repack flag/);
    expect(() => argvFor({ ...noRepack, engine: 'embedded' }, 'full', EMBEDDED_CAPABILITIES, 1, KEY_FILE)).toThrow(
      /'qwen-7b'.*repack: false.*embedded engine \(node-llama-cpp\) cannot turn off llama\.cpp's weight repacking.*engine: llama-server/,
    );
  });

  it('tells llama-server to average the tokens of a model marked to embed whose GGUF names no pooling, and refuses where it cannot', () => {
    const marked = { ...spec, embeddings: { modelPools: false } };
    expect(valueOf(argvFor(marked, 'full', recent, 1, KEY_FILE), '--pooling')).toBe('mean');
    expect(() => argvFor(marked, 'full', jinjaOff, 1, { key: 'k' })).toThrow(/no --pooling flag.*'qwen-7b'/);
  });
});
