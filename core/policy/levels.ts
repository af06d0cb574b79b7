// Launch levels and what a model costs at each.
//
// One function owns "how much memory does this model take at this level", because the
// scheduler's budget, the llama-server argv (`-c`, `-ngl`) and the dashboard's memory picture
// must all agree: when the estimate and the launch disagree, the launch OOMs on memory the
// plan said was free. The 'partial' split (partialLayers) is shared with the argv for the
// same reason: the `-ngl` it passes is the share of layers the estimate put on the device.
import type { LaunchLevel } from '../contracts/launch-level.js';
import { nonNegative } from './non-negative.js';
import type { LayerCost } from './place.js';

/** llama.cpp allocates KV cache in cells; a multiple of 256 keeps every backend's padding happy. */
const CONTEXT_STEP = 256;
/** Below this a chat model cannot hold a system prompt and one exchange, so shrinking further is useless. */
const CONTEXT_FLOOR = 512;

/**
 * The context a 'smaller-context' launch uses (and 'partial' and 'minimal' below it): a quarter of the configured one, rounded down to a
 * multiple of 256, at least 512, and never more than the configured context (a model
 * configured with 300 tokens stays at 300). Why a quarter: the KV cache is the part of the
 * footprint that scales with context, and a quarter frees most of it while leaving a usable
 * window; halving often does not free enough to get past the allocation that failed.
 * Negative or non-numeric input counts as zero.
 */
export function smallerContext(contextTokens: number): number {
  const configured = nonNegative(Math.floor(contextTokens));
  const quarter = Math.floor(configured / 4 / CONTEXT_STEP) * CONTEXT_STEP;
  return Math.min(configured, Math.max(CONTEXT_FLOOR, quarter));
}

/**
 * The layers a 'partial' launch puts on the device, of the `layers` a full launch puts there:
 * half, rounded down. Why half for now: it is the one rule that needs no knowledge of the
 * device it lands on; placement per GPU will replace it with "as many as fit there", and
 * the footprint and the argv both read it from here so they change together. 0 (unknown,
 * negative, not a number, one layer) means nothing of the model goes on the device, and
 * 'partial' then is 'minimal'.
 */
export function partialLayers(layers: number): number {
  return Math.floor(layerCount(layers) / 2);
}

/** What the catalog knows about a model's memory, independent of the level it launches at. */
export interface FootprintEstimate {
  /** Weights when fully offloaded to the device (including a multimodal projector), bytes. */
  weightsBytes: number;
  /** KV cache bytes per token of context, all layers, K and V. */
  kvBytesPerToken: number;
  /** The configured context, tokens. */
  contextTokens: number;
  /** The compute buffer, bytes. */
  computeBytes: number;
  /**
   * What the engine process itself costs where the model runs, bytes: its runtime in host RAM,
   * its backend's context on a GPU (core/engine/runtime-overhead.ts). Paid once per process, at
   * any context, and on each device a split uses. Absent: 0 (the catalog's own estimate; the
   * daemon prices it in).
   */
  runtimeBytes?: number;
  /**
   * The repeating blocks (transformer layers) a full launch puts on the device: the model's
   * block count, capped by its configured GPU layers. Weights and KV above are the bytes of
   * these layers, which is what lets 'partial' split them by layer. Absent, zero, negative
   * or not finite: unknown, and 'partial' costs what 'minimal' does.
   */
  layers?: number;
  /**
   * The weights of one repeating block, bytes: the largest block's, so that any N blocks cost
   * at most N of these wherever they go (blocks differ: a mixture of experts with dense first
   * blocks, interleaved layers). With nonBlockWeightsBytes, what costs any split and any
   * `-ngl` (layerCostAt); the catalog keeps weightsBytes = nonBlockWeightsBytes + layers ×
   * blockWeightsBytes. Absent: the layers cannot be costed one by one, and 'partial' moves
   * weights and KV to host RAM in proportion to the layers instead.
   */
  blockWeightsBytes?: number;
  /**
   * Of blockWeightsBytes, the mixture-of-experts expert tensors that `--n-cpu-moe` keeps on the
   * CPU, per block: a figure N × which never exceeds what `--n-cpu-moe N` really moves (it
   * takes the first N blocks, dense ones included), so the device share errs large. 0 or
   * absent for a dense model.
   */
  expertBytesPerBlock?: number;
  /**
   * The weights that are not in a block and go on the main device whatever the split: the
   * output tensors, the embeddings, a multimodal projector; bytes.
   */
  nonBlockWeightsBytes?: number;
  /**
   * What one block's weights take beside their mapped copy in the CPU's extra buffers (AMX,
   * CPU_REPACK) where the block runs on the CPU, bytes: the largest block's. Absent or 0: none
   * (nothing of the kind learned or allowed by the prior for this engine build and CPU, or
   * repacking turned off).
   * Not in weightsBytes, which is the weights on a GPU; estimateOnCpu adds it.
   */
  cpuBufferBytesPerBlock?: number;
  /** The same for the weights outside the blocks (the output matrix), bytes. */
  cpuBufferNonBlockBytes?: number;
  /**
   * The speculative-decoding draft, loaded in the same process. Its own contextTokens is
   * ignored: llama-server runs the draft at the primary's context. So are its layers: a
   * 'partial' launch keeps the draft wholly on the device (it is small, its `-ngld` is
   * unchanged, and it is what keeps the partly offloaded primary fast).
   */
  draft?: FootprintEstimate;
}

/**
 * The estimate of a model whose "device" is the CPU (a machine without a GPU, where host RAM is
 * the budget): its weights with the CPU's extra buffers beside them, per block and outside the
 * blocks, and its draft's likewise; the extra terms are then spent (absent), so that nothing
 * counts them twice. The same estimate when there are none. Pure.
 */
export function estimateOnCpu(estimate: FootprintEstimate): FootprintEstimate {
  const draft = estimate.draft === undefined ? undefined : estimateOnCpu(estimate.draft);
  const perBlock = nonNegative(estimate.cpuBufferBytesPerBlock ?? 0);
  const nonBlock = nonNegative(estimate.cpuBufferNonBlockBytes ?? 0);
  if (perBlock === 0 && nonBlock === 0 && draft === estimate.draft) return estimate;
  const { cpuBufferBytesPerBlock: _perBlock, cpuBufferNonBlockBytes: _nonBlock, draft: _draft, ...rest } = estimate;
  const onCpu: FootprintEstimate = { ...rest, weightsBytes: nonNegative(estimate.weightsBytes) + nonBlock + layerCount(estimate.layers ?? 0) * perBlock };
  if (estimate.blockWeightsBytes !== undefined) onCpu.blockWeightsBytes = estimate.blockWeightsBytes + perBlock;
  if (estimate.nonBlockWeightsBytes !== undefined) onCpu.nonBlockWeightsBytes = estimate.nonBlockWeightsBytes + nonBlock;
  if (draft !== undefined) onCpu.draft = draft;
  return onCpu;
}

/** Where a model's memory goes at one level. */
export interface LevelFootprint {
  deviceBytes: number;
  hostBytes: number;
  /** The context the launch passes as `-c`. */
  contextTokens: number;
}

/**
 * The memory a model takes at a level, its draft included. 'full' and 'smaller-context' put
 * everything on the device. 'partial' takes the smaller-context bytes and moves the layers that do
 * not stay (L − N of them for N = partialLayers(L)) to host RAM: with per-block figures, those
 * blocks' weights and KV (what layerCostAt says a block costs), the rest staying on the device;
 * without them, (L − N)/L of all weights and KV. The compute buffer and the draft stay on the
 * device. 'minimal' puts all the smaller-context bytes in host RAM, as does 'partial' when N is 0. So
 * device + host is the smaller-context total at every level below 'full', and the caller checks
 * hostBytes against free RAM (see hostMemoryReason). With per-block figures the device total
 * at a level is layerCostAt's: main + compute + layers × perLayer (+ the draft), so `place`
 * and this function cost a model alike. Negative inputs count as zero. Pure and total: never throws.
 */
export function footprintAt(level: LaunchLevel, estimate: FootprintEstimate): LevelFootprint {
  const contextTokens = contextAt(level, estimate.contextTokens);
  const bytes = bytesAtContext(estimate, contextTokens);
  switch (level) {
    case 'full':
    case 'smaller-context':
      return { deviceBytes: bytes, hostBytes: 0, contextTokens };
    case 'partial': {
      const hostBytes = partialHostBytes(estimate, contextTokens, bytes);
      return { deviceBytes: bytes - hostBytes, hostBytes, contextTokens };
    }
    case 'minimal':
      return { deviceBytes: 0, hostBytes: bytes, contextTokens };
  }
}

/**
 * The estimate as `place`'s LayerCost, at the level's context (the configured one at 'full',
 * smallerContext below): a block costs its weights (the largest block's) and its share of
 * the KV cache, kvBytesPerToken × context / layers, rounded up; the non-block weights go on the
 * main device; every device that holds layers reserves the compute buffer and the engine's
 * runtime, and in a split the compute buffer once more (pipelineComputeBytes). The draft is not in
 * it: `place` adds the draft's footprint to the main device. Undefined when the model cannot
 * be costed layer by layer: no per-block figures (an estimate made without them), or no
 * layer to place (layers unknown, 0 or negative). Negative inputs count as zero. Pure and
 * total: never throws.
 */
export function layerCostAt(level: LaunchLevel, estimate: FootprintEstimate): LayerCost | undefined {
  return layerCostAtContext(estimate, contextAt(level, estimate.contextTokens));
}

function layerCostAtContext(estimate: FootprintEstimate, contextTokens: number): LayerCost | undefined {
  const layers = layerCount(estimate.layers ?? 0);
  if (layers < 1 || estimate.blockWeightsBytes === undefined || estimate.nonBlockWeightsBytes === undefined) return undefined;
  const block = nonNegative(estimate.blockWeightsBytes);
  return {
    layers,
    perLayerBytes: block + Math.ceil((nonNegative(estimate.kvBytesPerToken) * contextTokens) / layers),
    expertBytesPerLayer: Math.min(block, nonNegative(estimate.expertBytesPerBlock ?? 0)),
    mainBytes: nonNegative(estimate.nonBlockWeightsBytes),
    computeBytesPerDevice: nonNegative(estimate.computeBytes) + nonNegative(estimate.runtimeBytes ?? 0),
    pipelineComputeBytes: Math.ceil(nonNegative(estimate.computeBytes) * PIPELINE_COMPUTE_SHARE),
  };
}

/**
 * What a split's pipeline adds to each device's compute buffer, as a share of the estimate's one
 * compute buffer. llama.cpp runs a layer split as a pipeline (`sched copies = 4`), and measured
 * on two Vulkan devices (BENCHMARKS.md §6) each device's compute buffer was 22.3 and 23.3 MiB
 * against 12.3 MiB alone: 10–11 MiB more, against an estimate of 14.95 MiB for one device
 * (already 2.7 MiB high: part of the graph runs on the host). ¾ of the estimate prices both
 * devices within +7 % of what llama.cpp allocated, erring large, as a budget should; a whole
 * second buffer over-priced them by 13–15 %.
 */
const PIPELINE_COMPUTE_SHARE = 0.75;

/** The context a level launches with: the configured one at 'full', smallerContext below. */
function contextAt(level: LaunchLevel, configuredTokens: number): number {
  const configured = nonNegative(Math.floor(configuredTokens));
  return level === 'full' ? configured : smallerContext(configured);
}

function bytesAtContext(estimate: FootprintEstimate, contextTokens: number): number {
  const own = layerBytesAtContext(estimate, contextTokens) + nonNegative(estimate.computeBytes) + nonNegative(estimate.runtimeBytes ?? 0);
  return estimate.draft === undefined ? own : own + bytesAtContext(estimate.draft, contextTokens);
}

/**
 * The weights and the KV cache (which llama.cpp places with each layer): layerCostAt's main +
 * layers × perLayer where the estimate has per-block figures, weights + KV otherwise.
 */
function layerBytesAtContext(estimate: FootprintEstimate, contextTokens: number): number {
  const cost = layerCostAtContext(estimate, contextTokens);
  if (cost !== undefined) return cost.mainBytes + cost.layers * cost.perLayerBytes;
  return nonNegative(estimate.weightsBytes) + nonNegative(estimate.kvBytesPerToken) * contextTokens;
}

/**
 * The host share of a 'partial' launch: the layers that stay off the device. Per block where
 * the estimate says what a block costs; otherwise their proportion of the weights and KV,
 * rounded down so the device share errs large (the device is the budget a wrong guess OOMs).
 */
function partialHostBytes(estimate: FootprintEstimate, contextTokens: number, totalBytes: number): number {
  const layers = layerCount(estimate.layers ?? 0);
  const onDevice = partialLayers(layers);
  if (onDevice === 0) return totalBytes;
  const cost = layerCostAtContext(estimate, contextTokens);
  if (cost !== undefined) return (layers - onDevice) * cost.perLayerBytes;
  return Math.floor((layerBytesAtContext(estimate, contextTokens) * (layers - onDevice)) / layers);
}

/** A layer count as a whole number ≥ 0; an infinite or non-numeric one is unknown (0). */
function layerCount(layers: number): number {
  return Number.isFinite(layers) ? Math.floor(nonNegative(layers)) : 0;
}
