// The words the tray, the dashboard and the CLI share. The reason lines are checked against
// sentences the real policy writes (place and schedule), so a change in how the policy joins
// its clauses breaks here rather than on a person's screen.
import { describe, expect, it } from 'vitest';
import {
  elapsedWords,
  gpuSummaryWords,
  heldPartWords,
  heldParts,
  limitWords,
  loadProgressWords,
  placementWords,
  reasonLines,
  shorten,
} from '../../../core/contracts/snapshot-words.js';
import { place, type Device, type PlacedDesired } from '../../../core/policy/place.js';
import { schedule } from '../../support/schedule-oracle.js';
import { GiB, MiB, gpu, holder, model } from '../../../renderer/src/test-fixtures/snapshot-builder.js';

describe('loadProgressWords', () => {
  const startedAt = 1_000_000;
  it.each([
    [0.4, 1_234, 'loading 40 %, 1.2 s'],
    [0, 80, 'loading 0 %, 0.0 s'],
    [0.999, 9_999, 'loading 99 %, 9.9 s'], // never 100 % before it is done
    [0.42, 12_500, 'loading 42 %, 12 s'],
    [null, 1_234, 'loading, 1.2 s'],
    [null, 125_000, 'loading, 2 min 5 s'],
    [1.7, 2_000, 'loading 100 %, 2.0 s'],
    [Number.NaN, 2_000, 'loading, 2.0 s'],
  ] as const)('fraction %s after %s ms reads "%s"', (fraction, elapsed, words) => {
    expect(loadProgressWords({ fraction, startedAt, expectedMs: null }, startedAt + elapsed)).toBe(words);
  });

  it.each([
    [null, 2_000, 1_000, 'loading ~50 %, 1.0 s'], // half of the last load's 2 s
    [null, 2_000, 5_000, 'loading ~99 %, 5.0 s'], // slower than last time: not done
    [0.3, 2_000, 1_500, 'loading 30 %, 1.5 s'], // the engine's own fraction wins
    [null, 0, 1_500, 'loading, 1.5 s'], // no basis
  ] as const)('with no fraction from the engine, estimates from the last load (fraction %s, last load %s ms, after %s ms): "%s"', (fraction, expectedMs, elapsed, words) => {
    expect(loadProgressWords({ fraction, startedAt, expectedMs }, startedAt + elapsed)).toBe(words);
  });

  it('never counts backwards when the clock steps back', () => {
    expect(elapsedWords(-5_000)).toBe('0.0 s');
    expect(elapsedWords(3_600_000 + 3 * 60_000)).toBe('1 h 3 min');
    expect(elapsedWords(120_000)).toBe('2 min');
  });
});

describe('placementWords', () => {
  const gpuMode = { mode: 'gpu', layerCount: 48 } as const;
  it.each([
    ['one GPU', { kind: 'gpu', devices: [{ index: 1, layers: 48, bytes: 9 * GiB }], cpuMoeLayers: 0, hostBytes: 0 }, 'on GPU 1'],
    [
      'a same-class split',
      { kind: 'split', devices: [{ index: 0, layers: 20, bytes: 6 * GiB }, { index: 1, layers: 12, bytes: 4 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
      'split over GPU 0 + 1, 20/12 layers',
    ],
    [
      'a mixed split',
      { kind: 'mixed', devices: [{ index: 0, layers: 30, bytes: 6 * GiB }, { index: 2, layers: 18, bytes: 4 * GiB }], cpuMoeLayers: 0, hostBytes: 0 },
      'split over mixed GPUs 0 + 2, 30/18 layers',
    ],
    [
      'partial on one GPU',
      { kind: 'partial', devices: [{ index: 0, layers: 30, bytes: 6 * GiB }], cpuMoeLayers: 0, hostBytes: 6.2 * GiB },
      'partial: 30 of 48 layers on GPU 0, 6.2 GiB in RAM',
    ],
    [
      'partial over two GPUs',
      { kind: 'partial', devices: [{ index: 0, layers: 20, bytes: 6 * GiB }, { index: 1, layers: 10, bytes: 3 * GiB }], cpuMoeLayers: 0, hostBytes: 2 * GiB },
      'partial: 30 of 48 layers on GPU 0 + 1 (20/10), 2 GiB in RAM',
    ],
    [
      'a mixture of experts with its experts on the CPU',
      { kind: 'partial', devices: [{ index: 0, layers: 48, bytes: 10 * GiB }], cpuMoeLayers: 12, hostBytes: 7 * GiB },
      'partial: 48 of 48 layers on GPU 0, the experts of 12 on the CPU, 7 GiB in RAM',
    ],
    ['CPU only', { kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: 6.2 * GiB }, 'on the CPU, 6.2 GiB in RAM'],
  ] as const)('%s', (_name, placement, words) => {
    expect(placementWords({ ...placement, devices: [...placement.devices] }, gpuMode)).toBe(words);
  });

  it('leaves out the total it does not know', () => {
    const partial = { kind: 'partial', devices: [{ index: 0, layers: 30, bytes: GiB }], cpuMoeLayers: 0, hostBytes: GiB } as const;
    expect(placementWords({ ...partial, devices: [...partial.devices] }, { mode: 'gpu', layerCount: null })).toBe('partial: 30 layers on GPU 0, 1 GiB in RAM');
  });

  it("says 'on the CPU' in CPU mode, where the policy's one device is host RAM", () => {
    // What the daemon really sends without a GPU: the one pool as device 0.
    const pool = { kind: 'gpu', devices: [{ index: 0, layers: 0, bytes: 205 * MiB }], cpuMoeLayers: 0, hostBytes: 0 } as const;
    expect(placementWords({ ...pool, devices: [...pool.devices] }, { mode: 'cpu', layerCount: null })).toBe('on the CPU');
  });
});

describe('reasonLines', () => {
  const devices: Device[] = [
    { index: 0, name: 'RTX 4090', deviceClass: 'ada', budgetBytes: 22 * GiB },
    { index: 1, name: 'RTX 3060', deviceClass: 'ampere', budgetBytes: 11 * GiB },
  ];
  const pinned = (modelId: string, footprint: number): PlacedDesired => ({ modelId, footprint, priority: 0, pinned: true });

  it("gives a multi-GPU reason one line per GPU, then each note, then the verdict", () => {
    const plan = place(
      [pinned('qwen-32b', 18 * GiB), pinned('llama-8b', 7 * GiB), { modelId: 'opaque-13b', footprint: 9 * GiB, priority: 0, pinned: false }],
      [],
      devices,
      4 * GiB,
    );
    const reason = plan.unschedulable.find((entry) => entry.modelId === 'opaque-13b')?.reason ?? '';
    expect(reasonLines(reason)).toEqual([
      'needs 9 GiB',
      'GPU 0 RTX 4090: 22 GiB budget, 18 GiB held by pinned qwen-32b (18 GiB), 4 GiB free',
      'GPU 1 RTX 3060: 11 GiB budget, 7 GiB held by pinned llama-8b (7 GiB), 4 GiB free',
      'it cannot be split (its layers are unknown)',
      'it fits only if a pinned model is unpinned',
    ]);
    // Nothing is lost or reworded: the lines are the sentence's own parts.
    expect(reasonLines(reason).every((line) => reason.includes(line))).toBe(true);
  });

  it('splits a one-budget reason into the need and the room', () => {
    const plan = schedule(
      [pinned('demo-chat', 205 * MiB), { modelId: 'demo-tiny', footprint: 108 * MiB, priority: 0, pinned: false }],
      [],
      260 * MiB,
    );
    const reason = plan.unschedulable[0]?.reason ?? '';
    expect(reasonLines(reason)).toEqual([
      'needs 108 MiB',
      '260 MiB budget, 205 MiB held by pinned demo-chat (205 MiB), 55 MiB free',
      'it fits only if a pinned model is unpinned',
    ]);
  });

  it('keeps a sentence without clauses whole', () => {
    expect(reasonLines('needs 30 GiB, more than the whole 24 GiB budget')).toEqual(['needs 30 GiB, more than the whole 24 GiB budget']);
    expect(reasonLines('')).toEqual([]);
  });
});

describe('heldParts and the GPU summary', () => {
  const models = [model('qwen-14b', { draftId: 'qwen-0.5b' }), model('qwen-0.5b'), model('llama-8b'), model('solo-draft-owner', { draftId: 'tiny-draft' })];

  it('puts each draft right after its model, and a draft whose model holds nothing here last', () => {
    const parts = heldParts(
      [holder('model', 'qwen-14b', 9.6 * GiB), holder('draft', 'tiny-draft', 100 * MiB), holder('model', 'llama-8b', 5 * GiB), holder('draft', 'qwen-0.5b', 600 * MiB)],
      models,
    );
    expect(parts.map(heldPartWords)).toEqual([
      'qwen-14b 9.6 GiB',
      'qwen-0.5b 600 MiB (draft of qwen-14b)',
      'llama-8b 5 GiB',
      'tiny-draft 100 MiB (draft of solo-draft-owner)',
    ]);
  });

  it('says what our models hold of a GPU budget and what is free, or how far over it is', () => {
    const card = gpu(0, { totalGiB: 24, othersGiB: 2, holders: [holder('model', 'qwen-14b', 9.6 * GiB), holder('draft', 'qwen-0.5b', 0.4 * GiB)] });
    expect(gpuSummaryWords(card)).toBe('GPU 0 NVIDIA GeForce RTX 4090: 10 GiB of its 21 GiB budget held, 11 GiB free');
    const over = gpu(1, { name: 'RTX 3060', totalGiB: 12, othersGiB: 5, holders: [holder('model', 'llama-8b', 8 * GiB)] });
    expect(gpuSummaryWords(over)).toBe('GPU 1 RTX 3060: 8 GiB of its 6 GiB budget held, 2 GiB over it');
    // The engine's own name for the card, where the daemon knows it: what its log and --device say.
    expect(gpuSummaryWords({ ...over, engineDevice: 'CUDA1' })).toBe('GPU 1 RTX 3060 (CUDA1): 8 GiB of its 6 GiB budget held, 2 GiB over it');
  });
});

describe('limitWords', () => {
  it('says the number once: what the limit does, not the same figure again', () => {
    expect(limitWords({ budgetBytes: 110 * MiB, limitBytes: null })).toBeNull();
    expect(limitWords({ budgetBytes: 110 * MiB, limitBytes: 110 * MiB })).toBe("set by the config's limit");
    expect(limitWords({ budgetBytes: 31 * GiB, limitBytes: 40 * GiB })).toBe("below the config's limit of 40 GiB");
  });
});

describe('shorten', () => {
  it('keeps the first non-empty line, collapses spaces, and cuts at a word', () => {
    expect(shorten('\n  out   of\tmemory \nsecond line', 40)).toBe('out of memory');
    expect(shorten('cudaMalloc failed: out of memory on device 0', 20)).toBe('cudaMalloc failed:…');
    expect(shorten('x'.repeat(30), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});
