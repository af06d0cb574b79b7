// What the data dir's saved conversations hold, for the snapshot: per model file and in all.
// The engines write them (an embedded engine when a slot goes idle, the llama-server adapter
// when its server idles and before an eviction); the daemon only reads the folder, so that a
// model no engine runs still shows what it kept. Read when a server ends (its last saves are
// then on disk) and on a slow timer (both save while their server runs), never per snapshot or
// per request: the snapshot builder is synchronous and runs on every change.
import { join } from 'node:path';
import { Emitter, type Event } from '../common/emitter.js';
import type { LlmtrayConfig } from '../catalog/config/load-config.js';
import type { SavedConversationsSpec } from '../engine/launch-spec.js';
import { readSavedTotals, type SavedTotals } from '../engine/saved-conversations/on-disk.js';
import { DEFAULT_BUDGET_BYTES, DEFAULT_MIN_TOKENS } from '../engine/saved-conversations/store.js';
import type { ServerEvent } from '../contracts/server-events.js';

export interface SavedConversationsView {
  /** A model file's saved conversations; none (0, 0) when it has none. O(1). */
  forModel(modelPath: string): SavedTotals;
  /** Every saved conversation's bytes, of any model. O(1). */
  totalBytes(): number;
  /** Reads the folder again now; resolves once the reading is in. */
  refresh(): Promise<void>;
  readonly onDidChange: Event<void>;
  close(): void;
}

/** The data dir's folder of saved conversations: the engines' `--slot-save-path`, the view's root. */
export function conversationsDirOf(dataDir: string): string {
  return join(dataDir, 'conversations');
}

/**
 * The conversations folder a launch is given, with the config's limits, or none when
 * `engines.savedConversations` is false: an engine without one neither saves nor restores (no
 * `--slot-save-path`, no adapter).
 */
export function savedConversationsFor(
  config: Pick<LlmtrayConfig, 'savedConversations' | 'savedConversationsMinTokens' | 'savedConversationsBudgetBytes'>,
  dataDir: string,
): SavedConversationsSpec | undefined {
  if (!config.savedConversations) return undefined;
  return {
    dir: conversationsDirOf(dataDir),
    minTokens: config.savedConversationsMinTokens ?? DEFAULT_MIN_TOKENS,
    budgetBytes: config.savedConversationsBudgetBytes ?? DEFAULT_BUDGET_BYTES,
  };
}

const NONE: SavedTotals = { count: 0, bytes: 0 };
/** How often the folder is read while servers run: saves while a model idles show within this. */
const DEFAULT_INTERVAL_MS = 15_000;

export interface SavedConversationsViewDeps {
  /** The data dir's conversations folder (LaunchSpec.savedConversations.dir). */
  root: string;
  /** The servers' lifecycle events: a server's end is when its last saves are on disk. */
  onServerEvent: Event<ServerEvent>;
  intervalMs?: number;
}

export function watchSavedConversations(deps: SavedConversationsViewDeps): SavedConversationsView {
  const changed = new Emitter<void>('the saved conversations');
  let byModel = new Map<string, SavedTotals>();
  let total: SavedTotals = NONE;
  let reading: Promise<void> | null = null;
  let again = false;
  let closed = false;

  const readOnce = async (): Promise<void> => {
    const next = await readSavedTotals(deps.root);
    if (closed) return;
    const same = next.total.count === total.count && next.total.bytes === total.bytes && sameByModel(byModel, next.byModel);
    byModel = next.byModel;
    total = next.total;
    if (!same) changed.fire();
  };
  // One reading at a time; a refresh asked for during one reads once more after it, so a save
  // that landed mid-reading is not missed.
  const refresh = (): Promise<void> => {
    if (reading !== null) {
      again = true;
      return reading;
    }
    reading = (async () => {
      do {
        again = false;
        await readOnce();
      } while (again && !closed);
    })().finally(() => {
      reading = null;
    });
    return reading;
  };

  const unsubscribe = deps.onServerEvent((event) => {
    if (event.type === 'ServerStopped' || event.type === 'ServerExited') void refresh();
  });
  const timer = setInterval(() => void refresh(), deps.intervalMs ?? DEFAULT_INTERVAL_MS);
  timer.unref();
  void refresh();

  return {
    forModel: (modelPath) => byModel.get(modelPath) ?? NONE,
    totalBytes: () => total.bytes,
    refresh,
    onDidChange: changed.event,
    close: () => {
      closed = true;
      clearInterval(timer);
      unsubscribe();
    },
  };
}

function sameByModel(a: ReadonlyMap<string, SavedTotals>, b: ReadonlyMap<string, SavedTotals>): boolean {
  if (a.size !== b.size) return false;
  for (const [path, totals] of a) {
    const other = b.get(path);
    if (other === undefined || other.count !== totals.count || other.bytes !== totals.bytes) return false;
  }
  return true;
}
