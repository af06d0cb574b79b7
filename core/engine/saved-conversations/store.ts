// Saved conversations: a slot's KV cache written to the data dir so that a conversation
// survives its model's eviction, and read back when the model returns and a prompt shares
// the saved prefix. Engine-agnostic: the engine writes and loads the files (node-llama-cpp's
// saveStateToFile, llama-server's `/slots?action=save`), this decides where, whether, and
// which to keep.
//
// Layout: ROOT/<identity key>/identity.json, ROOT/<identity key>/<token hash>.state and beside
// each state its .sum (size and SHA-256), checked before a restore: llama.cpp aborts the
// process on a state cut short, so a file is never loaded unchecked; one without a .sum is
// discarded.
// The key hashes everything a state depends on (the model file's size, mtime and inode, the
// engine build, the slot's context and the KV type): loading a state made under another one
// may crash llama.cpp or quietly give other answers, so a changed identity is a new folder,
// and the old folder of the same model file is removed when the store opens.
//
// Budget: one for ROOT, over every model; least recently used files (their mtime, touched on
// each restore) go first. A save never starts when the disk's free space, less a reserve,
// would not hold it: a full data dir breaks everything else llmtray writes there.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, statfs, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorMessage } from '../../contracts/error-message.js';
import { IDENTITY_FILE, STATE_SUFFIX } from './on-disk.js';
import { CorruptStateFile, fileDigest, readStateTokens } from './state-file.js';

/** What a saved state depends on; any change makes it unusable. */
export interface StateIdentity {
  modelPath: string;
  modelSize: number;
  modelMtimeMs: number;
  modelInode: number;
  /** The engine and llama.cpp build that wrote it, e.g. `node-llama-cpp 3.21.1 (b6xxx) cpu`. */
  engineBuild: string;
  contextPerSlot: number;
  /** The K and V cache types, e.g. `f16/f16`. */
  kvType: string;
}

export interface SavedConversationsOptions {
  root: string;
  identity: StateIdentity;
  /** A conversation of this many tokens or fewer is not worth a file. */
  minTokens: number;
  budgetBytes: number;
  log: (line: string) => void;
  /** Free space a save must leave on the disk. */
  reserveBytes?: number;
}

export interface SavedConversation {
  readonly path: string;
  readonly tokens: readonly number[];
  readonly bytes: number;
  readonly sha256: string;
}

interface StateSum {
  bytes: number;
  sha256: string;
}

export const DEFAULT_MIN_TOKENS = 256;
export const DEFAULT_BUDGET_BYTES = 4 * 1024 ** 3;
const DEFAULT_RESERVE_BYTES = 64 * 1024 ** 2;
const SUM_SUFFIX = '.sum';

const MIB = 1024 ** 2;
const mib = (bytes: number): string => `${(bytes / MIB).toFixed(1)} MiB`;

export function identityKey(identity: StateIdentity): string {
  const fields = Object.entries(identity).sort(([a], [b]) => a.localeCompare(b));
  return createHash('sha256').update(JSON.stringify(fields)).digest('hex').slice(0, 24);
}

function sumPathOf(statePath: string): string {
  return `${statePath.slice(0, -STATE_SUFFIX.length)}${SUM_SUFFIX}`;
}

function tokensKey(tokens: readonly number[]): string {
  return createHash('sha256').update(Int32Array.from(tokens)).digest('hex').slice(0, 24);
}

/** How many leading tokens `a` and `b` share. */
export function sharedPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function changedFields(was: Partial<StateIdentity>, now: StateIdentity): string {
  const changed = (Object.keys(now) as (keyof StateIdentity)[]).filter((k) => was[k] !== now[k]);
  return changed.map((k) => `${k} ${String(was[k])} → ${String(now[k])}`).join(', ');
}

async function removeState(path: string): Promise<void> {
  await rm(path, { force: true }).catch(() => undefined);
  await rm(sumPathOf(path), { force: true }).catch(() => undefined);
}

async function readSum(statePath: string): Promise<StateSum> {
  let sum: Partial<StateSum>;
  try {
    sum = JSON.parse(await readFile(sumPathOf(statePath), 'utf8')) as Partial<StateSum>;
  } catch (error) {
    throw new CorruptStateFile(`its ${SUM_SUFFIX} cannot be read: ${errorMessage(error)}`);
  }
  if (typeof sum.bytes !== 'number' || typeof sum.sha256 !== 'string') throw new CorruptStateFile(`its ${SUM_SUFFIX} holds no size and digest`);
  return { bytes: sum.bytes, sha256: sum.sha256 };
}

export class SavedConversations {
  private readonly entries = new Map<string, SavedConversation>();
  private bytesPerToken = 0;

  private constructor(private readonly options: SavedConversationsOptions, private readonly dir: string) {}

  /**
   * Opens the store for one identity: creates its folder, removes the folders of the same
   * model file made under another identity (logged with what changed), and reads the head of
   * each saved file, discarding (logged) those that are corrupt. Blocks for a read of each
   * head. Never throws: a store that cannot be opened is returned empty and says why in the log.
   */
  static async open(options: SavedConversationsOptions): Promise<SavedConversations> {
    const key = identityKey(options.identity);
    const store = new SavedConversations(options, join(options.root, key));
    try {
      await mkdir(store.dir, { recursive: true });
      await store.discardOtherIdentities(key);
      await writeFile(join(store.dir, IDENTITY_FILE), JSON.stringify(options.identity));
      await store.readEntries();
    } catch (error) {
      options.log(`srv  conversations: saved conversations under ${options.root} are not available: ${errorMessage(error)}`);
    }
    return store;
  }

  get count(): number {
    return this.entries.size;
  }

  get bytes(): number {
    let sum = 0;
    for (const e of this.entries.values()) sum += e.bytes;
    return sum;
  }

  /** The saved conversation sharing the longest prefix with `tokens`, if that is more than minTokens. Pure. */
  bestFor(tokens: readonly number[]): { saved: SavedConversation; shared: number } | undefined {
    let best: { saved: SavedConversation; shared: number } | undefined;
    for (const saved of this.entries.values()) {
      const shared = sharedPrefix(saved.tokens, tokens);
      if (shared > this.options.minTokens && shared > (best?.shared ?? 0)) best = { saved, shared };
    }
    return best;
  }

  /** Whether a slot holding `tokens` has something to save: long enough, and not already held by a saved file. Pure. */
  worthSaving(tokens: readonly number[]): boolean {
    if (tokens.length <= this.options.minTokens) return false;
    for (const saved of this.entries.values()) {
      if (sharedPrefix(saved.tokens, tokens) === tokens.length) return false;
    }
    return true;
  }

  /**
   * Saves one slot: `write(path)` writes the state file (the engine's own call), which is
   * then named by its tokens; files it makes redundant (their tokens a prefix of its own) are
   * removed, and the least recently used files over the budget. Skipped, with a log line,
   * when the disk has no room for it; a failed write is logged and removed. Never throws.
   * Resolves with what was saved, or undefined.
   */
  async save(expectedTokens: number, write: (path: string) => Promise<void>): Promise<SavedConversation | undefined> {
    const { log } = this.options;
    const expectedBytes = expectedTokens * this.bytesPerToken;
    const temp = join(this.dir, `${process.pid}-${Date.now()}.tmp`);
    try {
      const free = await this.freeBytes();
      const reserve = this.options.reserveBytes ?? DEFAULT_RESERVE_BYTES;
      if (free < expectedBytes + reserve) {
        log(`srv  conversations: not saving a conversation of ${expectedTokens} tokens: the disk under ${this.options.root} has ${mib(free)} free, and a save must leave ${mib(reserve)}`);
        return undefined;
      }
      await write(temp);
      const { tokens, bytes } = await readStateTokens(temp);
      if (bytes > this.options.budgetBytes) {
        await unlink(temp);
        log(`srv  conversations: not keeping a conversation of ${tokens.length} tokens: ${mib(bytes)} is over the budget of ${mib(this.options.budgetBytes)}`);
        return undefined;
      }
      const saved: SavedConversation = { path: join(this.dir, `${tokensKey(tokens)}${STATE_SUFFIX}`), tokens, bytes, sha256: await fileDigest(temp) };
      // The sum first: a state is never there without the sum that vouches for it.
      const sum: StateSum = { bytes, sha256: saved.sha256 };
      await writeFile(`${temp}${SUM_SUFFIX}`, JSON.stringify(sum));
      await rename(`${temp}${SUM_SUFFIX}`, sumPathOf(saved.path));
      await rename(temp, saved.path);
      this.bytesPerToken = bytes / Math.max(1, tokens.length);
      for (const other of [...this.entries.values()]) {
        if (other.path !== saved.path && this.supersedes(tokens, other)) await this.remove(other);
      }
      this.entries.set(saved.path, saved);
      await this.keepWithinBudget(saved.path);
      return saved;
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      await rm(`${temp}${SUM_SUFFIX}`, { force: true }).catch(() => undefined);
      log(`srv  conversations: saving a conversation of ${expectedTokens} tokens failed: ${errorMessage(error)}`);
      return undefined;
    }
  }

  /**
   * Whether a save of `tokens` makes `other` redundant: it is the same conversation, further
   * on. Not only when `other` is a prefix of it: the next turn's prompt renders the last
   * answer through the chat template again, and its tokens need not be the ones generated,
   * so the two part somewhere in that answer. Sharing more than minTokens and at least half
   * of `other` is taken as that; a conversation that shares only a long system prompt with
   * another shares less. Pure.
   */
  private supersedes(tokens: readonly number[], other: SavedConversation): boolean {
    const shared = sharedPrefix(other.tokens, tokens);
    return shared > this.options.minTokens && shared * 2 >= other.tokens.length;
  }

  /**
   * Why `saved` must not be loaded (its size or digest is not the one saved), or undefined
   * when it is intact. Blocks for a read of the file. Never throws.
   */
  async damage(saved: SavedConversation): Promise<string | undefined> {
    try {
      const { size } = await stat(saved.path);
      if (size !== saved.bytes) return `corrupt: ${size} bytes, ${saved.bytes} were saved`;
      if ((await fileDigest(saved.path)) !== saved.sha256) return 'corrupt: its SHA-256 is not the one saved';
      return undefined;
    } catch (error) {
      return errorMessage(error);
    }
  }

  /** Marks `saved` as just used, for the LRU order. Never throws. */
  async touch(saved: SavedConversation): Promise<void> {
    const now = new Date();
    await utimes(saved.path, now, now).catch(() => undefined);
  }

  /** Removes a file that could not be restored, saying why. Never throws. */
  async discard(saved: SavedConversation, why: string): Promise<void> {
    this.options.log(`srv  conversations: discarded the saved conversation ${saved.path} (${saved.tokens.length} tokens): ${why}`);
    await this.remove(saved);
  }

  private async remove(saved: SavedConversation): Promise<void> {
    this.entries.delete(saved.path);
    await removeState(saved.path);
  }

  private async freeBytes(): Promise<number> {
    const fs = await statfs(this.dir);
    return fs.bavail * fs.bsize;
  }

  private async discardOtherIdentities(key: string): Promise<void> {
    const { root, identity, log } = this.options;
    for (const name of await readdir(root)) {
      if (name === key) continue;
      let was: Partial<StateIdentity>;
      try {
        was = JSON.parse(await readFile(join(root, name, IDENTITY_FILE), 'utf8')) as Partial<StateIdentity>;
      } catch {
        continue;
      }
      if (was.modelPath !== identity.modelPath) continue;
      const files = (await readdir(join(root, name))).filter((f) => f.endsWith(STATE_SUFFIX));
      await rm(join(root, name), { recursive: true, force: true });
      log(`srv  conversations: discarded ${files.length} saved conversation(s) of ${identity.modelPath}: ${changedFields(was, identity)}`);
    }
  }

  private async readEntries(): Promise<void> {
    for (const name of await readdir(this.dir)) {
      const path = join(this.dir, name);
      if (name.endsWith('.tmp') || name.endsWith(`.tmp${SUM_SUFFIX}`)) {
        // Left by a process that died mid-save.
        await rm(path, { force: true });
        continue;
      }
      if (!name.endsWith(STATE_SUFFIX)) continue;
      try {
        const { tokens, bytes } = await readStateTokens(path);
        const sum = await readSum(path);
        if (sum.bytes !== bytes) throw new CorruptStateFile(`${bytes} bytes, ${sum.bytes} were saved`);
        this.entries.set(path, { path, tokens, bytes, sha256: sum.sha256 });
        this.bytesPerToken = bytes / Math.max(1, tokens.length);
      } catch (error) {
        if (!(error instanceof CorruptStateFile)) throw error;
        this.options.log(`srv  conversations: discarded the saved conversation ${path}: corrupt: ${error.message}`);
        await removeState(path);
      }
    }
  }

  /** Removes the least recently used state files under ROOT (any model's) until ROOT fits the budget; never `keep`. */
  private async keepWithinBudget(keep: string): Promise<void> {
    const files: { path: string; bytes: number; usedAt: number }[] = [];
    for (const dir of await readdir(this.options.root)) {
      const names = await readdir(join(this.options.root, dir)).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.endsWith(STATE_SUFFIX))) {
        const path = join(this.options.root, dir, name);
        const s = await stat(path).catch(() => undefined);
        if (s) files.push({ path, bytes: s.size, usedAt: s.mtimeMs });
      }
    }
    let total = files.reduce((sum, f) => sum + f.bytes, 0);
    files.sort((a, b) => a.usedAt - b.usedAt);
    for (const f of files) {
      if (total <= this.options.budgetBytes) break;
      if (f.path === keep) continue;
      await removeState(f.path);
      this.entries.delete(f.path);
      total -= f.bytes;
      this.options.log(`srv  conversations: dropped the least recently used saved conversation ${f.path} (${mib(f.bytes)}): over the budget of ${mib(this.options.budgetBytes)}`);
    }
  }
}
