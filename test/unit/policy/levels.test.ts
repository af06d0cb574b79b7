import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { smallerContext, footprintAt, layerCostAt, partialLayers, type FootprintEstimate } from '../../../core/policy/index.js';
import { LAUNCH_LEVELS } from '../../../core/contracts/launch-level.js';
import { atLeast, atMost, equal, same } from '../../support/hot-expect.js';

const KiB = 1024;
const MiB = 1024 ** 2;
const GiB = 1024 ** 3;
const RUNS = { numRuns: 10_000 };

describe('smallerContext', () => {
  it.each([
    [32768, 8192],
    [8192, 2048],
    [5000, 1024], // a quarter is 1250: down to a multiple of 256
    [4096, 1024],
    [2048, 512],
    [1000, 512], // a quarter is 250: raised to the 512 floor
    [300, 300], // the floor never exceeds what was configured
    [0, 0],
    [-4096, 0],
    [Number.NaN, 0],
  ])('%d tokens → %d', (configured, expected) => {
    expect(smallerContext(configured)).toBe(expected);
  });

  it('is never more than configured, at least 512 when that is possible, and a multiple of 256 unless capped', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1 << 20 }), (configured) => {
        const smaller = smallerContext(configured);
        atMost(smaller, configured);
        atLeast(smaller, Math.min(512, configured));
        if (smaller !== configured) same(smaller % 256, 0);
      }),
      RUNS,
    );
  });
});

describe('partialLayers', () => {
  it.each([
    [32, 16],
    [33, 16], // rounded down: the device half is the one a wrong guess OOMs
    [2, 1],
    [1, 0], // one layer cannot be split
    [0, 0], // unknown
    [5.9, 2], // a fractional count is its whole layers
    [-4, 0],
    [Number.NaN, 0],
    [Number.POSITIVE_INFINITY, 0],
  ])('%d layers on the device at full → %d at partial', (layers, expected) => {
    expect(partialLayers(layers)).toBe(expected);
  });
});

describe('footprintAt', () => {
  const draft: FootprintEstimate = { weightsBytes: 500 * MiB, kvBytesPerToken: 16 * KiB, contextTokens: 999, computeBytes: 50 * MiB };
  const model: FootprintEstimate = { weightsBytes: 4 * GiB, kvBytesPerToken: 128 * KiB, contextTokens: 8192, computeBytes: 300 * MiB, layers: 32, draft };

  it('puts weights, KV at the configured context, compute and the draft on the device at full', () => {
    // KV: 128 KiB × 8192 = 1 GiB; the draft's KV at the primary's context: 16 KiB × 8192 = 128 MiB.
    expect(footprintAt('full', model)).toEqual({
      deviceBytes: 4 * GiB + 1 * GiB + 300 * MiB + (500 * MiB + 128 * MiB + 50 * MiB),
      hostBytes: 0,
      contextTokens: 8192,
    });
  });

  it('shrinks only the KV cache at smaller-context, draft included', () => {
    expect(footprintAt('smaller-context', model)).toEqual({
      deviceBytes: 4 * GiB + 256 * MiB + 300 * MiB + (500 * MiB + 32 * MiB + 50 * MiB),
      hostBytes: 0,
      contextTokens: 2048,
    });
  });

  it('moves the smaller-context footprint to host RAM at minimal', () => {
    const smaller = footprintAt('smaller-context', model);
    expect(footprintAt('minimal', model)).toEqual({ deviceBytes: 0, hostBytes: smaller.deviceBytes, contextTokens: 2048 });
  });

  it('moves half of the layers, their weights and KV, to host RAM at partial; compute and the draft stay on the device', () => {
    // Degraded KV: 128 KiB × 2048 = 256 MiB. 16 of 32 layers leave: half of 4 GiB + 256 MiB.
    expect(footprintAt('partial', model)).toEqual({
      deviceBytes: 2 * GiB + 128 * MiB + 300 * MiB + (500 * MiB + 32 * MiB + 50 * MiB),
      hostBytes: 2 * GiB + 128 * MiB,
      contextTokens: 2048,
    });
  });

  it('sends the larger share of an odd layer count to host RAM, in whole bytes', () => {
    const odd = { ...model, layers: 33, draft: undefined };
    const layerBytes = 4 * GiB + 256 * MiB;
    // 16 layers stay, 17 leave.
    expect(footprintAt('partial', odd).hostBytes).toBe(Math.floor((layerBytes * 17) / 33));
    expect(footprintAt('partial', odd).deviceBytes + footprintAt('partial', odd).hostBytes).toBe(footprintAt('smaller-context', odd).deviceBytes);
  });

  it.each([
    ['unknown', undefined],
    ['zero', 0],
    ['one, which cannot be split,', 1],
    ['negative', -3],
  ])('costs partial as minimal when the layer count is %s', (_name, layers) => {
    expect(footprintAt('partial', { ...model, layers })).toEqual(footprintAt('minimal', model));
  });

  it('counts negative inputs as zero', () => {
    const broken: FootprintEstimate = { weightsBytes: -1, kvBytesPerToken: -5, contextTokens: 4096, computeBytes: 10 };
    expect(footprintAt('full', broken)).toEqual({ deviceBytes: 10, hostBytes: 0, contextTokens: 4096 });
    expect(footprintAt('full', { ...broken, kvBytesPerToken: 1, contextTokens: -4096 })).toEqual({ deviceBytes: 10, hostBytes: 0, contextTokens: 0 });
  });

  const bytes = fc.integer({ min: -1000, max: 1 << 30 });
  const estimateArb = (depth: number): fc.Arbitrary<FootprintEstimate> =>
    fc.record(
      {
        weightsBytes: bytes,
        kvBytesPerToken: fc.integer({ min: -10, max: 1 << 20 }),
        contextTokens: fc.integer({ min: -10, max: 1 << 17 }),
        computeBytes: bytes,
        layers: fc.integer({ min: -2, max: 200 }),
        // Per-block figures, present or not, consistent with the weights or not: the arithmetic is total either way.
        blockWeightsBytes: bytes,
        nonBlockWeightsBytes: bytes,
        expertBytesPerBlock: bytes,
        ...(depth > 0 ? { draft: estimateArb(depth - 1) } : {}),
      },
      { requiredKeys: ['weightsBytes', 'kvBytesPerToken', 'contextTokens', 'computeBytes'] },
    );

  it('orders the levels on the device: full ≥ smaller-context ≥ partial ≥ minimal = 0', () => {
    expect(LAUNCH_LEVELS).toEqual(['full', 'smaller-context', 'partial', 'minimal']);
    fc.assert(
      fc.property(estimateArb(2), (estimate) => {
        const [full, smaller, partial, minimal] = LAUNCH_LEVELS.map((level) => footprintAt(level, estimate));
        atLeast(full!.deviceBytes, smaller!.deviceBytes);
        atLeast(smaller!.deviceBytes, partial!.deviceBytes);
        atLeast(partial!.deviceBytes, minimal!.deviceBytes);
        same(minimal!.deviceBytes, 0);
        same(minimal!.hostBytes, smaller!.deviceBytes);
      }),
      RUNS,
    );
  });

  it('moves bytes between device and host below full, never adds or loses any: device + host is the smaller-context total', () => {
    fc.assert(
      fc.property(estimateArb(2), fc.constantFrom(...LAUNCH_LEVELS.slice(1)), (estimate, level) => {
        const at = footprintAt(level, estimate);
        atLeast(at.hostBytes, 0);
        atLeast(at.deviceBytes, 0);
        same(at.deviceBytes + at.hostBytes, footprintAt('smaller-context', estimate).deviceBytes);
        same(at.contextTokens, footprintAt('smaller-context', estimate).contextTokens);
      }),
      RUNS,
    );
  });

  it('without per-block figures, sends between a half and two thirds of the layer bytes to host RAM at partial, the rest and the compute buffer stay', () => {
    fc.assert(
      fc.property(estimateArb(0), (estimate) => {
        fc.pre(partialLayers(estimate.layers ?? 0) > 0 && layerCostAt('partial', estimate) === undefined);
        const { contextTokens, hostBytes, deviceBytes } = footprintAt('partial', estimate);
        const layerBytes = Math.max(0, estimate.weightsBytes) + Math.max(0, estimate.kvBytesPerToken) * contextTokens;
        atLeast(hostBytes, Math.floor(layerBytes / 2));
        atMost(hostBytes, (layerBytes * 2) / 3);
        atLeast(deviceBytes, Math.max(0, estimate.computeBytes));
      }),
      RUNS,
    );
  });

  it('keeps the draft wholly on the device at partial, whatever its own layer count, while any of the primary is there', () => {
    fc.assert(
      fc.property(estimateArb(0), estimateArb(0), (primary, draft) => {
        fc.pre(partialLayers(primary.layers ?? 0) > 0);
        const alone = footprintAt('partial', primary);
        const paired = footprintAt('partial', { ...primary, draft });
        const draftSmaller = footprintAt('smaller-context', { ...draft, contextTokens: primary.contextTokens }).deviceBytes;
        same(paired.deviceBytes - alone.deviceBytes, draftSmaller);
        same(paired.hostBytes, alone.hostBytes);
      }),
      RUNS,
    );
  });

  it('adds the draft at the primary context, at every level', () => {
    fc.assert(
      fc.property(estimateArb(0), estimateArb(1), fc.constantFrom(...LAUNCH_LEVELS), (primary, draft, level) => {
        const alone = footprintAt(level, primary);
        const draftAtPrimaryContext = footprintAt(level, { ...draft, contextTokens: primary.contextTokens });
        const paired = footprintAt(level, { ...primary, draft });
        same(paired.deviceBytes + paired.hostBytes, alone.deviceBytes + alone.hostBytes + draftAtPrimaryContext.deviceBytes + draftAtPrimaryContext.hostBytes);
        same(paired.contextTokens, alone.contextTokens);
      }),
      RUNS,
    );
  });
});

describe('layerCostAt', () => {
  // 32 blocks of 100 MiB (60 MiB of it experts), 500 MiB outside them, 128 KiB of KV per token.
  const moe: FootprintEstimate = {
    weightsBytes: 500 * MiB + 32 * 100 * MiB, kvBytesPerToken: 128 * KiB, contextTokens: 8192, computeBytes: 300 * MiB, layers: 32,
    blockWeightsBytes: 100 * MiB, expertBytesPerBlock: 60 * MiB, nonBlockWeightsBytes: 500 * MiB,
  };

  it("costs a block as its weights and its share of the KV cache at the level's context", () => {
    // KV: 128 KiB × 8192 / 32 = 32 MiB a block at full; at smaller-context (2048 tokens) 8 MiB.
    expect(layerCostAt('full', moe)).toEqual({
      layers: 32, perLayerBytes: 132 * MiB, expertBytesPerLayer: 60 * MiB, mainBytes: 500 * MiB, computeBytesPerDevice: 300 * MiB, pipelineComputeBytes: 225 * MiB,
    });
    expect(layerCostAt('smaller-context', moe)).toMatchObject({ perLayerBytes: 108 * MiB, mainBytes: 500 * MiB });
    expect(layerCostAt('partial', moe)).toEqual(layerCostAt('smaller-context', moe));
  });

  it("adds the engine's runtime to every device's share, once, and not to what a split's pipeline adds", () => {
    const priced = { ...moe, runtimeBytes: 512 * MiB };
    expect(layerCostAt('full', priced)).toMatchObject({ computeBytesPerDevice: 812 * MiB, pipelineComputeBytes: 225 * MiB });
    expect(footprintAt('full', priced).deviceBytes).toBe(footprintAt('full', moe).deviceBytes + 512 * MiB);
    expect(footprintAt('minimal', priced).hostBytes).toBe(footprintAt('minimal', moe).hostBytes + 512 * MiB);
  });

  it('rounds a block\'s KV share up, and never counts more experts than the block holds', () => {
    expect(layerCostAt('full', { ...moe, kvBytesPerToken: 10, contextTokens: 100, layers: 3, expertBytesPerBlock: 200 * MiB })).toMatchObject({
      perLayerBytes: 100 * MiB + 334, // 1000 / 3, up
      expertBytesPerLayer: 100 * MiB,
    });
  });

  it.each<[string, Partial<FootprintEstimate>]>([
    ['no per-block weights', { blockWeightsBytes: undefined }],
    ['no non-block weights', { nonBlockWeightsBytes: undefined }],
    ['unknown layers', { layers: undefined }],
    ['no layers on the device', { layers: 0 }],
    ['negative layers', { layers: -4 }],
  ])('is undefined with %s: such a model is placed whole', (_name, change) => {
    expect(layerCostAt('full', { ...moe, ...change })).toBeUndefined();
  });

  it('moves whole blocks, weights and KV, to host RAM at partial; what is outside the blocks stays on the device', () => {
    // 16 of 32 blocks leave, 108 MiB each at the smaller context.
    expect(footprintAt('partial', moe)).toEqual({ deviceBytes: 500 * MiB + 300 * MiB + 16 * 108 * MiB, hostBytes: 16 * 108 * MiB, contextTokens: 2048 });
  });

  const bytes = fc.integer({ min: -1000, max: 1 << 30 });
  const layered = (depth: number): fc.Arbitrary<FootprintEstimate> =>
    fc.record({
      weightsBytes: bytes, kvBytesPerToken: fc.integer({ min: -10, max: 1 << 20 }), contextTokens: fc.integer({ min: -10, max: 1 << 17 }),
      computeBytes: bytes, layers: fc.integer({ min: 1, max: 200 }), blockWeightsBytes: bytes, nonBlockWeightsBytes: bytes,
      expertBytesPerBlock: bytes, ...(depth > 0 ? { draft: fc.option(layered(depth - 1), { nil: undefined }) } : {}),
    });

  it('is what footprintAt costs: main + compute + layers × perLayer + the draft, at every level on the device', () => {
    fc.assert(
      fc.property(layered(1), fc.constantFrom<'full' | 'smaller-context'>('full', 'smaller-context'), (estimate, level) => {
        const cost = layerCostAt(level, estimate);
        if (cost === undefined) throw new Error('a layered estimate has a layer cost');
        const draft = estimate.draft === undefined ? 0 : footprintAt(level, { ...estimate.draft, contextTokens: estimate.contextTokens }).deviceBytes;
        same(footprintAt(level, estimate).deviceBytes, cost.mainBytes + cost.computeBytesPerDevice + cost.layers * cost.perLayerBytes + draft);
      }),
      RUNS,
    );
  });

  it('is what footprintAt costs at partial: partialLayers(L) blocks on the device, the others in host RAM', () => {
    fc.assert(
      fc.property(layered(1), (estimate) => {
        const cost = layerCostAt('partial', estimate);
        if (cost === undefined) throw new Error('a layered estimate has a layer cost');
        fc.pre(partialLayers(cost.layers) > 0);
        const n = partialLayers(cost.layers);
        const draft = estimate.draft === undefined ? 0 : footprintAt('smaller-context', { ...estimate.draft, contextTokens: estimate.contextTokens }).deviceBytes;
        equal(footprintAt('partial', estimate), {
          deviceBytes: cost.mainBytes + cost.computeBytesPerDevice + n * cost.perLayerBytes + draft,
          hostBytes: (cost.layers - n) * cost.perLayerBytes,
          contextTokens: smallerContext(Math.max(0, estimate.contextTokens)),
        });
      }),
      RUNS,
    );
  });
});
