// Launch levels and what a model costs at each.
//
// One function owns "how much memory does this model take at this level", because the
// scheduler's budget, the llama-server argv (`-c`, `-ngl`) and the dashboard's memory picture
// must all agree: when the estimate and the launch disagree, the launch OOMs on memory the
// plan said was free.
import { nonNegative } from './non-negative.js';

/**
 * How far a launch shrinks a model to make it run, in climbing order.
 * - full: every layer on the device at the configured context.
 * - degraded: every layer on the device at a smaller context (see degradedContext).
 * - minimal: CPU only, nothing on the device, at the degraded context; host RAM pays instead.
 */
export type LaunchLevel = 'full' | 'degraded' | 'minimal';

/** The levels from the largest device footprint to the smallest. */
export const LAUNCH_LEVELS: readonly LaunchLevel[] = ['full', 'degraded', 'minimal'];

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
   * The speculative-decoding draft, loaded in the same process. Its own contextTokens is
   * ignored: llama-server runs the draft at the primary's context.
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
 * everything on the device; 'minimal' puts the same bytes as 'degraded' in host RAM instead,
 * so the caller checks them against free RAM (see hostMemoryReason). Negative inputs count
 * as zero. Pure and total: never throws.
 */
export function footprintAt(level: LaunchLevel, estimate: FootprintEstimate): LevelFootprint {
  const configured = nonNegative(Math.floor(estimate.contextTokens));
  const contextTokens = level === 'full' ? configured : degradedContext(configured);
  const bytes = bytesAtContext(estimate, contextTokens);
  return level === 'minimal'
    ? { deviceBytes: 0, hostBytes: bytes, contextTokens }
    : { deviceBytes: bytes, hostBytes: 0, contextTokens };
}

function bytesAtContext(estimate: FootprintEstimate, contextTokens: number): number {
  const own =
    nonNegative(estimate.weightsBytes) +
    nonNegative(estimate.kvBytesPerToken) * contextTokens +
    nonNegative(estimate.computeBytes);
  return estimate.draft === undefined ? own : own + bytesAtContext(estimate.draft, contextTokens);
}
