// How much memory a model takes, from its GGUF header: the numbers behind FootprintEstimate.
// The per-level arithmetic (which context, device or host) is core/policy/levels.ts's job.
//
// Estimates that forget the compute buffer, the draft or the projector are the most common
// complaint against every tool in this space (DESIGN.md), so each is a term here; what the
// formulas cannot know, learnFromMeasurement corrects upwards once the model has run.
import type { EngineKind } from '../contracts/snapshot.js';
import { DRAFT_MAX_TOKENS } from '../engine/launch-spec.js';
import type { FootprintEstimate } from '../policy/levels.js';
import type { GpuLayers } from './config/schema.js';
import { cpuExtraBytes, totalMatrixBytes, type CpuBufferRatios } from './cpu-buffers.js';
import type { GgufFacts } from './gguf-metadata.js';

/** llama.cpp's default physical batch (`-ub`); the compute graph is sized for it. */
export const DEFAULT_UBATCH_TOKENS = 512;
/** The KV cache's element size: llama.cpp's default cache type is f16. */
const KV_ELEMENT_BYTES = 2;
/** Activations and attention scores in the compute graph are f32. */
const F32_BYTES = 4;
const F16_BYTES = 2;

export type EstimateResult = { ok: true; estimate: FootprintEstimate } | { ok: false; error: string };

export interface EstimateInput {
  /** For messages: the file the facts came from. */
  path: string;
  facts: GgufFacts;
  contextTokens: number;
  gpuLayers: GpuLayers;
  /** The multimodal projector's facts, when one is attached. */
  projector?: GgufFacts | null;
  /**
   * What share of each matrix type this (engine build, CPU) puts in extra weight buffers on
   * the CPU: learned (cpu-buffers.ts), else the CPU's prior (cpu-buffer-prior.ts); absent or
   * empty: none (`repack: false`, or neither known).
   */
  cpuBufferRatios?: CpuBufferRatios;
  /**
   * What the engine that runs the model reserves logits for (logitsRows). Absent: a whole
   * micro-batch of rows, which is the embedded engine's reservation and the most any engine
   * makes, so a caller that does not know the engine errs large.
   */
  logits?: LogitsShape;
}

/** What decides how many rows of logits an engine's compute graph is reserved for. */
export interface LogitsShape {
  /** The engine that runs the model (not `auto`: launch-specs.ts's engineFor decides). */
  engine: EngineKind;
  /** Its slots (`-np`); unset: the engine's default. */
  parallel?: number;
  /** Whether a draft model proposes tokens for it: each slot then verifies 1 + DRAFT_MAX_TOKENS at once. */
  drafted: boolean;
  /** Whether it serves embeddings: llama-server then keeps every token's output. */
  embeddings: boolean;
}

/**
 * llama-server's slots when llmtray passes no `-np`: current builds default to `-np -1`, which
 * tools/server/server.cpp turns into 4 slots; older ones to 1. The larger, so that no build is
 * priced below what it reserves.
 */
const LLAMA_SERVER_DEFAULT_SLOTS = 4;

/**
 * How many rows of logits (n_vocab f32s each) the engine's compute graph is reserved for, at
 * most the micro-batch. llama.cpp reserves the graph with n_outputs = min(n_tokens,
 * n_outputs_max) (src/llama-context.cpp), n_outputs_max defaulting to n_batch when the caller
 * leaves it 0:
 *  - the embedded engine (node-llama-cpp) leaves it 0: a whole micro-batch of rows;
 *  - llama-server sets it (tools/server/server-context.cpp's server_output_limits, through
 *    common/speculative.cpp's common_speculative_get_output_limits) to slots × (1 + the most
 *    tokens a draft proposes), capped at n_batch: one row a slot without a draft, 1 +
 *    DRAFT_MAX_TOKENS (llmtray passes it) with one; with embeddings or pooling, n_batch;
 *  - llama-server's draft model has its own context, whose n_outputs_max is the slot count
 *    (common_base_params_to_speculative: the draft samples one token a slot per step): a draft
 *    is priced with `drafted: false`. (DFlash/DSpark block drafts take more; llmtray asks for
 *    draft-simple.)
 * A llama-server build older than n_outputs_max reserves a whole micro-batch like the embedded
 * engine; the measurement a running model reports raises the estimate there.
 */
export function logitsRows(shape: LogitsShape, ubatch: number = DEFAULT_UBATCH_TOKENS): number {
  if (shape.engine === 'embedded' || shape.embeddings) return ubatch;
  const slots = shape.parallel ?? LLAMA_SERVER_DEFAULT_SLOTS;
  const perSlot = shape.drafted ? 1 + DRAFT_MAX_TOKENS : 1;
  return Math.max(1, Math.min(ubatch, slots * perSlot));
}

/** The share of the layers on the device: all of them at 'all', proportional below the block count. */
export function offloadedFraction(gpuLayers: GpuLayers, blockCount: number): number {
  if (gpuLayers === 'all' || blockCount <= 0) return 1;
  return offloadedLayers(gpuLayers, blockCount) / blockCount;
}

/** How many of the model's blocks a full launch puts on the device: gpuLayers, at most the block count. */
function offloadedLayers(gpuLayers: GpuLayers, blockCount: number): number {
  return gpuLayers === 'all' ? blockCount : Math.min(gpuLayers, blockCount);
}

/**
 * The context an engine holds so that each of its `parallel` slots has `ctx` tokens: llama.cpp's
 * `-c` is the whole KV cache, split evenly among its `-np` slots (the embedded engine splits it
 * alike), so `ctx` per request takes ctx × parallel, and the plan prices that. Unset: `ctx`, as
 * before the field, the engine's own default slots sharing it.
 */
export function engineContextTokens(ctx: number, parallel: number | undefined): number {
  return parallel === undefined ? ctx : ctx * parallel;
}

/**
 * KV cache bytes per context token: K and V, for every layer, each `head_count_kv` heads wide,
 * at f16. With grouped-query attention this is n_embd_k_gqa = head_dim × head_count_kv, not
 * n_embd, which is why a GQA model's cache is 4-8 times smaller than its embedding suggests.
 */
export function kvBytesPerToken(facts: Pick<GgufFacts, 'blockCount' | 'headCountKv' | 'keyLength' | 'valueLength'>): number {
  return (facts.blockCount ?? 0) * kvBytesPerTokenPerLayer(facts);
}

/** One layer's KV cache bytes per token, rounded up to whole bytes (a header's head size may not divide evenly). */
function kvBytesPerTokenPerLayer(facts: Pick<GgufFacts, 'headCountKv' | 'keyLength' | 'valueLength'>): number {
  const heads = facts.headCountKv ?? 0;
  return Math.ceil(heads * ((facts.keyLength ?? 0) + (facts.valueLength ?? 0)) * KV_ELEMENT_BYTES);
}

/**
 * The compute buffer llama.cpp reserves for one micro-batch, with flash attention on — which
 * is how our engines run: the embedded engine asks for it explicitly, and llama-server's
 * default (`-fa auto`) turns it on wherever the backend supports it (the CPU, CUDA, Metal,
 * Vulkan). Flash attention never materialises the ubatch × n_ctx × n_head score matrix, so the
 * largest live tensors are the FFN's gate and up activations and a few n_embd-wide ones, the
 * logits, and the f16 mask over the context:
 *   4 · ub · (3·n_ff + 4·n_embd) + 4 · rows · n_vocab + 2 · ub · n_ctx
 * where rows is the logits rows the engine reserves (logitsRows): ub on the embedded engine,
 * min(ub, slots × outputs per slot) on llama-server, which on a 128–152 k vocabulary is
 * ~250 MiB less at ub 512. Absent `logits`: rows = ub, the most any engine reserves.
 * Checked against llama.cpp's own "compute buffer size" lines for demo-chat at 2k and 8k
 * context (BENCHMARKS.md, within 5 %), and for a Qwen2.5-0.5B-shaped Q8_0 (151,936 tokens) at
 * 2k: 334 MiB against the embedded engine's 300, 39.8 against llama-server's 37.5, whose
 * separate output buffer (n_vocab × 4 slots of f32 logits, 2.3 MiB) no term counts. An old
 * build without flash attention needs more (the scores, Ollama's formula); the measurement a
 * running model reports then raises the estimate.
 */
export function computeBufferBytes(
  facts: Pick<GgufFacts, 'embeddingLength' | 'feedForwardLength' | 'vocabulary'>,
  contextTokens: number,
  logits?: LogitsShape,
): number {
  const ubatch = Math.max(1, Math.min(DEFAULT_UBATCH_TOKENS, contextTokens));
  const rows = logits === undefined ? ubatch : logitsRows(logits, ubatch);
  const embd = facts.embeddingLength ?? 0;
  // Llama-family FFNs are 2.7–4 × n_embd; 4 keeps an incomplete header on the safe side.
  const ff = facts.feedForwardLength ?? 4 * embd;
  const vocab = facts.vocabulary?.tokenCount ?? 0;
  return F32_BYTES * ubatch * (3 * ff + 4 * embd) + F32_BYTES * rows * vocab + F16_BYTES * ubatch * contextTokens;
}

/**
 * A vision projector's encoder graph for one image: f32 attention scores over its patches for
 * every head, plus a few activations per patch. mtmd reserves this on the device next to the
 * text model's own buffer.
 */
export function projectorComputeBytes(vision: NonNullable<GgufFacts['vision']>): number {
  const patches = (vision.imageSize / vision.patchSize) ** 2;
  return Math.ceil(F32_BYTES * (patches * patches * vision.headCount + 4 * patches * vision.embeddingLength));
}

/**
 * The expert bytes per block that `--n-cpu-moe N` moves off the device at least N times, for
 * every N. It moves the expert tensors of the first N blocks, dense ones included, so a model
 * whose first blocks are dense (DeepSeek's and GLM's first_k_dense_replace) moves less for a
 * small N than N MoE blocks' worth; interleaved dense and MoE blocks (Llama 4) likewise. The
 * least average over those first-N prefixes is the one figure a placement may multiply by N
 * without overstating what leaves the device. Uniform MoE blocks: exactly one block's experts;
 * a dense first block: 0, so such a model is never costed as moving experts it does not move.
 */
export function expertBytesMovedPerBlock(blockExpertBytes: readonly number[]): number {
  let sum = 0;
  let least = Number.POSITIVE_INFINITY;
  blockExpertBytes.forEach((bytes, i) => {
    sum += bytes;
    least = Math.min(least, sum / (i + 1));
  });
  return Number.isFinite(least) ? Math.floor(least) : 0;
}

/** The estimate for one model without its draft (the catalog attaches the draft's). */
export function estimateFootprint(input: EstimateInput): EstimateResult {
  const { facts } = input;
  if (facts.blockCount === null || facts.embeddingLength === null) {
    const missing = facts.blockCount === null ? 'block_count' : 'embedding_length';
    return {
      ok: false,
      error: `${input.path}: cannot estimate its memory: the header has no ${facts.architecture}.${missing} (architecture "${facts.architecture}")`,
    };
  }
  const fraction = offloadedFraction(input.gpuLayers, facts.blockCount);
  const layers = offloadedLayers(input.gpuLayers, facts.blockCount);
  const projector = input.projector ?? null;
  const projectorBytes = projector?.tensorDataBytes ?? 0;
  const common = {
    // Layers left on the CPU keep their KV cache in host memory too (llama.cpp places each
    // layer's cache with the layer): the device holds the offloaded layers' share. Whole bytes
    // per layer, so that it divides by layer exactly (layerCostAt).
    kvBytesPerToken: kvBytesPerTokenPerLayer(facts) * layers,
    contextTokens: input.contextTokens,
    computeBytes: computeBufferBytes(facts, input.contextTokens, input.logits) + (projector?.vision ? projectorComputeBytes(projector.vision) : 0),
    layers,
  };
  const cpuBuffers = cpuBufferTerms(facts, input.cpuBufferRatios ?? {});
  // A header whose tensors are not named blk.N (no architecture llama.cpp loads does that)
  // cannot be costed by block: its weights are the offloaded share of all of them.
  if (facts.blockBytes.length === 0) {
    return { ok: true, estimate: { weightsBytes: Math.ceil(facts.tensorDataBytes * fraction) + projectorBytes, ...common, ...cpuBuffers } };
  }

  // The largest block, so that any N blocks cost at most N of these wherever they go.
  const blockWeightsBytes = facts.blockBytes.reduce((a, b) => Math.max(a, b), 0);
  // llama.cpp puts the output layer on the device once -ngl is 1 or more, and nothing at 0.
  // The input embeddings stay in host memory (llama-model.cpp: "very little benefit to
  // offloading the input layer"), but a model with tied embeddings has a device copy of them
  // as its output: counting them keeps that case exact and errs large by their size otherwise.
  const nonBlockWeightsBytes = (layers > 0 ? facts.nonBlockBytes : 0) + projectorBytes;
  return {
    ok: true,
    estimate: {
      weightsBytes: nonBlockWeightsBytes + layers * blockWeightsBytes,
      ...common,
      blockWeightsBytes,
      expertBytesPerBlock: expertBytesMovedPerBlock(facts.blockExpertBytes),
      nonBlockWeightsBytes,
      ...cpuBuffers,
    },
  };
}

/**
 * The CPU's extra weight buffers the model's matrices take where they run on the CPU: per
 * block the largest block's (as blockWeightsBytes is), and the output's; only the terms that
 * are not 0. A header without blocks has all of it outside them.
 */
function cpuBufferTerms(facts: GgufFacts, ratios: CpuBufferRatios): Pick<FootprintEstimate, 'cpuBufferBytesPerBlock' | 'cpuBufferNonBlockBytes'> {
  const matrices = facts.cpuMatrixBytes;
  if (matrices === undefined || Object.keys(ratios).length === 0) return {};
  const perBlock = facts.blockBytes.length === 0 ? 0 : matrices.blocks.reduce((most, block) => Math.max(most, cpuExtraBytes(ratios, block)), 0);
  const nonBlock = cpuExtraBytes(ratios, facts.blockBytes.length === 0 ? totalMatrixBytes(matrices) : matrices.nonBlock);
  return { ...(perBlock > 0 ? { cpuBufferBytesPerBlock: perBlock } : {}), ...(nonBlock > 0 ? { cpuBufferNonBlockBytes: nonBlock } : {}) };
}
