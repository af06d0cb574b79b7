// What a running server's device figure teaches the catalog about its model's own footprint.
//
// The catalog's estimate is the model alone; the engine's runtime on a GPU (CUDA's context,
// 100–550 MiB) is priced beside it, per engine process (core/engine/runtime-overhead.ts). The
// driver's per-process figure holds both. Learning the whole figure as the model's counted the
// runtime twice from the model's first measurement on: seen on the fake 3-GPU box, where a
// figure equal to the estimate raised the estimate by the configured 1 MiB overhead (by the
// 512 MiB prior, or the learned runtime, on a real card). So the runtime is taken off first.
//
// And only a model whole on one GPU teaches: the figures are summed per process, and a split
// pays a compute buffer and a runtime on every device, a partial launch holds only some layers,
// so neither total is the one-device footprint the estimate describes.
//
// Where the figure is llama.cpp's buffer lines instead of the driver's, the runtime was not in
// it: taking it off under-learns, which is safe, as learning only ever raises the estimate.
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';

/**
 * The bytes to learn as the model's own full-level footprint, or null when this measurement
 * teaches nothing about it. Pure.
 */
export function footprintToLearn(
  measurement: { bytes: number; where: 'device' | 'host' },
  server: { level: LaunchLevel; placement: Placement | null },
  options: { gpuMode: boolean; runtimeBytes: number },
): number | null {
  if (!options.gpuMode || measurement.where !== 'device' || server.level !== 'full') return null;
  const at = server.placement;
  if (at === null || at.kind !== 'gpu' || at.devices.length !== 1) return null;
  const own = measurement.bytes - Math.max(0, options.runtimeBytes);
  return own > 0 ? own : null;
}
