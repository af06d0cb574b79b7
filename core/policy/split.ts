// A layer split over several GPUs: which devices, which one is main, and each one's share of the layers.
import { compareIds } from './candidates.js';
import { nonNegative } from './non-negative.js';
import type { Device, LayerCost } from './place-types.js';
import type { Placement } from '../contracts/plan.js';

/** Devices grouped by class, each group in device order; groups in class order. */
export function classGroups(devices: readonly Device[]): Device[][] {
  const byClass = new Map<string, Device[]>();
  for (const device of devices) {
    const group = byClass.get(device.deviceClass);
    if (group === undefined) byClass.set(device.deviceClass, [device]);
    else group.push(device);
  }
  return [...byClass.entries()].sort(([a], [b]) => compareIds(a, b)).map(([, group]) => group);
}

/**
 * A layer split over the fewest of `group`'s devices that holds the model, shares in proportion
 * to their room; the last of them in device order holds the output and the draft (the main
 * device). Among the splits over that many devices, the roomiest. Null when none can.
 *
 * Why every device is tried as the main one, not only the last of the k roomiest: the main
 * device needs room for the output and the draft too, and a nearly full device of high index
 * among the roomiest made the split fail where another set of devices held it. Worse, that was
 * not monotonic: once another model filled that device, the next pass found the split, so the
 * plan was not a fixed point (the property test found it). For a given main device and number
 * of devices, the roomiest devices before it are the best company; with room only growing the
 * answer, a split that fits in less room always fits in more.
 */
export function split(tier: 'split' | 'mixed', group: readonly Device[], free: (d: Device) => number, cost: LayerCost, draftBytes: number): Placement | null {
  const perLayer = nonNegative(cost.perLayerBytes);
  const compute = nonNegative(cost.computeBytesPerDevice) + nonNegative(cost.pipelineComputeBytes ?? 0);
  const main = nonNegative(cost.mainBytes) + draftBytes;
  // Even every device of the group together is short: the common case on a full workstation,
  // answered before anything is sorted or allocated.
  let together = -main;
  for (const device of group) together += Math.max(0, free(device) - compute);
  if (together < cost.layers * perLayer) return null;
  // A room below 0 is a device that cannot even take the compute buffer (or the output): no layer.
  const layersIn = (room: number): number => (room < 0 ? 0 : perLayer > 0 ? Math.floor(room / perLayer) : cost.layers);
  // group is in device order: position i is the i-th lowest index. The positions that can hold
  // a layer as a plain member of a split, roomiest first (ties to the lower index): the
  // roomiest before a given main device are the first of these with a lower position.
  const members: number[] = [];
  for (let i = 0; i < group.length; i++) if (layersIn(free(group[i] as Device) - compute) >= 1) members.push(i);
  members.sort((a, b) => free(group[b] as Device) - free(group[a] as Device) || a - b);
  // Each device of a split holds at least one layer.
  for (let k = 2; k <= Math.min(members.length + 1, cost.layers); k++) {
    let bestMain = -1;
    let bestRoom = -Infinity;
    for (let m = k - 1; m < group.length; m++) {
      const mainRoom = free(group[m] as Device) - compute - main;
      let layers = layersIn(mainRoom);
      if (layers < 1) continue;
      let room = mainRoom;
      let company = 0;
      for (let j = 0; j < members.length && company < k - 1; j++) {
        const i = members[j] as number;
        if (i >= m) continue;
        const memberRoom = free(group[i] as Device) - compute;
        layers += layersIn(memberRoom);
        room += memberRoom;
        company++;
      }
      if (company < k - 1 || layers < cost.layers || room <= bestRoom) continue;
      bestMain = m;
      bestRoom = room;
    }
    if (bestMain < 0) continue;
    // The chosen devices in device order: llama.cpp assigns a split's layers by device index and
    // puts the output layer after the last block, on the last device; the draft goes with it here.
    const chosen = members.filter((i) => i < bestMain).slice(0, k - 1);
    chosen.sort((a, b) => a - b);
    chosen.push(bestMain);
    const last = chosen.length - 1;
    const rooms = chosen.map((i, at) => free(group[i] as Device) - compute - (at === last ? main : 0));
    const shares = proportionalShares(cost.layers, rooms, rooms.map(layersIn)) as number[];
    const parts = chosen.map((i, at) => ({ index: (group[i] as Device).index, layers: shares[at] as number, bytes: compute + (at === last ? main : 0) + (shares[at] as number) * perLayer }));
    // The device holding the output (and the draft) is the main one, listed first.
    return { kind: tier, devices: [parts[last] as Placement['devices'][number], ...parts.slice(0, last)], cpuMoeLayers: 0, hostBytes: 0 };
  }
  return null;
}

/**
 * `total` layers over devices: one each first (every device in a split pays a compute buffer, so
 * one holding no layer has no place in it), the rest in proportion to `weights` (largest
 * remainders, ties to the earlier device), never more on a device than its `capacity`. Null when
 * a device cannot take even one, or all together cannot take them all.
 */
function proportionalShares(total: number, weights: readonly number[], capacity: readonly number[]): number[] | null {
  if (capacity.some((c) => c < 1) || total < capacity.length || capacity.reduce((a, b) => a + b, 0) < total) return null;
  const rest = total - capacity.length;
  const weightSum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (weightSum > 0 ? (rest * w) / weightSum : rest / weights.length));
  const shares = exact.map((x, i) => 1 + Math.min(Math.floor(x), (capacity[i] as number) - 1));
  let left = total - shares.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, rest: x - Math.floor(x) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  while (left > 0) {
    for (const { i } of order) {
      if (left === 0) break;
      if ((shares[i] as number) < (capacity[i] as number)) {
        shares[i] = (shares[i] as number) + 1;
        left--;
      }
    }
  }
  return shares;
}
