import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BatchItem, LlamaContext, LlamaContextSequence, Token } from 'node-llama-cpp';
import { FullBatches, shareInOrder } from '../../../core/engine/embedded/runtime/full-batches.js';

const item = (tokens: number): BatchItem => ({ tokens: Array.from({ length: tokens }, (_, i) => (i + 1) as Token), logits: [], evaluationPriority: 5 });

describe('shareInOrder (a batch laid out in slot order, shared out as node-llama-cpp shares it)', () => {
  it('puts generation steps in sequence order, whatever order they were queued in', () => {
    const items = [2, 0, 3, 1].map(() => item(1));
    const rank = new Map(items.map((it, i) => [it, [2, 0, 3, 1][i]]));
    const shared = shareInOrder(items, 512, (it) => rank.get(it));
    expect(shared.map((p) => rank.get(p.item))).toEqual([0, 1, 2, 3]);
    expect(shared.map((p) => p.processAmount)).toEqual([1, 1, 1, 1]);
  });

  it('gives every item an equal share of a full batch first, then the rest in order', () => {
    const [prompt, step, other] = [item(10), item(1), item(6)] as [BatchItem, BatchItem, BatchItem];
    const rank = new Map([[prompt, 1], [step, 0], [other, 2]]);
    const shared = shareInOrder([prompt, step, other], 9, (it) => rank.get(it));
    // A share of 3 each: the step takes 1, the prompt 3, the other 3; the 2 left go to the prompt.
    expect(shared.map((p) => [rank.get(p.item), p.processAmount])).toEqual([[0, 1], [1, 5], [2, 3]]);
  });

  it('keeps items it cannot rank after the ranked ones, in their order of arrival', () => {
    const [a, b, c] = [item(1), item(1), item(1)] as [BatchItem, BatchItem, BatchItem];
    const shared = shareInOrder([a, b, c], 512, (it) => (it === c ? 0 : undefined));
    expect(shared.map((p) => p.item)).toEqual([c, a, b]);
  });
});

/** node-llama-cpp 3.21.1's queue, as LlamaContext holds it, and a step as a sequence queues it. */
function fakeContext() {
  const context = { _queuedDecodes: [] as { sequenceId: number; tokens: number[]; afterBatchAction?: (n: number) => unknown }[], _queuedDecodeSequenceIds: new Set<number>() };
  const queue = (sequenceId: number, ownAction?: () => void) => {
    const tokens = [7];
    context._queuedDecodes.push({ sequenceId, tokens, afterBatchAction: ownAction });
    context._queuedDecodeSequenceIds.add(sequenceId);
    return tokens;
  };
  return { context, queue };
}

/** What node-llama-cpp's dispatch loop does with the queue: lays a batch out with the strategy, dequeues what it took, and after the decode runs each step's after-batch action in turn. */
async function decodeOneBatch(batches: FullBatches, context: ReturnType<typeof fakeContext>['context'], decoding: () => void): Promise<void> {
  const taken = [...context._queuedDecodes];
  batches.strategy({ items: taken.map((d) => ({ tokens: d.tokens as Token[], logits: [], evaluationPriority: 5 })), size: 512 });
  decoding();
  context._queuedDecodes.length = 0;
  for (const d of taken) context._queuedDecodeSequenceIds.delete(d.sequenceId);
  for (const d of taken) await d.afterBatchAction?.(1);
}

const sequence = (id: number) => ({ _sequenceId: id }) as unknown as LlamaContextSequence;

describe('FullBatches (the next batch waits for every generating slot of the last one)', () => {
  let clock = 0;
  /** The decode of a batch, as the FullBatches' clock sees it. */
  const takes = (ms: number) => () => { clock += ms; };
  beforeEach(() => {
    vi.useFakeTimers();
    clock = 0;
  });
  afterEach(() => vi.useRealTimers());

  function attached() {
    const fake = fakeContext();
    const batches = new FullBatches(() => clock);
    batches.attach(fake.context as unknown as LlamaContext);
    return { batches, ...fake };
  }

  it('holds the loop until all four slots have queued their next step, and runs their own after-batch actions first', async () => {
    const { batches, context, queue } = attached();
    const own = vi.fn();
    for (const id of [0, 1, 2, 3]) queue(id, own);
    let passed = false;
    const loop = decodeOneBatch(batches, context, takes(100)).then(() => { passed = true; });
    await vi.advanceTimersByTimeAsync(0);
    expect(own).toHaveBeenCalledTimes(1);
    for (const id of [0, 1, 2]) queue(id);
    await vi.advanceTimersByTimeAsync(0);
    expect(passed).toBe(false);
    queue(3);
    await vi.advanceTimersByTimeAsync(0);
    await loop;
    expect(passed).toBe(true);
    expect(own).toHaveBeenCalledTimes(4);
  });

  it('stops waiting for a slot whose request ended', async () => {
    const { batches, context, queue } = attached();
    for (const id of [0, 1]) queue(id);
    let passed = false;
    const loop = decodeOneBatch(batches, context, takes(100)).then(() => { passed = true; });
    queue(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(passed).toBe(false);
    batches.ended(sequence(1));
    await loop;
    expect(passed).toBe(true);
  });

  it('waits a quarter of the batch\'s own time at most for a slot that does neither', async () => {
    const { batches, context, queue } = attached();
    for (const id of [0, 1]) queue(id);
    let passed = false;
    // The batch took 40 ms from its layout to its after-batch step: a wait of 10 at most.
    const loop = decodeOneBatch(batches, context, takes(40)).then(() => { passed = true; });
    queue(0);
    await vi.advanceTimersByTimeAsync(9);
    expect(passed).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await loop;
    expect(passed).toBe(true);
  });

  it('does not wait after a batch that held no generation step (a prompt alone)', async () => {
    const { batches, context } = attached();
    context._queuedDecodes.push({ sequenceId: 0, tokens: [1, 2, 3] });
    context._queuedDecodeSequenceIds.add(0);
    await decodeOneBatch(batches, context, takes(100));
  });

  it('refuses a context without node-llama-cpp 3.21.1\'s queue, naming the file to update', () => {
    expect(() => new FullBatches().attach({} as LlamaContext)).toThrow(/full-batches\.ts needs updating/);
  });
});
