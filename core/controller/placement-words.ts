// A placement in the log's words.
import type { Placement } from '../contracts/plan.js';

/** " on GPU 1", " split over GPUs 0 and 1", " with 10 layers on GPU 0, the rest on the CPU": for the log. */
export function describePlacement(placement: Placement): string {
  const ids = placement.devices.map((d) => d.index);
  switch (placement.kind) {
    case 'gpu':
      return ids.length === 1 && ids[0] !== 0 ? ` on GPU ${ids[0]}` : '';
    case 'split':
    case 'mixed':
      return ` split over GPUs ${ids.join(' and ')} (${placement.devices.map((d) => d.layers).join(' + ')} layers)`;
    case 'partial':
      return placement.cpuMoeLayers > 0
        ? ` on GPU ${ids[0]} with the experts of ${placement.cpuMoeLayers} layers on the CPU`
        : ` with ${placement.devices[0]?.layers ?? 0} layers on GPU ${ids[0]}, the rest on the CPU`;
    case 'cpu':
      return ' on the CPU only';
  }
}
