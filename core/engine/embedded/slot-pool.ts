// The engine's slots: like llama-server's `-np N`, N requests decode at once, each in its own
// sequence of one shared context; further requests wait in FIFO order.
//
// Every slot counts the tokens it decodes. Those counters are the progress signal the
// supervisor's hang detection reads through /slots and /metrics: /health stays 200 during
// a wedged decode, so only counters that stop moving reveal it.
import type { LlamaCompletion, LlamaContextSequence } from 'node-llama-cpp';

export interface Slot {
  readonly id: number;
  readonly sequence: LlamaContextSequence;
  readonly completion: LlamaCompletion;
  /** Whether a request holds this slot now. */
  processing: boolean;
  /** Id of the request holding (or last holding) the slot; -1 before the first. */
  taskId: number;
  /** Prompt tokens of the current (or last) request. */
  nPrompt: number;
  /** Tokens generated for the current (or last) request: llama-server's n_decoded. */
  nDecoded: number;
}

export interface EngineCounters {
  promptTokensTotal: number;
  tokensPredictedTotal: number;
  requestsTotal: number;
}

export class SlotPool {
  readonly counters: EngineCounters = { promptTokensTotal: 0, tokensPredictedTotal: 0, requestsTotal: 0 };
  private readonly waiting: { grant: (slot: Slot) => void }[] = [];
  private nextTaskId = 0;

  constructor(readonly slots: readonly Slot[]) {}

  get deferred(): number {
    return this.waiting.length;
  }

  get busy(): number {
    return this.slots.filter((s) => s.processing).length;
  }

  /**
   * Waits for a free slot and marks it taken. Blocks while all slots are busy (FIFO).
   * Rejects with the signal's reason if the caller gives up first; not idempotent: every
   * resolved call must be paired with one `release`.
   */
  acquire(signal?: AbortSignal): Promise<Slot> {
    const free = this.slots.find((s) => !s.processing);
    if (free) return Promise.resolve(this.take(free));
    return new Promise((resolve, reject) => {
      const entry = { grant: (slot: Slot) => { signal?.removeEventListener('abort', onAbort); resolve(this.take(slot)); } };
      const onAbort = (): void => {
        const at = this.waiting.indexOf(entry);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal?.reason);
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(entry);
    });
  }

  /** Gives the slot to the next waiting request, or frees it. Never blocks. */
  release(slot: Slot): void {
    slot.processing = false;
    this.waiting.shift()?.grant(slot);
  }

  /** Records prompt tokens about to be evaluated on `slot`. */
  countPrompt(slot: Slot, tokens: number): void {
    slot.nPrompt = tokens;
    this.counters.promptTokensTotal += tokens;
  }

  /** Records tokens generated on `slot`. */
  countDecoded(slot: Slot, tokens: number): void {
    slot.nDecoded += tokens;
    this.counters.tokensPredictedTotal += tokens;
  }

  private take(slot: Slot): Slot {
    slot.processing = true;
    slot.taskId = this.nextTaskId++;
    slot.nPrompt = 0;
    slot.nDecoded = 0;
    this.counters.requestsTotal++;
    return slot;
  }
}
