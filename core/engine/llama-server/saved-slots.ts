// A llama-server's conversations kept across its eviction: once the server has been idle a
// moment (IDLE_SAVE_DELAY_MS after its last request), each idle slot holding more than minTokens
// that changed since its last save is written with `POST /slots/{id}?action=save`, and before
// the supervisor stops it, what changed since is written the same way — so an eviction that
// comes when the server has been idle, as evictions do, waits for no save (a save is a file of
// the KV cache: hundreds of MiB for a real model, seconds, in the server's own task loop);
// after a relaunch, a chat prompt that shares a saved prefix has that state loaded with
// `POST /slots/{id}?action=restore` before it is forwarded, so llama-server evaluates only
// the rest (and counts the prefix in `cached_tokens`). The store (which files, identity,
// budget, disk, checksum) is core/engine/saved-conversations; this is llama-server's side.
//
// Why a staging folder: llama-server reads and writes only plain file names under its
// `--slot-save-path`, fixed at launch, while the store's folder is named by an identity that
// includes the context per slot, known only from a running server's GET /slots. So the server
// is given ROOT/.llama-server, a save is moved from there into the store, and a restore is a
// hard link there for the moment of the load.
//
// Never fails a request or an eviction: every step is bounded, and a save or restore that goes
// wrong is logged (the server's own log, as llama-server's lines are) and skipped.
import { randomBytes } from 'node:crypto';
import { copyFile, link, mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../../contracts/error-message.js';
import { llamaServerStagingDir } from '../saved-conversations/on-disk.js';
import { DEFAULT_BUDGET_BYTES, DEFAULT_MIN_TOKENS, SavedConversations } from '../saved-conversations/store.js';
import { engineGet, enginePost } from '../supervisor/engine-get.js';

export interface LlamaServerSlotsOptions {
  /** The data dir's conversations folder (LaunchSpec.savedConversations.dir). */
  root: string;
  modelPath: string;
  /** The build's `version:` line, part of the identity: another build may read a state otherwise. */
  buildVersion: string | null;
  /** The server's own arguments, where `-ctk`/`-ctv` name the KV types (f16 otherwise). */
  argv: readonly string[];
  port: number;
  apiKey: string;
  log: (line: string) => void;
  minTokens?: number;
  budgetBytes?: number;
}

interface SlotLook {
  id: number;
  n_ctx: number;
  is_processing: boolean;
  n_prompt_tokens?: number;
  /** The slot's last task: with n_prompt_tokens, what it holds (a save is no task of the slot's, so it leaves this as it was). */
  id_task?: number;
}

/** How long a server has been without a request before its changed slots are saved. */
export const IDLE_SAVE_DELAY_MS = 1_000;

/** What a slot held when it was last saved: while it holds the same, it is not saved again. */
const holding = (slot: SlotLook): string => `${slot.id_task ?? '-'}:${slot.n_prompt_tokens ?? 0}`;

/** A look at /slots or /tokenize is quick; a save or load of a large KV cache is a file of some hundred MiB. */
const LOOK_MS = 5_000;
const FILE_MS = 60_000;
/** A whole rendered prompt, and its token list, come back: up to a long context's worth. */
const PROMPT_BODY_LIMIT = 32 * 1024 ** 2;
/**
 * Long prompts in a row that share no saved conversation, after which this server stops asking
 * (each ask is an /apply-template and a /tokenize of the whole prompt, some tens of ms for a
 * coding agent's 30,000 tokens): by then the clients that come back have come back. The files
 * stay for the model's next launch.
 */
export const RESTORE_MISSES_BEFORE_GIVING_UP = 8;

function flagValue(argv: readonly string[], names: readonly string[], fallback: string): string {
  let value = fallback;
  for (let i = 0; i < argv.length - 1; i++) if (names.includes(argv[i] ?? '')) value = argv[i + 1] ?? fallback;
  return value;
}

/** The K and V cache types of a llama-server argv, the last spelling winning as llama.cpp reads it. Pure. */
export function kvTypeOf(argv: readonly string[]): string {
  return `${flagValue(argv, ['-ctk', '--cache-type-k'], 'f16')}/${flagValue(argv, ['-ctv', '--cache-type-v'], 'f16')}`;
}

async function slotsOf(port: number, apiKey: string): Promise<SlotLook[] | string> {
  const answer = await engineGet(port, apiKey, '/slots', LOOK_MS);
  if (answer === null) return 'GET /slots did not answer';
  if (answer.status !== 200) return `GET /slots answered ${answer.status}: ${answer.body.slice(0, 200)}`;
  try {
    const slots = JSON.parse(answer.body) as SlotLook[];
    return Array.isArray(slots) ? slots : 'GET /slots answered no list';
  } catch (error) {
    return `GET /slots answered no JSON: ${errorMessage(error)}`;
  }
}

export class LlamaServerSlots {
  /** Files restored into this server: it holds them now, and its own cache carries them on. */
  private readonly restored = new Set<string>();
  /** Long prompts in a row that matched nothing saved; at RESTORE_MISSES_BEFORE_GIVING_UP, no more asking. */
  private misses = 0;
  /** Per slot id, what it held when last saved (holding()). */
  private readonly savedHolding = new Map<number, string>();
  /** The save passes, one after another: an eviction's waits for an idle one in flight. */
  private passes: Promise<void> = Promise.resolve();
  private idleTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly store: SavedConversations,
    private readonly options: LlamaServerSlotsOptions,
    private readonly staging: string,
  ) {}

  /**
   * The saved conversations of a ready llama-server, or null (logged) when its slots cannot be
   * read. Blocks for a GET /slots, a stat of the model file and the store's open. Never throws.
   */
  static async open(options: LlamaServerSlotsOptions): Promise<LlamaServerSlots | null> {
    const { log } = options;
    try {
      const slots = await slotsOf(options.port, options.apiKey);
      if (typeof slots === 'string') throw new Error(slots);
      const first = slots[0];
      if (first === undefined) throw new Error('GET /slots lists no slot');
      const file = await stat(options.modelPath);
      const staging = llamaServerStagingDir(options.root);
      await mkdir(staging, { recursive: true });
      const store = await SavedConversations.open({
        root: options.root,
        identity: {
          modelPath: options.modelPath,
          modelSize: file.size,
          modelMtimeMs: file.mtimeMs,
          modelInode: file.ino,
          engineBuild: `llama-server ${options.buildVersion ?? 'unknown build'}`,
          contextPerSlot: first.n_ctx,
          kvType: kvTypeOf(options.argv),
        },
        minTokens: options.minTokens ?? DEFAULT_MIN_TOKENS,
        budgetBytes: options.budgetBytes ?? DEFAULT_BUDGET_BYTES,
        log,
      });
      if (store.count > 0) log(`srv  conversations: ${store.count} saved conversation(s), ${(store.bytes / 1024 ** 2).toFixed(1)} MiB, under ${options.root}`);
      return new LlamaServerSlots(store, options, staging);
    } catch (error) {
      log(`srv  conversations: not saving this server's conversations: ${errorMessage(error)}`);
      return null;
    }
  }

  /**
   * The server has no request: in IDLE_SAVE_DELAY_MS, if `stillIdle()` then, its changed slots
   * are saved. A later call, or busy(), replaces or cancels the one before. Returns at once.
   */
  idle(stillIdle: () => boolean): void {
    this.busy();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (stillIdle()) this.queuePass('idle');
    }, IDLE_SAVE_DELAY_MS);
    this.idleTimer.unref();
  }

  /** A request came (or the server is going): no idle save is to start. One in flight finishes. */
  busy(): void {
    if (this.idleTimer !== null) clearTimeout(this.idleTimer);
    this.idleTimer = null;
  }

  /**
   * Before an eviction: once any idle save in flight is done, saves each idle slot holding more
   * than minTokens that changed since it was saved. Resolves when done; never throws.
   */
  saveAll(): Promise<void> {
    this.busy();
    return this.queuePass('eviction');
  }

  private queuePass(before: 'idle' | 'eviction'): Promise<void> {
    this.passes = this.passes.then(() => this.savePass(before));
    return this.passes;
  }

  private async savePass(before: 'idle' | 'eviction'): Promise<void> {
    const { port, apiKey, log } = this.options;
    const slots = await slotsOf(port, apiKey);
    if (typeof slots === 'string') {
      log(`srv  conversations: not saving ${before === 'idle' ? 'the idle server’s conversations' : 'before the eviction'}: ${slots}`);
      return;
    }
    const minTokens = this.options.minTokens ?? DEFAULT_MIN_TOKENS;
    for (const slot of slots) {
      const held = slot.n_prompt_tokens ?? 0;
      if (slot.is_processing || held <= minTokens) continue;
      if (this.savedHolding.get(slot.id) === holding(slot)) {
        if (before === 'eviction') log(`srv  conversations: slot ${slot.id}: unchanged since it was saved, nothing to save before the eviction`);
        continue;
      }
      const started = performance.now();
      const saved = await this.store.save(held, async (path) => {
        const name = `${randomBytes(9).toString('hex')}.bin`;
        const answer = await enginePost(port, apiKey, `/slots/${slot.id}?action=save`, { filename: name }, FILE_MS);
        const staged = join(this.staging, name);
        if (answer === null || answer.status !== 200) {
          await rm(staged, { force: true });
          throw new Error(answer === null ? 'the save did not answer' : `the save answered ${answer.status}: ${answer.body.slice(0, 200)}`);
        }
        await rename(staged, path);
      });
      if (saved === undefined) continue;
      // Not written again until it changes; a save skipped (a full disk) or failed is tried again next time.
      this.savedHolding.set(slot.id, holding(slot));
      log(`srv  conversations: slot ${slot.id}: saved ${saved.tokens.length} tokens (${(saved.bytes / 1024 ** 2).toFixed(1)} MiB) in ${Math.round(performance.now() - started)} ms`);
    }
  }

  /**
   * Before a chat prompt is forwarded: when a saved conversation not yet restored into this
   * server shares more than minTokens with the prompt (rendered and tokenized by the server
   * itself), loads it into an idle slot, the emptiest. Blocks for those round trips and the
   * load; returns at once when nothing saved is left to restore, or after
   * RESTORE_MISSES_BEFORE_GIVING_UP long prompts in a row matched nothing; a prompt too short to
   * share minTokens is not tokenized. Never throws.
   */
  async restoreFor(body: Record<string, unknown>): Promise<void> {
    if (this.store.count <= this.restored.size || this.misses >= RESTORE_MISSES_BEFORE_GIVING_UP) return;
    const { port, apiKey, log } = this.options;
    try {
      const prompt = await this.renderedPrompt(body);
      // Every token spells at least one byte, and the sequence start none: a prompt of n bytes is
      // at most n + 1 tokens, and one that cannot share more than minTokens needs no /tokenize.
      if (Buffer.byteLength(prompt) + 1 <= (this.options.minTokens ?? DEFAULT_MIN_TOKENS)) return;
      const tokens = await this.tokenized(prompt);
      const best = this.store.bestFor(tokens);
      if (best === undefined) {
        this.misses++;
        if (this.misses === RESTORE_MISSES_BEFORE_GIVING_UP) {
          log(`srv  conversations: ${this.misses} prompts in a row shared nothing with the ${this.store.count - this.restored.size} saved conversation(s) not restored; not asking again while this server runs`);
        }
        return;
      }
      this.misses = 0;
      if (this.restored.has(best.saved.path)) return;
      const slots = await slotsOf(port, apiKey);
      if (typeof slots === 'string') throw new Error(slots);
      const idle = slots.filter((s) => !s.is_processing).sort((a, b) => (a.n_prompt_tokens ?? 0) - (b.n_prompt_tokens ?? 0))[0];
      // Every slot busy: the request is answered as it would have been without a saved state.
      if (idle === undefined) return;
      const damage = await this.store.damage(best.saved);
      if (damage !== undefined) {
        await this.store.discard(best.saved, damage);
        return;
      }
      // Marked before the load: a second request meanwhile must not load it into another slot.
      this.restored.add(best.saved.path);
      const started = performance.now();
      const name = `${randomBytes(9).toString('hex')}.bin`;
      const staged = join(this.staging, name);
      await link(best.saved.path, staged).catch(() => copyFile(best.saved.path, staged));
      let answer;
      try {
        answer = await enginePost(port, apiKey, `/slots/${idle.id}?action=restore`, { filename: name }, FILE_MS);
      } finally {
        await rm(staged, { force: true });
      }
      if (answer === null) throw new Error('the restore did not answer');
      if (answer.status !== 200) {
        await this.store.discard(best.saved, `it could not be restored: ${answer.status} ${answer.body.slice(0, 200)}`);
        return;
      }
      await this.store.touch(best.saved);
      log(`srv  conversations: slot ${idle.id}: restored ${best.shared} of ${tokens.length} prompt tokens from ${best.saved.path} in ${Math.round(performance.now() - started)} ms`);
    } catch (error) {
      log(`srv  conversations: no restore for this prompt: ${errorMessage(error)}`);
    }
  }

  /** The prompt as the server's template renders it; throws when the server cannot say. */
  private async renderedPrompt(body: Record<string, unknown>): Promise<string> {
    const { port, apiKey } = this.options;
    const applied = await enginePost(port, apiKey, '/apply-template', body, LOOK_MS, PROMPT_BODY_LIMIT);
    if (applied === null || applied.status !== 200) throw new Error(`POST /apply-template ${applied === null ? 'did not answer' : `answered ${applied.status}`}`);
    const prompt = (JSON.parse(applied.body) as { prompt?: unknown }).prompt;
    if (typeof prompt !== 'string') throw new Error('POST /apply-template gave no prompt');
    return prompt;
  }

  /** The rendered prompt's tokens as the server will evaluate them (BOS included); throws when the server cannot say. */
  private async tokenized(prompt: string): Promise<number[]> {
    const { port, apiKey } = this.options;
    const tokenized = await enginePost(port, apiKey, '/tokenize', { content: prompt, add_special: true, parse_special: true }, LOOK_MS, PROMPT_BODY_LIMIT);
    if (tokenized === null || tokenized.status !== 200) throw new Error(`POST /tokenize ${tokenized === null ? 'did not answer' : `answered ${tokenized.status}`}`);
    const tokens = (JSON.parse(tokenized.body) as { tokens?: unknown }).tokens;
    if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'number')) throw new Error('POST /tokenize gave no token list');
    return tokens as number[];
  }
}
