// A slot's conversation kept across the engine's life (--slot-save-path): saved when the slot
// goes idle, restored into the slot before a prompt that shares more of it than the slot
// itself still holds. The store (which files, budget, identity, disk) is
// core/engine/saved-conversations; this is node-llama-cpp's side of it.
//
// Why save when the slot goes idle rather than at SIGTERM: the supervisor gives a stop 5 s
// before its SIGKILL, and the SIGTERM of an eviction arrives when memory is wanted now; a save
// made while the model was idle anyway costs the eviction nothing, and survives a crash too.
// A save holds the slot's sequence for as long as it writes (BENCHMARKS.md: milliseconds for
// the demo models), so a next request on that slot waits that long at most.
//
// Never fails a request: a save or a restore that goes wrong is logged, and the prompt is
// evaluated as it would have been without it.
import { stat } from 'node:fs/promises';
import { getModuleVersion, type Llama, type LlamaContextSequence, type LlamaModel, type Token } from 'node-llama-cpp';
import { errorMessage } from '../../contracts/error-message.js';
import { SavedConversations, sharedPrefix } from '../saved-conversations/store.js';
import type { EngineOptions } from './cli-args.js';
import type { Slot } from './slot-pool.js';

export interface SavedSlotsSource {
  llama: Llama;
  model: LlamaModel;
  contextPerSlot: number;
}

export class SavedSlots {
  /** Saves in flight, one chain per slot, so a stop can wait for them. */
  private readonly saving = new Map<number, Promise<void>>();

  private constructor(private readonly store: SavedConversations, private readonly log: (line: string) => void) {}

  /** The engine's saved slots, or undefined without --slot-save-path. Blocks for a stat of the model and the store's open. */
  static async open(opts: EngineOptions, engine: SavedSlotsSource, log: (line: string) => void): Promise<SavedSlots | undefined> {
    if (opts.slotSavePath === undefined) return undefined;
    let file;
    try {
      file = await stat(opts.modelPath);
    } catch (error) {
      log(`srv  conversations: not saving conversations: ${errorMessage(error)}`);
      return undefined;
    }
    const { release } = engine.llama.llamaCppRelease;
    const store = await SavedConversations.open({
      root: opts.slotSavePath,
      identity: {
        modelPath: opts.modelPath,
        modelSize: file.size,
        modelMtimeMs: file.mtimeMs,
        modelInode: file.ino,
        engineBuild: `node-llama-cpp ${await getModuleVersion()} llama.cpp ${release} ${engine.llama.gpu || 'cpu'}`,
        contextPerSlot: engine.contextPerSlot,
        kvType: `${opts.cacheTypeK}/${opts.cacheTypeV}`,
      },
      minTokens: opts.slotSaveMinTokens,
      budgetBytes: opts.slotSaveBudgetBytes,
      log,
    });
    if (store.count > 0) log(`srv  conversations: ${store.count} saved conversation(s), ${(store.bytes / 1024 ** 2).toFixed(1)} MiB, under ${opts.slotSavePath}`);
    return new SavedSlots(store, log);
  }

  get count(): number {
    return this.store.count;
  }

  get bytes(): number {
    return this.store.bytes;
  }

  /**
   * Loads into `slot` the saved conversation sharing the longest prefix with `prompt` (the
   * prompt as the sequence will hold it, BOS included), when that is more than the slot
   * shares now. Blocks for the load (a file read). Never throws.
   */
  async restoreInto(slot: Slot, prompt: readonly Token[]): Promise<void> {
    await this.saved(slot);
    const best = this.store.bestFor(prompt);
    if (best === undefined || best.shared <= sharedPrefix(slot.sequence.contextTokens, prompt)) return;
    const started = performance.now();
    const damage = await this.store.damage(best.saved);
    if (damage !== undefined) {
      await this.store.discard(best.saved, damage);
      return;
    }
    try {
      await slot.sequence.loadStateFromFile(best.saved.path, { acceptRisk: true });
      await this.store.touch(best.saved);
      this.log(`srv  conversations: slot ${slot.id}: restored ${best.shared} of ${prompt.length} prompt tokens from ${best.saved.path} in ${Math.round(performance.now() - started)} ms`);
    } catch (error) {
      await slot.sequence.clearHistory().catch(() => undefined);
      await this.store.discard(best.saved, `it could not be restored: ${errorMessage(error)}`);
    }
  }

  /** Resolves once the slot's saves in flight are written: until then they read its sequence. */
  async saved(slot: Slot): Promise<void> {
    await this.saving.get(slot.id);
  }

  /** Saves the slot's conversation when it is worth it, after any save before it on that slot. Returns at once. */
  saveWhenIdle(slot: Slot): void {
    const previous = this.saving.get(slot.id) ?? Promise.resolve();
    const next = previous.then(() => this.save(slot));
    this.saving.set(slot.id, next);
    void next.finally(() => {
      if (this.saving.get(slot.id) === next) this.saving.delete(slot.id);
    });
  }

  /** Waits for the saves in flight, at most `limitMs`: a stop should not lose a save half written, nor wait for ever. */
  async settle(limitMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => { timer = setTimeout(resolve, limitMs); });
    await Promise.race([Promise.all(this.saving.values()), limit]);
    clearTimeout(timer);
  }

  private async save(slot: Slot): Promise<void> {
    // A request that took the slot since will save it when it is done.
    if (slot.processing) return;
    const sequence: LlamaContextSequence = slot.sequence;
    const tokens = sequence.contextTokens;
    if (!this.store.worthSaving(tokens)) return;
    const started = performance.now();
    const saved = await this.store.save(tokens.length, async (path) => {
      await sequence.saveStateToFile(path);
    });
    if (saved) this.log(`srv  conversations: slot ${slot.id}: saved ${saved.tokens.length} tokens (${(saved.bytes / 1024 ** 2).toFixed(1)} MiB) in ${Math.round(performance.now() - started)} ms`);
  }
}
