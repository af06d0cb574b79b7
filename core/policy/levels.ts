// Launch levels and what a model costs at each.
//
// One function owns "how much memory does this model take at this level", because the
// scheduler's budget, the llama-server argv (`-c`, `-ngl`) and the dashboard's memory picture
// must all agree: when the estimate and the launch disagree, the launch OOMs on memory the
// plan said was free. The 'partial' split (partialLayers) is shared with the argv for the
// same reason: the `-ngl` it passes is the share of layers the estimate put on the device.
import type { LaunchLevel } from '../contracts/launch-level.js';
import { nonNegative } from './non-negative.js';

/** llama.cpp allocates KV cache in cells; a multiple of 256 keeps every backend's padding happy. */
const CONTEXT_STEP = 256;
/** Below this a chat model cannot hold a system prompt and one exchange, so shrinking further is useless. */
const CONTEXT_FLOOR = 512;

/**
 * The context a 'degraded' launch uses: a quarter of the configured one, rounded down to a
 * multiple of 256, at least 512, and never more than the configured context (a model
 * configured with 300 tokens stays at 300). Why a quarter: the KV cache is the part of the
 * footprint that scales with context, and a quarter frees most of it while leaving a usable
 * window; halving often does not free enough to get past the allocation that failed.
 * Negative or non-numeric input counts as zero.
 */
export function degradedContext(contextTokens: number): number {
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
   * The repeating blocks (transformer layers) a full launch puts on the device: the model's
   * block count, capped by its configured GPU layers. Weights and KV above are the bytes of
   * these layers, which is what lets 'partial' split them by layer. Absent, zero, negative
   * or not finite: unknown, and 'partial' costs what 'minimal' does.
   */
  layers?: number;
  /**
   * The speculative-decoding draft, loaded in the same process. Its own contextTokens is
   * ignored: llama-server runs the draft at the primary's context. So are its layers: a
   * 'partial' launch keeps the draft wholly on the device (it is small, its `-ngld` is
   * unchanged, and it is what keeps the partly offloaded primary fast).
   */
  draft?: FootprintEstimate;
}

/** Where a model's memory goes at one level. */
export interface LevelFootprint {
  deviceBytes: number;
  hostBytes: number;
  /** The context the launch passes as `-c`. */
  contextTokens: number;
}

/**
 * The memory a model takes at a level, its draft included. 'full' and 'degraded' put
 * everything on the device. 'partial' takes the degraded bytes and moves the host share of the
 * layers (weights and KV, (L − N)/L of them for N = partialLayers(L)) to host RAM; the compute
 * buffer and the draft stay on the device. 'minimal' puts all the degraded bytes in host RAM,
 * as does 'partial' when N is 0. So device + host is the degraded total at every level below
 * 'full', and the caller checks hostBytes against free RAM (see hostMemoryReason). Negative
 * inputs count as zero. Pure and total: never throws.
 */
export function footprintAt(level: LaunchLevel, estimate: FootprintEstimate): LevelFootprint {
  const configured = nonNegative(Math.floor(estimate.contextTokens));
  const contextTokens = level === 'full' ? configured : degradedContext(configured);
  const bytes = bytesAtContext(estimate, contextTokens);
  switch (level) {
    case 'full':
    case 'degraded':
      return { deviceBytes: bytes, hostBytes: 0, contextTokens };
    case 'partial': {
      const hostBytes = partialHostBytes(estimate, contextTokens, bytes);
      return { deviceBytes: bytes - hostBytes, hostBytes, contextTokens };
    }
    case 'minimal':
      return { deviceBytes: 0, hostBytes: bytes, contextTokens };
  }
}

function bytesAtContext(estimate: FootprintEstimate, contextTokens: number): number {
  const own = layerBytesAtContext(estimate, contextTokens) + nonNegative(estimate.computeBytes);
  return estimate.draft === undefined ? own : own + bytesAtContext(estimate.draft, contextTokens);
}

/** The bytes that live with the layers: weights and the KV cache, which llama.cpp places with each layer. */
function layerBytesAtContext(estimate: FootprintEstimate, contextTokens: number): number {
  return nonNegative(estimate.weightsBytes) + nonNegative(estimate.kvBytesPerToken) * contextTokens;
}

/**
 * The host share of a 'partial' launch: the layers that stay off the device, their bytes
 * rounded down so the device share errs large (the device is the budget a wrong guess OOMs).
 */
function partialHostBytes(estimate: FootprintEstimate, contextTokens: number, totalBytes: number): number {
  const layers = layerCount(estimate.layers ?? 0);
  const onDevice = partialLayers(layers);
  if (onDevice === 0) return totalBytes;
  return Math.floor((layerBytesAtContext(estimate, contextTokens) * (layers - onDevice)) / layers);
}

/** A layer count as a whole number ≥ 0; an infinite or non-numeric one is unknown (0). */
function layerCount(layers: number): number {
  return Number.isFinite(layers) ? Math.floor(nonNegative(layers)) : 0;
}
