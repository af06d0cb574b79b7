// Partial offload: as many layers as fit on one GPU, to the exact layer, the rest in host RAM
// (a mixture of experts first leaves its expert tensors on the CPU, --n-cpu-moe).
import { nonNegative } from './non-negative.js';
import { layeredTotal, type Device, type LayerCost } from './place-types.js';
import type { Placement } from '../contracts/plan.js';

/**
 * As much of the model as fits on the roomiest device, the rest in host RAM. A mixture of
 * experts first leaves the expert tensors of as few layers as needed on the CPU (attention
 * stays on the GPU, which is often the fastest way to run one too big for it); then, or for a
 * dense model, whole layers go to the CPU. Null when not even one layer fits on the device, or
 * the host share does not fit the free RAM.
 */
export function partial(devices: readonly Device[], free: (d: Device) => number, cost: LayerCost, draftBytes: number, hostFree: number): Placement | null {
  let device: Device | undefined;
  let room = -Infinity;
  // The roomiest; ties to the lower index (devices come in index order).
  for (const candidate of devices) {
    const its = free(candidate);
    if (its > room) [device, room] = [candidate, its];
  }
  if (device === undefined) return null;
  const perLayer = nonNegative(cost.perLayerBytes);
  const expert = Math.min(perLayer, nonNegative(cost.expertBytesPerLayer));
  const full = layeredTotal(cost, draftBytes, cost.layers);
  if (expert > 0) {
    const cpuMoeLayers = Math.ceil((full - room) / expert);
    if (cpuMoeLayers >= 1 && cpuMoeLayers <= cost.layers && cpuMoeLayers * expert <= hostFree) {
      return { kind: 'partial', devices: [{ index: device.index, layers: cost.layers, bytes: full - cpuMoeLayers * expert }], cpuMoeLayers, hostBytes: cpuMoeLayers * expert };
    }
  }
  const fixed = layeredTotal(cost, draftBytes, 0);
  if (fixed > room) return null;
  const onDevice = perLayer > 0 ? Math.min(cost.layers - 1, Math.floor((room - fixed) / perLayer)) : cost.layers - 1;
  if (onDevice < 1) return null;
  const hostBytes = (cost.layers - onDevice) * perLayer;
  if (hostBytes > hostFree) return null;
  return { kind: 'partial', devices: [{ index: device.index, layers: onDevice, bytes: fixed + onDevice * perLayer }], cpuMoeLayers: 0, hostBytes };
}
