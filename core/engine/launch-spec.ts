// What it takes to start one model server, and the argv that says it to the engine.
//
// argvFor is pure so that every level × engine build is a table test: the argv is where an
// estimate meets reality, and a wrong `-c` or `-ngl` is an OOM the scheduler cannot foresee.
import { smallerContext, partialLayers } from '../policy/levels.js';
import type { EngineCapabilities } from './llama-server/capabilities.js';
import { placementArgs, placementGpuLayers } from './placement-args.js';
import { llamaServerStagingDir } from './saved-conversations/on-disk.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { Placement } from '../contracts/plan.js';
import type { EngineIdentityOf } from '../contracts/gpu-identity.js';
import type { EngineKind } from '../contracts/snapshot.js';

export interface LaunchSpec {
  modelId: string;
  engine: EngineKind;
  modelPath: string;
  /**
   * The context the engine holds, all its slots together (`-c`: the configured context times
   * `parallel`, engineContextTokens); every level but 'full' launches at smallerContext of it.
   */
  contextTokens: number;
  gpuLayers: number | 'all';
  /**
   * The layers a 'full' launch puts on the device (the estimate's `layers`): 'partial' passes
   * partialLayers of it, capped by a numeric gpuLayers. Absent: unknown, and 'partial' then
   * launches as 'minimal' does, which is what its footprint assumed.
   */
  layers?: number;
  /** A speculative-decoding draft, loaded in the same process. */
  draft?: { modelPath: string; gpuLayers: number | 'all' };
  /** A multimodal projector (`--mmproj`). */
  projectorPath?: string;
  /**
   * The model serves embeddings (an embedding model: its GGUF names a pooling, or the config
   * says so): llama-server needs `--embeddings` for /v1/embeddings, and is then an
   * embedding-only server, which is why chat models are not started with it. `modelPools`:
   * the GGUF says how to pool; otherwise `--pooling mean` (llama-server refuses OpenAI's
   * embeddings for a model that pools nothing).
   */
  embeddings?: { modelPools: boolean };
  /**
   * The person would rather not pay the CPU's extra weight buffers (AMX, CPU_REPACK): the
   * weights stay in the mapped file only, at the cost of the faster kernels (`--no-repack`).
   */
  noRepack?: true;
  threads?: number;
  /** Requests served at once: the engine's slots (`-np`), which split `contextTokens` evenly. Absent: the engine's own default. */
  parallel?: number;
  /** Extra names the engine answers to besides modelId. */
  aliases: string[];
  /** The user's own arguments, appended last so that they win where the engine lets the last one win. */
  extraArgs: string[];
  env: Record<string, string>;
  /** No progress this long with requests in flight and the server is hung (the supervisor's default when absent). */
  hangLimitMs?: number;
  /** Expected footprint in bytes, to scale the load timeout with the model's size. */
  estimateBytes?: number;
  /**
   * Where conversations are kept so that they survive an eviction (core/engine/saved-conversations/):
   * the embedded engine's `--slot-save-path`, saving idle slots itself; a llama-server is given
   * its staging folder under it and asked over HTTP (core/engine/llama-server/saved-slots.ts).
   * Absent: none kept.
   */
  savedConversations?: SavedConversationsSpec;
}

/** Where and which conversations are kept across evictions (config: engines.savedConversations…). */
export interface SavedConversationsSpec {
  /** The data dir's conversations folder. */
  dir: string;
  /** Only conversations longer than this are saved, and restored for a prompt sharing more than this. */
  minTokens: number;
  /** All saved conversations under `dir` together, least recently used dropped first. */
  budgetBytes: number;
}

/**
 * The embedded engine (core/engine/embedded) takes this fixed subset of llama-server's flags.
 * It decides the draft length itself, so it has no draft-length flag and no --spec-type.
 */
export const EMBEDDED_CAPABILITIES: EngineCapabilities = {
  version: null,
  flags: new Set([
    '-m', '-c', '-ngl', '-md', '-ngld', '-t', '-np', '--host', '--port', '--alias', '--no-mmap', '--api-key', '--api-key-file', '--slot-save-path',
    '--slot-save-min-tokens', '--slot-save-budget-mib',
  ]),
  draftMaxFlag: null,
  specTypes: [],
  gpuLayersAll: true,
  // It renders every chat with the model's own template and serves embeddings for any model by itself.
  jinja: 'default',
  embeddingsFlag: null,
};

/**
 * How the per-launch API key reaches the engine: the path of a file holding it, or the key
 * itself. Why a file: an argv is readable by every local user (`ps`, /proc/PID/cmdline), and
 * the key is what keeps other users and web pages off the engine's loopback port. The key
 * itself only for builds that predate `--api-key-file`.
 */
export type ApiKeyArgument = { keyFile: string } | { key: string };

/** Whether the engine reads its API key from a file (`--api-key-file`), so the key stays off its argv. */
export function readsApiKeyFile(capabilities: EngineCapabilities): boolean {
  return capabilities.flags.has('--api-key-file');
}

/**
 * How many tokens a draft proposes per step. Passed explicitly because the default moved
 * between builds (16 before the `--spec-draft-n-max` rename, 3 after), and a footprint or
 * speed learned on one build should hold on the next.
 */
export const DRAFT_MAX_TOKENS = 16;

/**
 * Layer count that means "every layer" for builds whose -ngl takes numbers only; llama.cpp
 * clamps it to the model's layer count.
 */
const ALL_LAYERS = 999;

/**
 * The engine argv (after the command and its fixed prefix) for one launch. Pure.
 * - full: the configured context and GPU layers.
 * - smaller-context: smallerContext of the configured context, the same GPU layers.
 * - partial: the smaller context, partialLayers(layers) blocks and the output layer on the device
 *   (`-ngl` one more: llama.cpp counts the output as a layer) with the rest on the CPU, the
 *   draft's GPU layers as configured (it stays on the device, as footprintAt counts it).
 *   When that is 0 layers (unknown, or gpuLayers 0 as on a machine without a GPU) it is
 *   minimal's argv, as its footprint is minimal's.
 * - minimal: the smaller context, `-ngl 0` and the draft on the CPU too (`-ngld 0`).
 * A `placement` (where `place` put the model) adds its devices (placement-args.ts, in the
 * driver's numbers `identityOf` gives for each of the plan's GPUs), and where it
 * keeps part of the model in host RAM, its own `-ngl` (or `--n-cpu-moe`) instead of the level's.
 * Always passes explicit `-c` and `-ngl`: llama.cpp's automatic fitting only warns when it
 * cannot fit and then fails later, and it turns it off with `-fit off` where the build has
 * it, because the scheduler has already decided what goes where.
 * The key goes as `--api-key-file` or, given `{ key }`, as `--api-key` (see ApiKeyArgument).
 * `--jinja` where the build has it off by default: the model's own template is what renders
 * tools and tool turns (without it llama-server ignores `tools`). `--embeddings` for a model
 * that serves embeddings (spec.embeddings), on llama-server builds; the embedded engine needs
 * no flag for it.
 * Throws an Error naming the flag when the spec asks for something this engine cannot do
 * (a projector without `--mmproj`, a key file without `--api-key-file`, embeddings from a
 * llama-server build without `--embeddings`).
 */
export function argvFor(
  spec: LaunchSpec,
  level: LaunchLevel,
  capabilities: EngineCapabilities,
  port: number,
  apiKey: ApiKeyArgument,
  placement?: Placement,
  identityOf?: EngineIdentityOf,
): string[] {
  // A placement with part (or all) of the model in host RAM says how many layers the device holds.
  const placedLayers = placementGpuLayers(placement);
  const splitLayers = placedLayers ?? (level === 'partial' ? partialLayers(layersAtFull(spec)) : null);
  const onCpu = level === 'minimal' || splitLayers === 0;
  const layers = (n: number | 'all'): string =>
    onCpu ? '0' : n === 'all' ? (capabilities.gpuLayersAll ? 'all' : String(ALL_LAYERS)) : String(n);
  const context = level === 'full' ? spec.contextTokens : smallerContext(spec.contextTokens);

  // llama.cpp's -ngl counts the output layer as one more layer, offloaded first: `-ngl N` is the
  // output and N − 1 blocks. The footprint keeps the output on the device with the N blocks it
  // costs there, so the argv asks for N + 1.
  const primaryLayers = splitLayers === null ? layers(spec.gpuLayers) : onCpu ? '0' : String(splitLayers + 1);
  const argv = ['-m', spec.modelPath, '-c', String(context), '-ngl', primaryLayers];
  if (capabilities.flags.has('--fit')) argv.push('--fit', 'off');
  if (!onCpu) argv.push(...placementArgs(placement, capabilities, identityOf));
  if (spec.draft) {
    argv.push('-md', spec.draft.modelPath, '-ngld', layers(spec.draft.gpuLayers));
    const draftType = capabilities.specTypes.find((t) => t === 'draft-simple') ?? capabilities.specTypes.find((t) => t.startsWith('draft'));
    if (draftType !== undefined) argv.push('--spec-type', draftType);
    if (capabilities.draftMaxFlag !== null) argv.push(capabilities.draftMaxFlag, String(DRAFT_MAX_TOKENS));
  }
  if (spec.projectorPath !== undefined) {
    if (!capabilities.flags.has('--mmproj') && !capabilities.flags.has('-mm')) {
      throw new Error(
        `the ${spec.engine} engine has no --mmproj flag, so the projector ${spec.projectorPath} for '${spec.modelId}' cannot be loaded; use a llama-server build with multimodal support`,
      );
    }
    argv.push('--mmproj', spec.projectorPath);
  }
  if (spec.noRepack === true) argv.push(noRepackFlag(spec, capabilities));
  if (capabilities.jinja === 'flag') argv.push('--jinja');
  if (spec.embeddings !== undefined && spec.engine === 'llama-server') {
    if (capabilities.embeddingsFlag === null) {
      throw new Error(`the llama-server build has no --embeddings flag, so '${spec.modelId}' cannot serve /v1/embeddings; use a newer llama-server build or engine: embedded`);
    }
    argv.push(capabilities.embeddingsFlag);
    if (!spec.embeddings.modelPools) {
      if (!capabilities.flags.has('--pooling')) {
        throw new Error(`the llama-server build has no --pooling flag, so '${spec.modelId}', whose GGUF names no pooling, cannot be made to embed; use a newer llama-server build or engine: embedded`);
      }
      argv.push('--pooling', 'mean');
    }
  }
  const kept = spec.savedConversations;
  if (kept !== undefined && capabilities.flags.has('--slot-save-path')) {
    // llama-server saves only when asked: its limits are the adapter's (saved-slots.ts), not flags of its own.
    if (spec.engine === 'embedded') {
      argv.push('--slot-save-path', kept.dir, '--slot-save-min-tokens', String(kept.minTokens), '--slot-save-budget-mib', String(Math.floor(kept.budgetBytes / 1024 ** 2)));
    } else argv.push('--slot-save-path', llamaServerStagingDir(kept.dir));
  }
  if (spec.threads !== undefined) argv.push('-t', String(spec.threads));
  if (spec.parallel !== undefined) argv.push('-np', String(spec.parallel));
  const names = [...new Set([spec.modelId, ...spec.aliases])];
  argv.push('--alias', names.join(','));
  argv.push('--host', '127.0.0.1', '--port', String(port));
  if ('keyFile' in apiKey) {
    if (!readsApiKeyFile(capabilities)) {
      throw new Error(`the ${spec.engine} engine has no --api-key-file flag, so '${spec.modelId}' cannot be given its API key in a file; this build takes the key itself ({ key })`);
    }
    argv.push('--api-key-file', apiKey.keyFile);
  } else {
    argv.push('--api-key', apiKey.key);
  }
  argv.push(...spec.extraArgs);
  return argv;
}

/**
 * The flag that keeps llama.cpp from copying weights into the CPU's extra buffers. The
 * embedded engine cannot: node-llama-cpp 3.21 passes llama.cpp no such model option (its
 * use_extra_bufts stays on), so a model that asks is refused by name rather than launched
 * with the buffers it was configured without, and priced without.
 */
function noRepackFlag(spec: LaunchSpec, capabilities: EngineCapabilities): string {
  if (spec.engine === 'embedded') {
    throw new Error(
      `'${spec.modelId}' is configured with repack: false, but the embedded engine (node-llama-cpp) cannot turn off llama.cpp's weight repacking; use engine: llama-server, or remove repack: false`,
    );
  }
  if (!capabilities.flags.has('--no-repack')) {
    throw new Error(`'${spec.modelId}' is configured with repack: false, but the llama-server build has no --no-repack flag; use a newer llama-server build, or remove repack: false`);
  }
  return '--no-repack';
}

/** The layers a 'full' launch of the spec puts on the device: its known layer count, capped by a numeric gpuLayers. */
function layersAtFull(spec: LaunchSpec): number {
  const known = spec.layers ?? 0;
  return spec.gpuLayers === 'all' ? known : Math.min(known, spec.gpuLayers);
}
