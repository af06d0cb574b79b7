// Catalog model → what the supervisor starts. The one place that decides which engine runs a
// model and how many layers go to the GPU, so the argv and the budget cannot disagree.
import { availableParallelism } from 'node:os';
import type { CatalogModel } from '../catalog/catalog.js';
import { engineContextTokens } from '../catalog/footprint.js';
import type { LaunchSpec, SavedConversationsSpec } from '../engine/launch-spec.js';

export interface LaunchSpecSources {
  resolve(id: string): CatalogModel | undefined;
  /** True when the live budget has no GPU: every engine runs on the CPU. */
  cpuOnly(): boolean;
  /** The user's llama-server, or null when none was found (then `auto` means embedded). */
  llamaServerPath: string | null;
  /**
   * Why there is none, as findLlamaServer says it (a configured path that does not exist or is
   * not executable names that path): the refusal of a model that asks for llama-server.
   */
  noLlamaServer?: string;
  /** Extra environment for every engine (e.g. ELECTRON_RUN_AS_NODE inside Electron). */
  engineEnv?: Record<string, string>;
  /** Threads per engine; default half the cores, at least 1. */
  threads?: number;
  /** Where and which conversations are kept across evictions (LaunchSpec.savedConversations). */
  savedConversations?: SavedConversationsSpec;
}

/**
 * Half the cores by default: llama.cpp's own default (every core) makes two resident models
 * fight over the CPU, and on small machines oversubscription is catastrophic (node-llama-cpp's
 * default of 4 threads on a 2-core machine is ~100× slower than 1).
 */
export function defaultThreads(): number {
  return Math.max(1, Math.floor(availableParallelism() / 2));
}

/** The engine that runs `model`: its own choice, or for `auto` llama-server when one was found. */
export function engineFor(model: Pick<CatalogModel, 'engine'>, llamaServerPath: string | null): LaunchSpec['engine'] {
  if (model.engine !== 'auto') return model.engine;
  return llamaServerPath === null ? 'embedded' : 'llama-server';
}

/** Throws an Error naming the cause when the model cannot be started as defined. */
export function launchSpecFor(modelId: string, sources: LaunchSpecSources): LaunchSpec {
  const model = sources.resolve(modelId);
  if (model === undefined) throw new Error(`'${modelId}' is no longer in the catalog`);
  if (model.metadataError !== null) throw new Error(model.metadataError);
  if (engineFor(model, sources.llamaServerPath) === 'llama-server' && sources.llamaServerPath === null && sources.noLlamaServer !== undefined) {
    throw new Error(`'${model.id}' asks for llama-server, but ${sources.noLlamaServer} (llmtray looks for llama-server when it starts: restart it once that is fixed)`);
  }
  const cpu = sources.cpuOnly();
  const engine = engineFor(model, sources.llamaServerPath);
  const spec: LaunchSpec = {
    modelId: model.id,
    engine,
    modelPath: model.path,
    // Every slot's context, as the plan priced it (engineContextTokens): each request gets `ctx`.
    contextTokens: engineContextTokens(model.ctx, model.limits.parallel),
    gpuLayers: cpu ? 0 : model.gpuLayers,
    threads: sources.threads ?? defaultThreads(),
    aliases: model.aliases,
    extraArgs: [...model.args, ...(model.engineArgs[engine] ?? [])],
    env: { ...sources.engineEnv, ...model.env },
    hangLimitMs: model.hangLimitMs,
  };
  if (model.estimate !== null) spec.estimateBytes = model.estimate.weightsBytes;
  // The same layer count the estimate split for 'partial', so its -ngl is the share the plan costed.
  if (model.estimate?.layers !== undefined) spec.layers = model.estimate.layers;
  if (model.projectorPath !== undefined) spec.projectorPath = model.projectorPath;
  if (model.embeddings !== undefined) spec.embeddings = model.embeddings;
  if (!model.repack) spec.noRepack = true;
  if (model.limits.parallel !== undefined) spec.parallel = model.limits.parallel;
  if (sources.savedConversations !== undefined) spec.savedConversations = sources.savedConversations;
  if (model.draftId !== undefined) {
    const draft = sources.resolve(model.draftId);
    if (draft === undefined) throw new Error(`'${modelId}' names draft '${model.draftId}', which is not in the catalog`);
    spec.draft = { modelPath: draft.path, gpuLayers: cpu ? 0 : draft.gpuLayers };
  }
  return spec;
}
