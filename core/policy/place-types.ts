// The shapes `place` works in: a GPU as a budget, a model's cost by layers, the desired and
// running models with where they are, and the plan. The public words of place.ts, re-exported there.
import { nonNegative } from './non-negative.js';
import type { Desired, Plan, Resident } from './plan-types.js';
import type { Placement } from '../contracts/plan.js';

/** One GPU as a budget. */
export interface Device {
  /** The engine's device index (what `-dev`, `--main-gpu` and `--tensor-split` positions name). */
  index: number;
  /** For reasons: "RTX 4090". */
  name: string;
  /** Devices of one class (same make and model) may share a layer split; others only where a model allows mixed splits. */
  deviceClass: string;
  /** What our models may hold on it: its total less what other programs use and the reserve, bytes. */
  budgetBytes: number;
}

/** How a model's footprint divides into layers, so that any split and any `-ngl N` can be costed. */
export interface LayerCost {
  /** Repeating blocks that may sit on a device (llama.cpp's block count). */
  layers: number;
  /** One block: its weights and its KV cache at the launch context, bytes. */
  perLayerBytes: number;
  /** Of perLayerBytes, the expert tensors a mixture of experts may leave on the CPU (0 for a dense model). */
  expertBytesPerLayer: number;
  /** What goes on the main device whatever the split: the output and embedding tensors, a projector, bytes. */
  mainBytes: number;
  /** The compute buffer each device that holds layers reserves, and the engine's runtime there, bytes. */
  computeBytesPerDevice: number;
  /**
   * What each device of a split reserves on top, bytes: llama.cpp runs a layer split over
   * several devices as a pipeline (pipeline parallelism), which keeps a compute buffer per stage
   * in flight; measured 1.8–1.9× one device's compute buffer per device (BENCHMARKS §6), so a
   * split pays it once more. Absent: 0.
   */
  pipelineComputeBytes?: number;
}

/** A desired model as `place` sees it: `schedule`'s, with what it takes to split it. */
export interface PlacedDesired extends Desired {
  /** Absent: one indivisible footprint (plus draft) that goes on one device whole. */
  layerCost?: LayerCost;
  /** Its config allows a layer split across GPUs of different classes (slower, and not every build handles it well). */
  mixedSplit?: boolean;
  /** Its engine cannot be told a split's shares (node-llama-cpp has no tensorSplit): one GPU, part on the CPU, or the CPU, never a split. */
  oneGpu?: boolean;
}

/** A running model server and where it is. */
export interface PlacedResident extends Resident {
  /** Absent: all of it on the first device (the one-device case). */
  placement?: Placement;
}

export interface PlacePlan extends Plan {
  /** Where every model kept or launched is (or will be): the argv of each launch comes from here. */
  placements: Record<string, Placement>;
}

/** A whole model on one device with `layers` of its blocks there: main + draft + compute + blocks. */
export function layeredTotal(cost: LayerCost, draftBytes: number, layers: number): number {
  return nonNegative(cost.mainBytes) + draftBytes + nonNegative(cost.computeBytesPerDevice) + layers * nonNegative(cost.perLayerBytes);
}
