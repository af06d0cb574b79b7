// The dashboard's one store: what the bridge last said, a short history of the budget, the
// model servers' logs, and what the person has selected.
//
// Why a vanilla store made by a factory (zustand's `createStore`) rather than a module-level
// hook: the bridge is injected, so tests hand in a recording fake and get a fresh store each
// (that is the "reset between tests"), and main.tsx hands in the Electron or HTTP bridge.
// Components reach it through the React hook in store-context.tsx and select narrowly.
//
// The store renders what the snapshot says. It never derives policy (fit, reasons, next
// steps); the only things it computes are display history and log buffering.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { DashboardBridge } from '../../../core/contracts/bridge.js';
import type { ModelCommand } from '../../../core/contracts/commands.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';

/**
 * - connecting: no snapshot has arrived yet.
 * - open: the stream delivers.
 * - lost: the stream dropped; the last snapshot stays on screen, greyed, while the bridge reconnects.
 * - unauthorized: the daemon refused this page (no token, or a revoked one); a person must act.
 */
export type ConnectionState = 'connecting' | 'open' | 'lost' | 'unauthorized';

export type Tab = 'models' | 'recovery' | 'why' | 'logs' | 'connect';

/** One point of the budget history: what our models held against the budget at a sample. */
export interface BudgetSample {
  at: number;
  usedBytes: number;
  budgetBytes: number;
}

/** Something a person is told once: a command's outcome, or a quarantine/fallback event. */
export interface Notice {
  id: number;
  tone: 'ok' | 'error' | 'warn';
  message: string;
  at: number;
}

export interface SnapshotSlice {
  snapshot: Snapshot | null;
  connection: ConnectionState;
  /** Why the connection is not open, in words, or null. */
  connectionDetail: string | null;
}

export interface HistorySlice {
  /** Oldest first, at most `historyWindowMs` old relative to the newest. */
  history: BudgetSample[];
}

export interface LogsSlice {
  /** Per model id, oldest first, at most `maxLogLines`. */
  logs: Record<string, string[]>;
  /** Why the last log fetch failed, per model id. */
  logErrors: Record<string, string>;
}

export interface UiSlice {
  tab: Tab;
  /** The model whose log the Logs view shows, or null for the first one. */
  logModelId: string | null;
  /** The command in flight per model id; a model's controls are disabled while one is. */
  pending: Record<string, ModelCommand>;
  notices: Notice[];
}

export interface DashboardActions {
  /** Applies one admin event. Synchronous; unknown event types are ignored (a newer daemon). */
  applyEvent(event: AdminEvent): void;
  /** The bridge says the stream is up or lost. */
  setConnected(connected: boolean): void;
  /** The transport says the daemon refused this page; `detail` says what to do. */
  setUnauthorized(detail: string): void;
  selectTab(tab: Tab): void;
  selectLogModel(modelId: string): void;
  dismissNotice(id: number): void;
  /**
   * Runs a command through the bridge and posts its outcome as a notice. Never rejects;
   * a transport failure becomes an error notice. Ignored while the model has a command in flight.
   */
  runCommand(command: ModelCommand, modelId: string): Promise<void>;
  /** Replaces the model's log with the server's tail, keeping lines that arrived meanwhile. Never rejects. */
  loadLogs(modelId: string): Promise<void>;
  /** Subscribes to the bridge; returns the unsubscribe function. Call once per store. */
  connect(): () => void;
}

export type DashboardState = SnapshotSlice & HistorySlice & LogsSlice & UiSlice & DashboardActions;
export type DashboardStore = StoreApi<DashboardState>;

export interface DashboardStoreOptions {
  bridge: DashboardBridge;
  /** How far back the budget sparkline reaches. Default 10 minutes. */
  historyWindowMs?: number;
  /** Log lines kept per model. Default 1000. */
  maxLogLines?: number;
  /** Epoch ms, for notice stamps. Default Date.now. */
  now?: () => number;
}

export const DEFAULT_HISTORY_WINDOW_MS = 10 * 60_000;
export const DEFAULT_MAX_LOG_LINES = 1000;
/** Notices beyond this are dropped oldest first: a burst of failures must not fill the window. */
const MAX_NOTICES = 4;

export function createDashboardStore(options: DashboardStoreOptions): DashboardStore {
  const { bridge } = options;
  const historyWindowMs = options.historyWindowMs ?? DEFAULT_HISTORY_WINDOW_MS;
  const maxLogLines = options.maxLogLines ?? DEFAULT_MAX_LOG_LINES;
  const now = options.now ?? Date.now;
  let noticeId = 0;
  // Lines that arrive by event while a log fetch is in flight, per model: the fetched tail may
  // or may not contain them, so they are merged by overlap when it lands (see mergeTail).
  const arrivedDuringFetch = new Map<string, string[]>();

  return createStore<DashboardState>()((set, get) => {
    const notify = (tone: Notice['tone'], message: string): void => {
      const notice: Notice = { id: ++noticeId, tone, message, at: now() };
      set((state) => ({ notices: [...state.notices, notice].slice(-MAX_NOTICES) }));
    };

    const appendLog = (modelId: string, lines: readonly string[]): void => {
      arrivedDuringFetch.get(modelId)?.push(...lines);
      set((state) => ({ logs: { ...state.logs, [modelId]: capped([...(state.logs[modelId] ?? []), ...lines], maxLogLines) } }));
    };

    return {
      snapshot: null,
      connection: 'connecting',
      connectionDetail: null,
      history: [],
      logs: {},
      logErrors: {},
      tab: 'models',
      logModelId: null,
      pending: {},
      notices: [],

      applyEvent(event) {
        switch (event.type) {
          case 'SnapshotUpdated': {
            const { snapshot } = event;
            set((state) => ({
              snapshot,
              connection: 'open',
              connectionDetail: null,
              history: withSample(state.history, sampleOf(snapshot), historyWindowMs),
            }));
            return;
          }
          case 'LogAppended':
            appendLog(event.modelId, event.lines);
            return;
          case 'ModelQuarantined':
            notify('error', `${event.modelId} was quarantined: ${event.reason}`);
            return;
          case 'ModelFellBack':
            notify('warn', `${event.fallbackId} now answers for ${event.modelId}: ${event.reason}`);
            return;
          default:
            // A newer daemon may send events this build does not know; showing nothing is right.
            return;
        }
      },

      setConnected(connected) {
        set((state) => {
          if (connected) return { connection: state.snapshot === null ? 'connecting' : 'open', connectionDetail: null };
          // A refused token needs a person, not patience: "reconnecting" would hide that.
          if (state.connection === 'unauthorized') return {};
          return { connection: 'lost', connectionDetail: 'The connection to llmtray was lost; reconnecting.' };
        });
      },

      setUnauthorized(detail) {
        set({ connection: 'unauthorized', connectionDetail: detail });
      },

      selectTab(tab) {
        set({ tab });
      },

      selectLogModel(modelId) {
        set({ logModelId: modelId });
      },

      dismissNotice(id) {
        set((state) => ({ notices: state.notices.filter((notice) => notice.id !== id) }));
      },

      async runCommand(command, modelId) {
        if (get().pending[modelId] !== undefined) return;
        set((state) => ({ pending: { ...state.pending, [modelId]: command } }));
        try {
          const result = await bridge.runCommand({ id: modelId, command });
          notify(result.ok ? 'ok' : 'error', result.message);
        } catch (error) {
          notify('error', `Could not ${command} ${modelId}: ${messageOf(error)}`);
        } finally {
          set((state) => {
            const { [modelId]: _done, ...rest } = state.pending;
            return { pending: rest };
          });
        }
      },

      async loadLogs(modelId) {
        const arrived: string[] = [];
        arrivedDuringFetch.set(modelId, arrived);
        try {
          const { lines: tail } = await bridge.getLogs({ id: modelId });
          set((state) => {
            const { [modelId]: _cleared, ...logErrors } = state.logErrors;
            return { logs: { ...state.logs, [modelId]: capped(mergeTail(tail, arrived), maxLogLines) }, logErrors };
          });
        } catch (error) {
          set((state) => ({ logErrors: { ...state.logErrors, [modelId]: `Could not read the log: ${messageOf(error)}` } }));
        } finally {
          if (arrivedDuringFetch.get(modelId) === arrived) arrivedDuringFetch.delete(modelId);
        }
      },

      connect() {
        return bridge.subscribe(
          (event) => get().applyEvent(event),
          (connected) => get().setConnected(connected),
        );
      },
    };
  });
}

function sampleOf(snapshot: Snapshot): BudgetSample {
  return { at: snapshot.budget.sampledAt, usedBytes: snapshot.budget.usedBytes, budgetBytes: snapshot.budget.budgetBytes };
}

/**
 * Appends a sample, replacing one with the same stamp, and drops what fell out of the window.
 * A sample older than the newest (a restarted daemon's clock, a reordered event) starts the
 * history again rather than drawing a line backwards in time.
 */
export function withSample(history: readonly BudgetSample[], sample: BudgetSample, windowMs: number): BudgetSample[] {
  const last = history[history.length - 1];
  let next: BudgetSample[];
  if (last === undefined) next = [sample];
  else if (sample.at < last.at) next = [sample];
  else if (sample.at === last.at) next = [...history.slice(0, -1), sample];
  else next = [...history, sample];
  const from = sample.at - windowMs;
  const firstKept = next.findIndex((s) => s.at >= from);
  // Keep one sample before the window so the line starts at the window's left edge.
  return next.slice(Math.max(0, firstKept - 1));
}

/**
 * The fetched tail followed by the lines that arrived by event during the fetch, minus the
 * overlap: the server may have answered before or after appending them.
 */
export function mergeTail(tail: readonly string[], arrived: readonly string[]): string[] {
  for (let overlap = Math.min(tail.length, arrived.length); overlap > 0; overlap--) {
    let matches = true;
    for (let i = 0; i < overlap; i++) {
      if (tail[tail.length - overlap + i] !== arrived[i]) {
        matches = false;
        break;
      }
    }
    if (matches) return [...tail, ...arrived.slice(overlap)];
  }
  return [...tail, ...arrived];
}

function capped(lines: string[], max: number): string[] {
  return lines.length > max ? lines.slice(lines.length - max) : lines;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
