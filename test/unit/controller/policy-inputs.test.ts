// The mapping from what a pass observed to the policy's inputs: who is desired, at what
// price, and which residents are forced.
import { describe, expect, it } from 'vitest';
import type { ModelDemand, ResidentServer } from '../../../core/controller/effects.js';
import { newRecord, type ModelRecord } from '../../../core/controller/model-record.js';
import { policyInputs } from '../../../core/controller/policy-inputs.js';
import type { RecoveryState } from '../../../core/policy/recover.js';
import type { LaunchLevel } from '../../../core/contracts/launch-level.js';

const GiB = 1024 ** 3;

function demand(modelId: string, extra: Partial<ModelDemand> = {}): ModelDemand {
  return {
    modelId,
    priority: 0,
    pinned: false,
    wanted: true,
    inFlight: 0,
    // 4 GiB of weights + 1 GiB of KV cache at 4096 tokens: 5 GiB full, 4.25 GiB at smaller-context (1024 tokens).
    estimate: { weightsBytes: 4 * GiB, kvBytesPerToken: GiB / 4096, contextTokens: 4096, computeBytes: 0 },
    definitionHash: 'v1',
    ...extra,
  };
}

function inputs(demands: ModelDemand[], failures: Record<string, RecoveryState> = {}, loading: [string, LaunchLevel][] = [], running: ResidentServer[] = []) {
  const records = new Map<string, ModelRecord>();
  for (const d of demands) records.set(d.modelId, { ...newRecord(d.modelId), recovery: failures[d.modelId] ?? { kind: 'none', attempts: 0 } });
  return policyInputs({
    demands: new Map(demands.map((d) => [d.modelId, d])),
    records,
    running,
    loading: new Map(loading.map(([id, level]) => [id, { level }])),
  });
}

describe('policyInputs', () => {
  it("hands place a model's one-GPU engine (oneGpu), and only that model's", () => {
    const { desired } = inputs([demand('embedded', { oneGpu: true }), demand('server')]);
    expect(desired.map((d) => [d.modelId, d.oneGpu])).toEqual([
      ['embedded', true],
      ['server', undefined],
    ]);
  });

  it('prices a model at the level its recovery state asks for', () => {
    const { desired } = inputs([demand('a'), demand('b')], { b: { kind: 'oom', attempts: 1 } });
    expect(desired.map((d) => [d.modelId, d.footprint])).toEqual([
      ['a', 5 * GiB],
      ['b', 4.25 * GiB],
    ]);
  });

  it('leaves out quarantined and unwanted models, keeps pinned ones even when not marked wanted', () => {
    const { desired } = inputs(
      [demand('q'), demand('idle', { wanted: false }), demand('p', { wanted: false, pinned: true })],
      { q: { kind: 'crash', attempts: 5 } },
    );
    expect(desired.map((d) => d.modelId)).toEqual(['p']);
  });

  it('hands a falling-back model’s want to its fallback: pinned, the higher priority, the later use', () => {
    const { desired } = inputs(
      [
        demand('a', { pinned: true, priority: 7, lastUsed: 2_000, fallbackId: 'small' }),
        demand('small', { wanted: true, priority: 1, lastUsed: 1_000 }),
      ],
      { a: { kind: 'oom', attempts: 4 } },
    );
    expect(desired).toEqual([{ modelId: 'small', priority: 7, pinned: true, lastUsed: 2_000, footprint: 5 * GiB }]);
  });

  it('a ladder that says fallback with no fallback configured is quarantine: nothing is desired', () => {
    const { desired } = inputs([demand('a')], { a: { kind: 'oom', attempts: 4 } });
    expect(desired).toEqual([]);
  });

  it('counts its own launch in flight as resident and in use, at the launch level', () => {
    const { resident } = inputs([demand('a', { wanted: false })], {}, [['a', 'smaller-context']]);
    expect(resident).toEqual([{ modelId: 'a', footprint: 4.25 * GiB, pinned: false, inUse: true, lastUsed: 0 }]);
  });

  it('counts a running model as in use while it decodes, and while its turn holds it idle, and only then', () => {
    const server = (modelId: string): ResidentServer => ({ modelId, level: 'full', deviceBytes: 5 * GiB });
    const { resident } = inputs([demand('busy', { inFlight: 2 }), demand('held', { heldForTurn: true }), demand('idle')], {}, [], [server('busy'), server('held'), server('idle')]);
    expect(resident.map((r) => [r.modelId, r.inUse])).toEqual([
      ['busy', true],
      ['held', true],
      ['idle', false],
    ]);
  });

  it('splits a pair into the primary and its draft, as schedule costs them', () => {
    const pair = demand('big', {
      draftId: 'tiny',
      estimate: {
        weightsBytes: 8 * GiB,
        kvBytesPerToken: 0,
        contextTokens: 4096,
        computeBytes: 0,
        draft: { weightsBytes: GiB, kvBytesPerToken: 0, contextTokens: 0, computeBytes: 0 },
      },
    });
    expect(inputs([pair]).desired[0]).toMatchObject({ footprint: 8 * GiB, draft: { modelId: 'tiny', footprint: GiB } });
  });
});
