// Loads the model (and its draft) with node-llama-cpp and builds the slots.
//
// Decisions that each prevent a known failure:
// - `build: "never"`: node-llama-cpp would otherwise try to compile llama.cpp from source
//   when no prebuilt binary fits, which takes minutes and needs a toolchain users lack.
// - GPU only when some layers are asked to go there: `-ngl 0` (the CPU-only "minimal" level
//   of the recovery ladder) must not even initialise a GPU backend, whose own allocations are
//   what failed in the first place.
// - explicit context size and threads: node-llama-cpp's "auto" context would size itself to
//   free memory (llama-server's -c is an exact request, and the footprint the scheduler
//   planned for), and its default thread count oversubscribes small machines badly.
// - `-c` is the TOTAL context, divided among the `-np` slots as llama-server does
//   (n_ctx_slot = n_ctx / n_slots); node-llama-cpp's contextSize is per sequence.
import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import {
  DraftSequenceTokenPredictor, getLlama, LlamaCompletion, LlamaLogLevel,
  type ChatWrapper, type GgmlType, type Llama, type LlamaContext, type LlamaModel,
} from 'node-llama-cpp';
import { chatWrapperFor } from './chat-wrapper.js';
import { startCpuRuntime } from './runtime/cpu-runtime.js';
import { chooseDecodeThreads } from './runtime/decode-threads.js';
import { FullBatches } from './runtime/full-batches.js';
import { usesGpu, type EngineOptions, type GpuLayers, type KvCacheType } from './cli-args.js';
import type { EngineLog } from './engine-log.js';
import { SavedSlots } from './saved-slots.js';
import { SlotPool, type Slot } from './slot-pool.js';

export interface LoadedEngine {
  llama: Llama;
  model: LlamaModel;
  draftModel: LlamaModel | undefined;
  context: LlamaContext;
  /** The name /v1/models reports and responses carry: the alias, else the file name. */
  modelName: string;
  contextPerSlot: number;
  threads: number;
  chatWrapper: ChatWrapper;
  pool: SlotPool;
  /** With --slot-save-path: idle slots' conversations saved and restored (saved-slots.ts). */
  savedSlots: SavedSlots | undefined;
}

/** node-llama-cpp's name of a llama-server cache type (`q8_0` → `Q8_0`). */
function ggmlTypeOf(type: KvCacheType): keyof typeof GgmlType {
  return type.toUpperCase() as keyof typeof GgmlType;
}

function toNodeLlamaGpuLayers(layers: GpuLayers): number | 'auto' | 'max' {
  return layers === 'all' ? 'max' : layers;
}

/**
 * node-llama-cpp's runtime: its native binding loaded, the backend initialised (a GPU one only
 * when `gpu`), llama.cpp's log routed to `log`. The slow half of a cold start that does not
 * depend on the model (see warm-spare.ts). Blocks for it (about a second on a loaded 2-core
 * machine; the CPU runtime skips the binding's test where it already passed, cpu-runtime.ts);
 * rejects with node-llama-cpp's error when no binary fits.
 */
export function startRuntime(runtime: { gpu: boolean; threads: number }, log: EngineLog): Promise<Llama> {
  const options = {
    maxThreads: runtime.threads,
    logLevel: LlamaLogLevel.info,
    logger: (level: LlamaLogLevel, message: string) => log.llamaLogger(level, message),
  };
  if (!runtime.gpu) return startCpuRuntime(options, (line) => log.line(line));
  return getLlama({ build: 'never', gpu: 'auto', ...options });
}

/** Why `draft` cannot draft for `target`, or undefined when it can (llama.cpp's own checks). */
export function draftIncompatibility(target: LlamaModel, draft: LlamaModel): string | undefined {
  const targetVocab = target.fileInfo.metadata.tokenizer.ggml.tokens.length;
  const draftVocab = draft.fileInfo.metadata.tokenizer.ggml.tokens.length;
  if (target.vocabularyType !== draft.vocabularyType) return `vocabulary types differ (${target.vocabularyType} vs ${draft.vocabularyType})`;
  if (Math.abs(targetVocab - draftVocab) > 128) return `vocabulary sizes differ by more than 128 tokens (${targetVocab} vs ${draftVocab})`;
  if (target.tokens.bos !== draft.tokens.bos || target.tokens.eos !== draft.tokens.eos) {
    return `special tokens differ (bos ${target.tokens.bos} vs ${draft.tokens.bos}, eos ${target.tokens.eos} vs ${draft.tokens.eos})`;
  }
  return undefined;
}

/**
 * Loads everything; `onProgress` receives 0..1. Blocks for the whole load (seconds for big
 * models). Rejects with node-llama-cpp's error; llama.cpp's explanation arrives on the log
 * afterwards (see EngineLog.settle). Not idempotent: each call loads another copy.
 * `runtime`: one already started (a warm spare's, of the same GPU-ness as `opts`), used
 * instead of starting another: a second getLlama would pay the runtime's start again.
 */
export async function loadEngine(opts: EngineOptions, log: EngineLog, onProgress: (fraction: number) => void, runtime?: Promise<Llama>): Promise<LoadedEngine> {
  const threads = opts.threads ?? availableParallelism();
  const llama = await (runtime ?? startRuntime({ gpu: usesGpu(opts), threads }, log));
  // A spare's runtime was started before its launch's thread count was known.
  llama.maxThreads = threads;
  log.line(`srv    load_model: loading model '${opts.modelPath}'`);
  const withDraft = opts.draftModelPath !== undefined;
  const modelShare = withDraft ? 0.8 : 0.9;
  const model = await llama.loadModel({
    modelPath: opts.modelPath,
    gpuLayers: toNodeLlamaGpuLayers(opts.gpuLayers),
    useMmap: opts.useMmap,
    onLoadProgress: (p) => onProgress(p * modelShare),
  });
  let draftModel: LlamaModel | undefined;
  if (opts.draftModelPath !== undefined) {
    log.line(`srv    load_model: loading draft model '${opts.draftModelPath}'`);
    draftModel = await llama.loadModel({
      modelPath: opts.draftModelPath,
      gpuLayers: toNodeLlamaGpuLayers(opts.draftGpuLayers),
      useMmap: opts.useMmap,
      onLoadProgress: (p) => onProgress(0.8 + p * 0.1),
    });
    const why = draftIncompatibility(model, draftModel);
    if (why) throw new Error(`the draft model '${opts.draftModelPath}' is not compatible with the target model: ${why}`);
  }
  const totalContext = opts.contextSize ?? model.trainContextSize;
  const contextPerSlot = Math.floor(totalContext / opts.parallel);
  if (contextPerSlot < 16) {
    throw new Error(`a context of ${totalContext} tokens over ${opts.parallel} slots leaves ${contextPerSlot} tokens per slot; at least 16 are needed`);
  }
  const kvTypes = { experimentalKvCacheKeyType: ggmlTypeOf(opts.cacheTypeK), experimentalKvCacheValueType: ggmlTypeOf(opts.cacheTypeV) };
  // Every generation step of all generating slots in one pass, in slot order (full-batches.ts).
  const batches = new FullBatches();
  const context = await model.createContext({
    contextSize: contextPerSlot, sequences: opts.parallel, threads, flashAttention: true, failedCreationRemedy: false, ...kvTypes,
    batching: { itemPrioritizationStrategy: batches.strategy },
  });
  batches.attach(context);
  const draftContext = draftModel
    ? await draftModel.createContext({ contextSize: contextPerSlot, sequences: opts.parallel, threads, flashAttention: true, failedCreationRemedy: false })
    : undefined;
  // 1 thread or -t per batch, whichever is faster here and now (decode-threads.ts).
  chooseDecodeThreads(context, threads);
  if (draftContext) chooseDecodeThreads(draftContext, threads);
  onProgress(1);

  const slots: Slot[] = [];
  for (let id = 0; id < opts.parallel; id++) {
    // One-token drafts on purpose: in node-llama-cpp 3.21.1 only the first drafted token of a
    // longer draft is validated correctly against the target, so longer drafts can change
    // the output. With one token the draft still saves a decode whenever it guesses right,
    // and the text is exactly what the target alone would produce.
    const tokenPredictor = draftContext
      ? new DraftSequenceTokenPredictor(draftContext.getSequence(), { minTokens: 1, maxTokens: 1 })
      : undefined;
    const sequence = context.getSequence(tokenPredictor ? { tokenPredictor } : undefined);
    slots.push({ id, sequence, completion: new LlamaCompletion({ contextSequence: sequence }), processing: false, taskId: -1, nPrompt: 0, nDecoded: 0, meterAtTake: sequence.tokenMeter.getState() });
  }
  log.line(`srv    load_model: initializing slots, n_slots = ${opts.parallel}, n_ctx_slot = ${contextPerSlot}, n_threads = ${threads}${draftModel ? ', speculative = draft (1 token)' : ''}`);
  const savedSlots = await SavedSlots.open(opts, { llama, model, contextPerSlot }, (line) => log.line(line));
  return {
    llama, model, draftModel, context, savedSlots,
    modelName: opts.alias ?? basename(opts.modelPath),
    contextPerSlot, threads,
    chatWrapper: chatWrapperFor(model, (line) => log.line(line)),
    pool: new SlotPool(slots, (slot) => batches.ended(slot.sequence)),
  };
}
