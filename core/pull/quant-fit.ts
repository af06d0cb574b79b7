// Which quant to pull when none is named: the best that runs on this machine (DESIGN.md, "Model
// downloads"): the largest that runs whole on a GPU at the model's default context, else the
// largest that runs partly offloaded (some layers in host RAM), else, without a GPU, the largest
// that fits in host RAM. Costed as the daemon costs a model it runs (core/policy/levels.ts'
// footprintAt), against the budget it schedules on. Pure.
//
// One header is read for all of a repo's quants (remote-gguf.ts): they are one model, so the
// layers, the context and the KV cache are the same, and only the weights differ, which each
// quant's file size says. So each candidate's estimate is the read one with its weights scaled by
// the sizes. Why not read every quant's header: a repo holds twenty of them, each header a few MB.
import { formatBytes } from '../contracts/format-bytes.js';
import { PullRefused } from '../contracts/hub/pulls.js';
import { footprintAt, type FootprintEstimate } from '../policy/levels.js';

/** What the machine offers a model now, from the daemon's live budget. */
export interface MachineRoom {
  mode: 'gpu' | 'cpu' | 'unified';
  /** Each GPU's budget for llmtray's models (its total less other programs and the reserve); empty without one. */
  gpus: { index: number; name: string; budgetBytes: number }[];
  /** Host RAM free now. */
  hostBytes: number;
}

export interface QuantCandidate {
  /** The quant as the file's name writes it; undefined for a name that holds none. */
  quant: string | undefined;
  /** Every part together. */
  sizeBytes: number;
}

export interface QuantChoice {
  /** Index into the candidates. */
  index: number;
  /** Why this one, in a sentence with the numbers. */
  why: string;
}

/** How one quant would run here, as the daemon would place it. */
export type Fit =
  | { kind: 'whole'; gpu: number; deviceBytes: number; contextTokens: number }
  | { kind: 'partial'; gpu: number; deviceBytes: number; hostBytes: number; contextTokens: number }
  | { kind: 'cpu'; hostBytes: number; contextTokens: number }
  | { kind: 'too_big'; words: string };

/**
 * Where a model with this estimate would run on this machine: whole on the GPU with the largest
 * budget at its context; else partly offloaded; else, without a GPU, in host RAM; else too big.
 */
export function fitOf(estimate: FootprintEstimate, room: MachineRoom): Fit {
  if (room.mode === 'cpu' || room.gpus.length === 0) {
    const at = footprintAt('minimal', estimate);
    if (at.hostBytes <= room.hostBytes) return { kind: 'cpu', hostBytes: at.hostBytes, contextTokens: at.contextTokens };
    return { kind: 'too_big', words: `needs ${formatBytes(at.hostBytes)} of host RAM; ${formatBytes(room.hostBytes)} is free and there is no GPU llmtray can use` };
  }
  const gpu = [...room.gpus].sort((a, b) => b.budgetBytes - a.budgetBytes)[0]!;
  const full = footprintAt('full', estimate);
  if (full.deviceBytes <= gpu.budgetBytes) return { kind: 'whole', gpu: gpu.index, deviceBytes: full.deviceBytes, contextTokens: full.contextTokens };
  const partial = footprintAt('partial', estimate);
  if (partial.deviceBytes <= gpu.budgetBytes && partial.hostBytes <= room.hostBytes) {
    return { kind: 'partial', gpu: gpu.index, deviceBytes: partial.deviceBytes, hostBytes: partial.hostBytes, contextTokens: partial.contextTokens };
  }
  return { kind: 'too_big', words: `needs ${formatBytes(full.deviceBytes)} whole, or ${formatBytes(partial.deviceBytes)} on GPU ${gpu.index} and ${formatBytes(partial.hostBytes)} of host RAM partly offloaded; GPU ${gpu.index} offers ${formatBytes(gpu.budgetBytes)} and ${formatBytes(room.hostBytes)} of host RAM is free` };
}

/** A fit in a few words, for a list of quants: "whole on GPU 0 at 8192 tokens (9.5 GiB)". */
export function fitWords(fit: Fit): string {
  switch (fit.kind) {
    case 'whole':
      return `whole on GPU ${fit.gpu} at ${fit.contextTokens} tokens (${formatBytes(fit.deviceBytes)})`;
    case 'partial':
      return `partly in host RAM: ${formatBytes(fit.deviceBytes)} on GPU ${fit.gpu}, ${formatBytes(fit.hostBytes)} in RAM, at ${fit.contextTokens} tokens`;
    case 'cpu':
      return `CPU only, ${formatBytes(fit.hostBytes)} of host RAM at ${fit.contextTokens} tokens`;
    case 'too_big':
      return `too big here: it ${fit.words}`;
  }
}

/** Each candidate's estimate: `base` (the candidate at `baseIndex`'s) with the weights scaled by the file sizes. */
export function estimatesOf(candidates: readonly QuantCandidate[], base: FootprintEstimate, baseIndex: number): FootprintEstimate[] {
  const baseSize = Math.max(1, candidates[baseIndex]!.sizeBytes);
  return candidates.map((c) => scaled(base, c.sizeBytes / baseSize));
}

/**
 * The candidate to pull and why. `base` is the estimate of the candidate at `baseIndex` (read from
 * its header). Throws PullRefused when none runs here, naming what the smallest needs.
 */
export function chooseByFit(candidates: readonly QuantCandidate[], base: FootprintEstimate, baseIndex: number, room: MachineRoom): QuantChoice {
  const estimates = estimatesOf(candidates, base, baseIndex);
  const order = candidates.map((_, i) => i).sort((a, b) => candidates[b]!.sizeBytes - candidates[a]!.sizeBytes);
  const fits = estimates.map((estimate) => fitOf(estimate, room));
  const name = (i: number) => `${candidates[i]!.quant ?? 'the model'} (${formatBytes(candidates[i]!.sizeBytes)})`;
  const context = base.contextTokens;
  const smallest = order.at(-1)!;

  if (room.mode === 'cpu' || room.gpus.length === 0) {
    const i = order.find((j) => fits[j]!.kind === 'cpu');
    if (i === undefined) throw tooBig(candidates, smallest, estimates[smallest]!, `no GPU llmtray can use and ${formatBytes(room.hostBytes)} of host RAM free`, 'minimal');
    return { index: i, why: `${name(i)} is the largest quant that fits in host RAM here (no GPU llmtray can use): it needs ${formatBytes((fits[i] as Extract<Fit, { kind: 'cpu' }>).hostBytes)} of the ${formatBytes(room.hostBytes)} free at ${context} tokens of context` };
  }

  const largestGpu = [...room.gpus].sort((a, b) => b.budgetBytes - a.budgetBytes)[0]!;
  const gpuWords = `GPU ${largestGpu.index} ${largestGpu.name} (${formatBytes(largestGpu.budgetBytes)} for models)`;
  const whole = order.find((j) => fits[j]!.kind === 'whole');
  if (whole !== undefined) {
    const larger = order.slice(0, order.indexOf(whole)).at(-1);
    const biggerWords = larger === undefined ? '' : `; ${name(larger)} would need ${formatBytes(footprintAt('full', estimates[larger]!).deviceBytes)}`;
    return { index: whole, why: `${name(whole)} is the largest quant that runs whole on ${gpuWords} at ${context} tokens of context: it needs ${formatBytes(footprintAt('full', estimates[whole]!).deviceBytes)}${biggerWords}` };
  }
  const partly = order.find((j) => fits[j]!.kind === 'partial');
  if (partly === undefined) throw tooBig(candidates, smallest, estimates[smallest]!, `${gpuWords} and ${formatBytes(room.hostBytes)} of host RAM free`, 'partial');
  const at = fits[partly] as Extract<Fit, { kind: 'partial' }>;
  return {
    index: partly,
    why: `no quant runs whole on ${gpuWords}: the smallest, ${name(smallest)}, needs ${formatBytes(footprintAt('full', estimates[smallest]!).deviceBytes)}; ${name(partly)} is the largest that runs partly offloaded: ${formatBytes(at.deviceBytes)} on the GPU, ${formatBytes(at.hostBytes)} in host RAM, at ${at.contextTokens} tokens of context`,
  };
}

function tooBig(candidates: readonly QuantCandidate[], smallest: number, estimate: FootprintEstimate, machine: string, level: 'partial' | 'minimal'): PullRefused {
  const at = footprintAt(level, estimate);
  const needs = level === 'minimal' ? `${formatBytes(at.hostBytes)} of host RAM` : `${formatBytes(at.deviceBytes)} on the GPU and ${formatBytes(at.hostBytes)} of host RAM`;
  return new PullRefused(507, 'too_big_here', `No quant of this model runs here: the smallest, ${candidates[smallest]!.quant ?? 'the model'} (${formatBytes(candidates[smallest]!.sizeBytes)}), needs ${needs}; this machine has ${machine}. Name a quant to pull it anyway (hf.co/OWNER/REPO:QUANT), or pick a smaller model.`);
}

/** The estimate with its weights scaled by `factor` (another quant of the same model). */
function scaled(estimate: FootprintEstimate, factor: number): FootprintEstimate {
  const scale = (bytes: number | undefined) => (bytes === undefined ? undefined : Math.round(bytes * factor));
  const out: FootprintEstimate = { ...estimate, weightsBytes: scale(estimate.weightsBytes)! };
  if (estimate.blockWeightsBytes !== undefined) out.blockWeightsBytes = scale(estimate.blockWeightsBytes)!;
  if (estimate.nonBlockWeightsBytes !== undefined) out.nonBlockWeightsBytes = scale(estimate.nonBlockWeightsBytes)!;
  if (estimate.expertBytesPerBlock !== undefined) out.expertBytesPerBlock = scale(estimate.expertBytesPerBlock)!;
  return out;
}
