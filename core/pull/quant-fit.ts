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
import { PullRefused } from '../contracts/pulls.js';
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

/**
 * The candidate to pull and why. `base` is the estimate of the candidate at `baseIndex` (read from
 * its header). Throws PullRefused when none runs here, naming what the smallest needs.
 */
export function chooseByFit(candidates: readonly QuantCandidate[], base: FootprintEstimate, baseIndex: number, room: MachineRoom): QuantChoice {
  const baseSize = candidates[baseIndex]!.sizeBytes;
  const order = candidates.map((_, i) => i).sort((a, b) => candidates[b]!.sizeBytes - candidates[a]!.sizeBytes);
  const estimateOf = (i: number) => scaled(base, candidates[i]!.sizeBytes / Math.max(1, baseSize));
  const name = (i: number) => `${candidates[i]!.quant ?? 'the model'} (${formatBytes(candidates[i]!.sizeBytes)})`;
  const context = base.contextTokens;

  if (room.mode === 'cpu' || room.gpus.length === 0) {
    const fits = order.filter((i) => footprintAt('minimal', estimateOf(i)).hostBytes <= room.hostBytes);
    if (fits.length === 0) throw tooBig(candidates, order, estimateOf, `no GPU llmtray can use and ${formatBytes(room.hostBytes)} of host RAM free`, 'minimal');
    const i = fits[0]!;
    return { index: i, why: `${name(i)} is the largest quant that fits in host RAM here (no GPU llmtray can use): it needs ${formatBytes(footprintAt('minimal', estimateOf(i)).hostBytes)} of the ${formatBytes(room.hostBytes)} free at ${context} tokens of context` };
  }

  const largestGpu = [...room.gpus].sort((a, b) => b.budgetBytes - a.budgetBytes)[0]!;
  const gpuWords = `GPU ${largestGpu.index} ${largestGpu.name} (${formatBytes(largestGpu.budgetBytes)} for models)`;
  const whole = order.filter((i) => footprintAt('full', estimateOf(i)).deviceBytes <= largestGpu.budgetBytes);
  if (whole.length > 0) {
    const i = whole[0]!;
    const larger = order.slice(0, order.indexOf(i)).at(-1);
    const biggerWords = larger === undefined ? '' : `; ${name(larger)} would need ${formatBytes(footprintAt('full', estimateOf(larger)).deviceBytes)}`;
    return { index: i, why: `${name(i)} is the largest quant that runs whole on ${gpuWords} at ${context} tokens of context: it needs ${formatBytes(footprintAt('full', estimateOf(i)).deviceBytes)}${biggerWords}` };
  }
  const partly = order.filter((i) => {
    const at = footprintAt('partial', estimateOf(i));
    return at.deviceBytes <= largestGpu.budgetBytes && at.hostBytes <= room.hostBytes;
  });
  const smallest = order.at(-1)!;
  if (partly.length === 0) throw tooBig(candidates, order, estimateOf, `${gpuWords} and ${formatBytes(room.hostBytes)} of host RAM free`, 'partial');
  const i = partly[0]!;
  const at = footprintAt('partial', estimateOf(i));
  return {
    index: i,
    why: `no quant runs whole on ${gpuWords}: the smallest, ${name(smallest)}, needs ${formatBytes(footprintAt('full', estimateOf(smallest)).deviceBytes)}; ${name(i)} is the largest that runs partly offloaded: ${formatBytes(at.deviceBytes)} on the GPU, ${formatBytes(at.hostBytes)} in host RAM, at ${at.contextTokens} tokens of context`,
  };
}

function tooBig(candidates: readonly QuantCandidate[], order: readonly number[], estimateOf: (i: number) => FootprintEstimate, machine: string, level: 'partial' | 'minimal'): PullRefused {
  const smallest = order.at(-1)!;
  const at = footprintAt(level, estimateOf(smallest));
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
