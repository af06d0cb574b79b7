// `place`, rule by rule, on small workstations whose numbers can be read off the page.
import { describe, expect, it } from 'vitest';
import { place, type Device, type LayerCost, type PlacedDesired, type PlacedResident } from '../../../core/policy/place.js';

const GiB = 1024 ** 3;

function gpu(index: number, budgetGiB: number, deviceClass = 'rtx-4090', name = deviceClass === 'rtx-4090' ? 'RTX 4090' : 'RTX 3060'): Device {
  return { index, name, deviceClass, budgetBytes: budgetGiB * GiB };
}

/** A dense model of `layers` blocks of 1 GiB each, 1 GiB of output/embeddings, 0.5 GiB of compute per device. */
function layered(layers: number, extra: Partial<LayerCost> = {}): LayerCost {
  return { layers, perLayerBytes: GiB, expertBytesPerLayer: 0, mainBytes: GiB, computeBytesPerDevice: 0.5 * GiB, ...extra };
}

function want(modelId: string, cost: LayerCost | number, extra: Partial<PlacedDesired> = {}): PlacedDesired {
  if (typeof cost === 'number') return { modelId, footprint: cost * GiB, priority: 0, pinned: false, ...extra };
  return { modelId, footprint: cost.mainBytes + cost.computeBytesPerDevice + cost.layers * cost.perLayerBytes, layerCost: cost, priority: 0, pinned: false, ...extra };
}

function onGpu(modelId: string, index: number, gib: number, extra: Partial<PlacedResident> = {}): PlacedResident {
  return { modelId, footprint: gib * GiB, pinned: false, inUse: false, lastUsed: 0, placement: { kind: 'gpu', devices: [{ index, layers: 0, bytes: gib * GiB }], cpuMoeLayers: 0, hostBytes: 0 }, ...extra };
}

describe('place: the fastest placement that fits', () => {
  it('puts a model on one GPU when one holds it: the tightest fit, leaving the roomy one for big models', () => {
    const plan = place([want('m', layered(8))], [], [gpu(0, 24), gpu(1, 12)]);
    expect(plan.launch).toEqual(['m']);
    expect(plan.placements.m).toEqual({ kind: 'gpu', devices: [{ index: 1, layers: 8, bytes: 9.5 * GiB }], cpuMoeLayers: 0, hostBytes: 0 });
  });

  it('splits over GPUs of one class only when no single one holds it, shares in proportion to their room', () => {
    const plan = place([want('big', layered(30))], [], [gpu(0, 20), gpu(1, 16)]);
    const at = plan.placements.big;
    expect(at?.kind).toBe('split');
    // The main device is the last in index order, where llama.cpp puts the output layer: listed first.
    expect(at?.devices.map((d) => d.index)).toEqual([1, 0]);
    expect(at?.devices.reduce((sum, d) => sum + d.layers, 0)).toBe(30);
    // It carries the output tensors; each pays a compute buffer.
    expect(at?.devices[0]).toMatchObject({ index: 1, bytes: 0.5 * GiB + GiB + (at?.devices[0]?.layers ?? 0) * GiB });
    expect(at?.devices[1]).toMatchObject({ index: 0, bytes: 0.5 * GiB + (at?.devices[1]?.layers ?? 0) * GiB });
    for (const d of at?.devices ?? []) expect(d.bytes).toBeLessThanOrEqual((d.index === 0 ? 20 : 16) * GiB);
    // The roomier card takes more layers.
    expect(at?.devices[1]?.layers).toBeGreaterThan(at?.devices[0]?.layers ?? Infinity);
  });

  it("pays a split's pipeline compute buffer on every device it uses, and splits no further than it must", () => {
    const cost = layered(30, { pipelineComputeBytes: 0.5 * GiB });
    const at = place([want('big', cost)], [], [gpu(0, 20), gpu(1, 16), gpu(2, 16)]).placements.big;
    expect(at?.kind).toBe('split');
    expect(at?.devices).toHaveLength(2);
    for (const d of at?.devices ?? []) expect(d.bytes - d.layers * GiB).toBe(GiB + (d === at?.devices[0] ? GiB : 0));
    // Two cards that hold it only without the pipeline's buffer: the split takes a third.
    const tight = place([want('big', cost)], [], [gpu(0, 16.5), gpu(1, 16.2), gpu(2, 16)]).placements.big;
    expect(place([want('big', layered(30))], [], [gpu(0, 16.5), gpu(1, 16.2), gpu(2, 16)]).placements.big?.devices).toHaveLength(2);
    expect(tight?.devices).toHaveLength(3);
  });

  it('splits over the cards that hold it when a nearly full card of higher index would have to carry the output', () => {
    // GPU 2 has 2.5 GiB free, more than GPU 0's 2 GiB, but a split's last card carries the
    // output and the draft besides its compute buffer, which leaves GPU 2 no room for a layer.
    // GPUs 0 and 1 hold it (19 layers with the output on GPU 1, 1 on GPU 0).
    const draft = { modelId: 'draft', footprint: 0.5 * GiB };
    const devices = [gpu(0, 2), gpu(1, 21), gpu(2, 40)];
    const withPinned = (gib: number): PlacedResident[] => [onGpu('pinned', 2, gib, { pinned: true })];
    const plan = place([want('big', layered(20), { draft })], withPinned(37.5), devices);
    expect(plan.launch).toEqual(['big']);
    expect(plan.placements.big).toEqual({
      kind: 'split',
      devices: [
        { index: 1, layers: 19, bytes: 0.5 * GiB + 1.5 * GiB + 19 * GiB },
        { index: 0, layers: 1, bytes: 0.5 * GiB + GiB },
      ],
      cpuMoeLayers: 0,
      hostBytes: 0,
    });
    // GPU 2's last 2.5 GiB taken or not, the same plan: whether it fits does not hang on room it cannot use.
    expect(place([want('big', layered(20), { draft })], withPinned(40), devices)).toEqual(plan);
  });

  it('does not split across GPUs of different classes unless the model allows it, and says so', () => {
    const devices = [gpu(0, 20), gpu(1, 12, 'rtx-3060')];
    const refused = place([want('big', layered(26))], [], devices);
    expect(refused.launch).toEqual([]);
    expect(refused.unschedulable[0]?.reason).toMatch(/^needs 27.5 GiB; GPU 0 RTX 4090: 20 GiB budget, all free; GPU 1 RTX 3060: 12 GiB budget, all free; a split across mixed GPUs is off for this model \(mixedSplit\)/);
    const allowed = place([want('big', layered(26), { mixedSplit: true })], [], devices);
    expect(allowed.placements.big?.kind).toBe('mixed');
  });

  it('never splits a model whose engine cannot be told the shares (oneGpu: the embedded engine), so that what runs is what was priced', () => {
    const devices = [gpu(0, 20), gpu(1, 16)];
    expect(place([want('big', layered(30))], [], devices, 64 * GiB).placements.big?.kind).toBe('split');
    const plan = place([want('big', layered(30), { oneGpu: true, mixedSplit: true })], [], devices, 64 * GiB);
    // As many layers as fit on the roomiest card, the rest in host RAM.
    expect(plan.placements.big).toEqual({ kind: 'partial', devices: [{ index: 0, layers: 18, bytes: 19.5 * GiB }], cpuMoeLayers: 0, hostBytes: 12 * GiB });
    const refused = place([want('big', layered(30), { oneGpu: true })], [], devices);
    expect(refused.unschedulable[0]?.reason).toContain('its engine runs it on one GPU (the embedded engine cannot split a model by shares)');
  });

  it('falls back to part on the CPU, as many layers as fit on the GPU, when host RAM holds the rest', () => {
    const plan = place([want('big', layered(20))], [], [gpu(0, 12)], 64 * GiB);
    // 12 GiB: 1 GiB main + 0.5 GiB compute leaves room for 10 layers of 1 GiB.
    expect(plan.placements.big).toEqual({ kind: 'partial', devices: [{ index: 0, layers: 10, bytes: 11.5 * GiB }], cpuMoeLayers: 0, hostBytes: 10 * GiB });
    // With too little host RAM for the rest, neither part nor all of it fits: left out, and the reason says why.
    const short = place([want('big', layered(20))], [], [gpu(0, 12), gpu(1, 4)], 4 * GiB);
    expect(short.launch).toEqual([]);
    expect(short.unschedulable[0]).toMatchObject({ strict: true, reason: expect.stringMatching(/part on the CPU needs host RAM, 4 GiB free: it does not fit even with nothing else loaded$/) });
  });

  it('leaves a mixture of experts’ expert tensors on the CPU first, keeping every layer (and attention) on the GPU', () => {
    const moe = layered(20, { expertBytesPerLayer: 0.75 * GiB });
    const plan = place([want('moe', moe)], [], [gpu(0, 12)], 64 * GiB);
    // Needs 21.5 GiB; 12 free: 9.5 GiB of experts must go, ⌈9.5 / 0.75⌉ = 13 layers' worth.
    expect(plan.placements.moe).toEqual({ kind: 'partial', devices: [{ index: 0, layers: 20, bytes: 21.5 * GiB - 13 * 0.75 * GiB }], cpuMoeLayers: 13, hostBytes: 13 * 0.75 * GiB });
  });

  it('runs on the CPU only when not even one layer fits a GPU', () => {
    const plan = place([want('m', layered(4))], [], [gpu(0, 1)], 64 * GiB);
    expect(plan.placements.m).toEqual({ kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: 5 * GiB });
  });
});

describe('place: evictions free memory on the GPU that needs it', () => {
  it('places a requested model where there is room rather than evicting an idle one elsewhere', () => {
    const plan = place([want('new', 10, { lastUsed: 2 }), want('idle', 10, { lastUsed: 1 })], [onGpu('idle', 0, 10)], [gpu(0, 12), gpu(1, 12)]);
    expect(plan.evict).toEqual([]);
    expect(plan.placements.new?.devices[0]?.index).toBe(1);
  });

  it('evicts the idle, lower-ranked model on the one GPU that can hold the requested one, before slowing it', () => {
    const plan = place(
      [want('new', layered(10), { lastUsed: 3 }), want('small-idle', 2, { lastUsed: 1 }), want('other', 4, { lastUsed: 2 })],
      [onGpu('small-idle', 0, 2), onGpu('other', 1, 4)],
      [gpu(0, 12), gpu(1, 8)],
      64 * GiB,
    );
    expect(plan.evict).toEqual(['small-idle']);
    expect(plan.placements.new).toMatchObject({ kind: 'gpu', devices: [{ index: 0 }] });
    expect(plan.placements.other).toMatchObject({ devices: [{ index: 1 }] });
  });

  it('never moves or evicts a pinned or busy model, and names what holds each GPU when something is left out', () => {
    const plan = place(
      [want('wants-in', 10)],
      [onGpu('pinned', 0, 20, { pinned: true }), onGpu('busy', 1, 8, { inUse: true })],
      [gpu(0, 24), gpu(1, 12)],
    );
    expect(plan.evict).toEqual([]);
    expect(plan.unschedulable).toEqual([
      {
        modelId: 'wants-in',
        reason:
          'needs 10 GiB; GPU 0 RTX 4090: 24 GiB budget, 20 GiB held by pinned pinned (20 GiB), 4 GiB free; GPU 1 RTX 4090: 12 GiB budget, 8 GiB held by active busy (8 GiB), 4 GiB free; it cannot be split (its layers are unknown)',
        strict: false,
      },
    ]);
  });
});

describe('place: a GPU that is gone (no longer among the devices offered)', () => {
  // GPU 1 fell off the bus: the daemon offers only GPU 0, and the residents still say where they ran.
  const left = [gpu(0, 24)];

  it('moves a pinned model off it: launched on what is left and stopped there, though a pin is never moved otherwise', () => {
    const plan = place([want('pinned', 8, { pinned: true })], [onGpu('pinned', 1, 8, { pinned: true })], left);
    expect(plan.launch).toEqual(['pinned']);
    expect(plan.evict).toEqual(['pinned']);
    expect(plan.placements.pinned).toEqual({ kind: 'gpu', devices: [{ index: 0, layers: 0, bytes: 8 * GiB }], cpuMoeLayers: 0, hostBytes: 0 });
    expect(plan.unschedulable).toEqual([]);
  });

  it('moves a busy model off it, as it would an idle one, and takes its room from an idle model ranked below', () => {
    const plan = place(
      [want('busy', 10, { priority: 5 }), want('idle', 20)],
      [onGpu('busy', 1, 10, { inUse: true }), onGpu('idle', 0, 20)],
      left,
    );
    expect(plan.launch).toEqual(['busy']);
    expect(plan.evict.toSorted()).toEqual(['busy', 'idle']);
    expect(plan.placements.busy).toMatchObject({ kind: 'gpu', devices: [{ index: 0 }] });
    expect(plan.unschedulable.map((u) => u.modelId)).toEqual(['idle']);
  });

  it('moves a pinned model split over it and a card that is left, and keeps a pinned one on the card that is left where it is', () => {
    const split = { kind: 'split' as const, devices: [{ index: 1, layers: 4, bytes: 5.5 * GiB }, { index: 0, layers: 4, bytes: 4.5 * GiB }], cpuMoeLayers: 0, hostBytes: 0 };
    const plan = place(
      [want('split', layered(8), { pinned: true }), want('stays', 4, { pinned: true })],
      [{ ...onGpu('split', 0, 10, { pinned: true }), placement: split }, onGpu('stays', 0, 4, { pinned: true })],
      left,
    );
    expect(plan.launch).toEqual(['split']);
    expect(plan.evict).toEqual(['split']);
    expect(plan.placements.split).toMatchObject({ kind: 'gpu', devices: [{ index: 0, layers: 8 }] });
    expect(plan.placements.stays).toMatchObject({ kind: 'gpu', devices: [{ index: 0 }] });
  });

  it('stops a pinned or busy model on it that is no longer desired, rather than leave it held there', () => {
    const plan = place([], [onGpu('pinned', 1, 8, { pinned: true }), onGpu('busy', 1, 2, { inUse: true }), onGpu('kept', 0, 2, { pinned: true })], left);
    expect(plan.evict.toSorted()).toEqual(['busy', 'pinned']);
  });

  it('is a fixed point once the moved model runs on what is left', () => {
    const first = place([want('pinned', 8, { pinned: true })], [onGpu('pinned', 1, 8, { pinned: true })], left);
    const again = place([want('pinned', 8, { pinned: true })], [{ ...onGpu('pinned', 0, 8, { pinned: true }), placement: first.placements.pinned }], left);
    expect(again.launch).toEqual([]);
    expect(again.evict).toEqual([]);
  });
});
