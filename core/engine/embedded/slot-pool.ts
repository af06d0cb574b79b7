// The engine's slots: like llama-server's `-np N`, N requests decode at once, each in its own
// sequence of one shared context; further requests wait in FIFO order.
//
// Every slot counts the prompt tokens it evaluates and the tokens it generates. Those counters
// are the progress signal the supervisor's hang detection reads through /slots and /metrics:
// /health stays 200 during a wedged decode, so only counters that stop moving reveal it, and
// a long prompt, which generates nothing for seconds, must still show its counter moving.
import type { LlamaCompletion, LlamaContextSequence, TokenMeterState } from 'node-llama-cpp';

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
  /** The sequence's token meter when the current (or last) request took the slot. */
  meterAtTake: TokenMeterState;
}

/**
 * Prompt tokens evaluated so far for the slot's current (or last) request: llama-server's
 * n_prompt_tokens_processed. A prefix still in the slot's cache from the previous request is
 * not evaluated again and not counted, as in llama-server.
 *
 * Read from node-llama-cpp's token meter rather than counted here because the meter is the
 * only thing that moves while one long prompt is evaluated: generateCompletion hands the whole
 * prompt to the context, which splits it into batches internally and reports nothing until
 * the first token. The meter counts a batch's tokens when the batch is submitted, so the value
 * includes the batch being decoded now; llama-server counts a batch once decoded, one batch
 * behind. Either way it moves once per batch, which is what hang detection needs. The meter
 * counts a token as "output" when logits are requested for it; the first such token of a
 * request is the prompt's last (its logits give the first generated token), every later one
 * is generated or drafted.
 */
export function promptTokensProcessed(slot: Slot): number {
  const meter = slot.sequence.tokenMeter;
  const input = meter.usedInputTokens - slot.meterAtTake.usedInputTokens;
  const output = meter.usedOutputTokens - slot.meterAtTake.usedOutputTokens;
  return input + Math.min(output, 1);
}

export interface EngineCounters {
  tokensPredictedTotal: number;
  requestsTotal: number;
}

export class SlotPool {
  readonly counters: EngineCounters = { tokensPredictedTotal: 0, requestsTotal: 0 };
  /** Prompt tokens evaluated for requests that have released their slot. */
  private promptTokensOfReleased = 0;
  private readonly waiting: { grant: (slot: Slot) => void }[] = [];
  private nextTaskId = 0;

  /** `onRelease`: told of every slot whose request has ended, before the slot goes to the next. */
  constructor(readonly slots: readonly Slot[], private readonly onRelease: (slot: Slot) => void = () => {}) {}

  get deferred(): number {
    return this.waiting.length;
  }

  get busy(): number {
    return this.slots.filter((s) => s.processing).length;
  }

  /**
   * Prompt tokens evaluated by all requests so far, including those still being evaluated:
   * llama-server's prompt_tokens_total, which also leaves out cached prefixes. Live rather
   * than added at the end of each prompt, so /metrics moves during a long prompt too.
   */
  get promptTokensTotal(): number {
    return this.slots.filter((s) => s.processing).reduce((sum, s) => sum + promptTokensProcessed(s), this.promptTokensOfReleased);
  }

  /**
   * Waits for a free slot and marks it taken for a prompt of `promptTokens` tokens. Blocks
   * while all slots are busy (FIFO). Rejects with the signal's reason if the caller gives up
   * first; not idempotent: every resolved call must be paired with one `release`.
   */
  acquire(promptTokens: number, signal?: AbortSignal): Promise<Slot> {
    const free = this.slots.find((s) => !s.processing);
    if (free) return Promise.resolve(this.take(free, promptTokens));
    return new Promise((resolve, reject) => {
      const entry = { grant: (slot: Slot) => { signal?.removeEventListener('abort', onAbort); resolve(this.take(slot, promptTokens)); } };
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
    this.promptTokensOfReleased += promptTokensProcessed(slot);
    this.onRelease(slot);
    this.waiting.shift()?.grant(slot);
  }

  /** Records tokens generated on `slot`. */
  countDecoded(slot: Slot, tokens: number): void {
    slot.nDecoded += tokens;
    this.counters.tokensPredictedTotal += tokens;
  }

  private take(slot: Slot, promptTokens: number): Slot {
    slot.processing = true;
    slot.taskId = this.nextTaskId++;
    slot.nPrompt = promptTokens;
    slot.nDecoded = 0;
    slot.meterAtTake = slot.sequence.tokenMeter.getState();
    this.counters.requestsTotal++;
    return slot;
  }
}
