// Every generation step decodes all the slots that are generating in one pass over the model,
// in slot order, as llama-server's does (issue 41).
//
// Measured on a Llama-3.2-1B-shaped Q4_K_M, 4 clients, 2 threads: node-llama-cpp 3.21.1 decoded
// 16.5 tokens/s where llama-server decoded ~30, though one client alone ran as fast on both. Two
// causes, each worth about half, both fixed here:
//   1. Order. With a KV cache per sequence (llama.cpp's default, kv_unified off) llama.cpp runs a
//      batch as one pass only when its sequences come in order, and splits [2, 3, 0, 1] into two
//      passes (llama_batch_allocr::split_equal, sequential). node-llama-cpp lays a batch out in the
//      order the slots queued their steps, which is the order their sampling finished: a random
//      one. `strategy` orders every batch by sequence, sharing the batch out as node-llama-cpp's
//      default ("maximumParallelism") does.
//   2. Gathering. node-llama-cpp builds the next batch as soon as the last one's tokens are
//      sampled, before the last slot to be sampled has queued its next step (its generator still
//      has a few awaits to go): 4 slots ran as batches of 3, each slot missing every fourth, 87
//      passes for 64 steps. The batch's after-batch step now waits until every slot of the batch
//      has queued its next step or ended, for at most a quarter of the batch's own time (a slot
//      busy with something else holds the others up by little, and never for long).
// Both read node-llama-cpp's internal queue (`_queuedDecodes`, `_queuedDecodeSequenceIds`, a
// queued step's `afterBatchAction`) of 3.21.1, pinned in package.json: `attach` throws at load
// when that shape is gone, so an upgrade fails loudly instead of silently slow.
import type { BatchItem, CustomBatchingPrioritizationStrategy, LlamaContext, LlamaContextSequence, PrioritizedBatchItem } from 'node-llama-cpp';

/** One step queued in node-llama-cpp's context (its `_decodeTokens` pushes these). */
interface QueuedDecode {
  sequenceId: number;
  tokens: readonly number[];
  afterBatchAction?: (sequenceStateLength: number) => unknown;
}

interface ContextQueue {
  _queuedDecodes: QueuedDecode[];
  _queuedDecodeSequenceIds: Set<number>;
}

/** The least and the most a batch waits for its slots' next steps. */
const MIN_WAIT_MS = 0.5;
const MAX_WAIT_MS = 50;
/** The share of the batch's own time (build, decode, sampling) a batch waits at most. */
const WAIT_SHARE = 0.25;

/**
 * Shares `size` tokens out over `items` as node-llama-cpp's maximumParallelism strategy does
 * (an equal share each, then what is left to the items still short, in order), with the items
 * in the order `rank` gives (unranked ones last, as they came). Pure.
 */
export function shareInOrder(items: readonly BatchItem[], size: number, rank: (item: BatchItem) => number | undefined): PrioritizedBatchItem[] {
  const ordered = items
    .map((item, arrival) => ({ item, arrival, rank: rank(item) ?? Number.POSITIVE_INFINITY }))
    .sort((a, b) => a.rank - b.rank || a.arrival - b.arrival)
    .map((entry) => entry.item);
  let left = size;
  const share = Math.max(1, Math.floor(size / Math.max(1, ordered.length)));
  const shared: PrioritizedBatchItem[] = [];
  for (const item of ordered) {
    if (left === 0) break;
    const processAmount = Math.min(item.tokens.length, share, left);
    shared.push({ item, processAmount });
    left -= processAmount;
  }
  for (const entry of shared) {
    if (left === 0) break;
    const more = Math.min(entry.item.tokens.length - entry.processAmount, left);
    entry.processAmount += more;
    left -= more;
  }
  return shared;
}

/** A batch being decoded: the slots whose generation step it holds, and when it was laid out. */
interface Batch {
  steps: Set<number>;
  builtAt: number;
  gathered?: Promise<void>;
}

export class FullBatches {
  private readonly sequenceOf = new WeakMap<readonly number[], number>();
  private queued: Set<number> | null = null;
  private current: Batch | null = null;
  /** The wait of the batch now gathering: called on every queued step and every ended slot. */
  private recheck: (() => void) | null = null;

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** node-llama-cpp's `batching.itemPrioritizationStrategy` for the context `attach` is then given. */
  readonly strategy: CustomBatchingPrioritizationStrategy = ({ items, size }) => {
    const shared = shareInOrder(items, size, (item) => this.sequenceOf.get(item.tokens));
    const steps = new Set<number>();
    for (const { item, processAmount } of shared) {
      const sequence = this.sequenceOf.get(item.tokens);
      if (sequence !== undefined && item.tokens.length === 1 && processAmount === 1) steps.add(sequence);
    }
    this.current = { steps, builtAt: this.now() };
    return shared;
  };

  /** Hooks `context`'s queue (created with `strategy`). Throws when node-llama-cpp's internals are not as in 3.21.1. */
  attach(context: LlamaContext): void {
    const queue = context as unknown as Partial<ContextQueue>;
    const decodes = queue._queuedDecodes;
    const ids = queue._queuedDecodeSequenceIds;
    if (!Array.isArray(decodes) || !(ids instanceof Set)) {
      throw new Error('node-llama-cpp\'s context has no _queuedDecodes/_queuedDecodeSequenceIds: full-batches.ts needs updating for this version');
    }
    this.queued = ids;
    const push = decodes.push.bind(decodes);
    decodes.push = (...added: QueuedDecode[]): number => {
      for (const decode of added) this.track(decode);
      return push(...added);
    };
    const add = ids.add.bind(ids);
    ids.add = (id: number): Set<number> => {
      add(id);
      this.recheck?.();
      return ids;
    };
  }

  /** `sequence`'s generation has ended: it queues no next step, so no batch waits for it. */
  ended(sequence: LlamaContextSequence): void {
    const id = (sequence as unknown as { _sequenceId?: number })._sequenceId;
    if (id !== undefined) this.current?.steps.delete(id);
    this.recheck?.();
  }

  private track(decode: QueuedDecode): void {
    this.sequenceOf.set(decode.tokens, decode.sequenceId);
    if (decode.tokens.length !== 1) return;
    const own = decode.afterBatchAction;
    decode.afterBatchAction = async (sequenceStateLength) => {
      await own?.(sequenceStateLength);
      await this.gather();
    };
  }

  /** Resolves once every slot of the batch just decoded has queued its next step or ended, or its wait is over. */
  private gather(): Promise<void> {
    const batch = this.current;
    if (batch === null) return Promise.resolve();
    batch.gathered ??= new Promise<void>((resolve) => {
      const queued = this.queued;
      const waitMs = Math.min(MAX_WAIT_MS, Math.max(MIN_WAIT_MS, WAIT_SHARE * (this.now() - batch.builtAt)));
      const done = (): void => {
        clearTimeout(timer);
        if (this.recheck === check) this.recheck = null;
        resolve();
      };
      const check = (): void => {
        for (const id of batch.steps) if (queued?.has(id) === true) batch.steps.delete(id);
        if (batch.steps.size === 0) done();
      };
      const timer = setTimeout(done, waitMs);
      timer.unref?.();
      this.recheck = check;
      check();
    });
    return batch.gathered;
  }
}
