// Catalog model → launch spec: which engine, how many GPU layers, the draft, and the errors.
import { describe, expect, it } from 'vitest';
import { launchSpecFor, type LaunchSpecSources } from '../../../core/daemon/launch-specs.js';
import { argvFor, EMBEDDED_CAPABILITIES } from '../../../core/engine/launch-spec.js';
import { savedConversationsFor } from '../../../core/daemon/saved-conversations-view.js';
import { catalogModel } from '../../support/catalog-model.js';

function sources(models: ReturnType<typeof catalogModel>[], overrides: Partial<LaunchSpecSources> = {}): LaunchSpecSources {
  return { resolve: (id) => models.find((m) => m.id === id), cpuOnly: () => false, llamaServerPath: null, threads: 1, ...overrides };
}

describe('launchSpecFor', () => {
  it('runs auto models on llama-server when one was found, else on the embedded engine', () => {
    const m = catalogModel('a');
    expect(launchSpecFor('a', sources([m])).engine).toBe('embedded');
    expect(launchSpecFor('a', sources([m], { llamaServerPath: '/usr/bin/llama-server' })).engine).toBe('llama-server');
    expect(launchSpecFor('a', sources([catalogModel('a', { engine: 'embedded' })], { llamaServerPath: '/x' })).engine).toBe('embedded');
  });

  it('puts no layer on a GPU when the budget has none, the draft included', () => {
    const models = [catalogModel('a', { draftId: 'd', gpuLayers: 20 }), catalogModel('d')];
    const gpu = launchSpecFor('a', sources(models));
    expect(gpu.gpuLayers).toBe(20);
    expect(gpu.draft).toEqual({ modelPath: '/models/d.gguf', gpuLayers: 'all' });
    const cpu = launchSpecFor('a', sources(models, { cpuOnly: () => true }));
    expect(cpu.gpuLayers).toBe(0);
    expect(cpu.draft?.gpuLayers).toBe(0);
  });

  it('carries the layers the estimate splits, so a partial launch passes the -ngl its footprint costed', () => {
    const estimate = { weightsBytes: 1, kvBytesPerToken: 1, contextTokens: 4096, computeBytes: 1, layers: 20 };
    const models = [catalogModel('a', { gpuLayers: 20, estimate })];
    const ngl = (spec: ReturnType<typeof launchSpecFor>) => {
      const argv = argvFor(spec, 'partial', EMBEDDED_CAPABILITIES, 1, { keyFile: '/k' });
      return argv[argv.indexOf('-ngl') + 1];
    };
    const gpu = launchSpecFor('a', sources(models));
    expect(gpu.layers).toBe(20);
    expect(ngl(gpu)).toBe('11'); // 10 blocks and the output layer
    expect(ngl(launchSpecFor('a', sources(models, { cpuOnly: () => true })))).toBe('0');
    expect(launchSpecFor('b', sources([catalogModel('b')])).layers).toBeUndefined();
  });

  it('appends the arguments of the engine that runs the model after the shared ones, and no other engine’s', () => {
    const m = catalogModel('a', { args: ['--no-mmap'], engineArgs: { 'llama-server': ['--logit-bias', '356+90'], embedded: ['-t', '2'] } });
    expect(launchSpecFor('a', sources([m], { llamaServerPath: '/usr/bin/llama-server' })).extraArgs).toEqual(['--no-mmap', '--logit-bias', '356+90']);
    expect(launchSpecFor('a', sources([m])).extraArgs).toEqual(['--no-mmap', '-t', '2']);
    expect(launchSpecFor('a', sources([catalogModel('a', { engineArgs: { 'llama-server': ['--logit-bias', '356+90'] } })])).extraArgs).toEqual([]);
  });

  it('gives the engine a slot per request served at once, each with the whole configured context, and the engine’s own default without parallel', () => {
    const argv = (limits: { parallel?: number }) => argvFor(launchSpecFor('a', sources([catalogModel('a', { ctx: 2048, limits })])), 'full', EMBEDDED_CAPABILITIES, 1, { keyFile: '/k' });
    const flag = (args: string[], name: string) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
    const four = argv({ parallel: 4 });
    expect([flag(four, '-c'), flag(four, '-np')]).toEqual(['8192', '4']);
    const unset = argv({});
    expect([flag(unset, '-c'), flag(unset, '-np')]).toEqual(['2048', undefined]);
  });

  it('merges the engine environment under the model’s own', () => {
    const m = catalogModel('a', { env: { CUDA_VISIBLE_DEVICES: '1', SHARED: 'model' } });
    const spec = launchSpecFor('a', sources([m], { engineEnv: { ELECTRON_RUN_AS_NODE: '1', SHARED: 'app' } }));
    expect(spec.env).toEqual({ ELECTRON_RUN_AS_NODE: '1', CUDA_VISIBLE_DEVICES: '1', SHARED: 'model' });
  });

  it('refuses with the catalog’s reason a model it cannot read, and names a missing draft', () => {
    expect(() => launchSpecFor('a', sources([catalogModel('a', { metadataError: '/m/a.gguf: not a GGUF file' })]))).toThrow('/m/a.gguf: not a GGUF file');
    expect(() => launchSpecFor('a', sources([catalogModel('a', { draftId: 'gone' })]))).toThrow(/draft 'gone'/);
    expect(() => launchSpecFor('zzz', sources([]))).toThrow(/'zzz' is no longer in the catalog/);
  });

  it("gives the engine a conversations folder and the config's limits unless engines.savedConversations is false", () => {
    const models = [catalogModel('a', { engine: 'embedded' })];
    const argvWith = (config: Parameters<typeof savedConversationsFor>[0]) => {
      const savedConversations = savedConversationsFor(config, '/data');
      return argvFor(launchSpecFor('a', sources(models, savedConversations === undefined ? {} : { savedConversations })), 'full', EMBEDDED_CAPABILITIES, 1, { keyFile: '/k' });
    };
    const valueOf = (argv: string[], flag: string) => argv[argv.indexOf(flag) + 1];
    const kept = argvWith({ savedConversations: true });
    expect(valueOf(kept, '--slot-save-path')).toBe('/data/conversations');
    // The defaults, said to the engine rather than left to it: one number for both engines.
    expect(valueOf(kept, '--slot-save-min-tokens')).toBe('256');
    expect(valueOf(kept, '--slot-save-budget-mib')).toBe('4096');
    const tuned = argvWith({ savedConversations: true, savedConversationsMinTokens: 1000, savedConversationsBudgetBytes: 512 * 1024 ** 2 });
    expect(valueOf(tuned, '--slot-save-min-tokens')).toBe('1000');
    expect(valueOf(tuned, '--slot-save-budget-mib')).toBe('512');
    // No folder: the engine neither saves a slot nor restores one.
    expect(argvWith({ savedConversations: false, savedConversationsMinTokens: 1000 })).not.toContain('--slot-save-path');
  });
});
