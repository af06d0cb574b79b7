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
import type { HubModelHit, PullView, RepoOffer } from '../../../core/contracts/hub/pulls.js';
import { linesAfter } from '../../../core/contracts/log-lines.js';
import type { RequestRecord } from '../../../core/contracts/requests/request-record.js';

/**
 * - connecting: no snapshot has arrived yet.
 * - open: the stream delivers.
 * - lost: the stream dropped; the last snapshot stays on screen, greyed, while the bridge reconnects.
 * - unauthorized: the daemon refused this page (no token, or a revoked one); a person must act.
 */
export type ConnectionState = 'connecting' | 'open' | 'lost' | 'unauthorized';

export type Tab = 'models' | 'recovery' | 'why' | 'logs' | 'activity' | 'connect' | 'add';

/** One point of the budget history: what our models held against the budget at a sample. */
export interface BudgetHistoryPoint {
  at: number;
  usedBytes: number;
  budgetBytes: number;
}

/** Something a person is told once: a command's outcome, or a quarantine/fallback event. */
export interface DashboardNotice {
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
  history: BudgetHistoryPoint[];
}

export interface LogsSlice {
  /**
   * Per model id, what its Logs view shows, oldest first, at most `maxLogLines`: the log's lines,
   * with a "… N lines dropped" line where the daemon left some out (its rate limit) or the
   * stream missed some (a reconnect).
   */
  logs: Record<string, string[]>;
  /** Per model id, the position after the last line held (core/contracts/log-lines.ts); absent until a tail or a batch came. */
  logNext: Record<string, number>;
  /** Why the last log fetch failed, per model id. */
  logErrors: Record<string, string>;
}

/** Add model: the Hub as the daemon browses it, and the pulls its events tell of. */
export interface PullsSlice {
  /** Every pull this page has heard of, by id, as its last PullProgressed said it. */
  pulls: Record<string, PullView>;
  /** The last search's hits; null before any. */
  hubHits: HubModelHit[] | null;
  /** The repo opened from the hits, its quants each with how it would run here; null before one is opened. */
  hubOffer: RepoOffer | null;
  /** A search or a repo being asked of the Hub. */
  hubBusy: boolean;
  /** Why the last search, repo or pull was refused, in the daemon's words. */
  hubError: string | null;
}

export interface ActivitySlice {
  /**
   * The requests the daemon holds, newest first: fetched when the Activity tab opens, then each
   * RequestRecorded put in front (at most `activity.keep`, as the daemon holds). Null until fetched.
   */
  requests: RequestRecord[] | null;
  /** `activity.keep` and `activity.keepBodies` (bytes, 0: none), as the daemon said them. */
  activityKeep: number;
  keepBodiesBytes: number;
  /** Why the last fetch failed, or null. */
  activityError: string | null;
}

export interface UiSlice {
  tab: Tab;
  /** The model whose log the Logs view shows, or null for the first one. */
  logModelId: string | null;
  /** The command in flight per model id; a model's controls are disabled while one is. */
  pending: Record<string, ModelCommand>;
  notices: DashboardNotice[];
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
  /**
   * Replaces the model's log with the server's tail, then adds the live batches that arrived
   * while it was fetched, each placed by its position: none is shown twice, none is lost.
   * Never rejects.
   */
  loadLogs(modelId: string): Promise<void>;
  /** Asks the daemon to search the Hub; the hits replace the last ones. Never rejects: a refusal is hubError. */
  searchHub(query: string): Promise<void>;
  /** Asks the daemon for a repo's quants and how each would run here. Never rejects. */
  openRepo(repo: string): Promise<void>;
  /** Starts a pull in the daemon; its progress comes as events. Never rejects: a refusal is hubError. */
  startPull(name: string): Promise<void>;
  /** Stops a pull. Never rejects: a failure is a notice. */
  cancelPull(id: string): Promise<void>;
  /**
   * Fetches the requests the daemon holds; the RequestRecorded events that arrive meanwhile are
   * kept too, each once. Never rejects.
   */
  loadActivity(): Promise<void>;
  /** Subscribes to the bridge; returns the unsubscribe function. Call once per store. */
  connect(): () => void;
}

export type DashboardState = SnapshotSlice & HistorySlice & LogsSlice & PullsSlice & ActivitySlice & UiSlice & DashboardActions;
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
  // Batches that arrive while a model's log tail is being fetched: the tail may or may not hold
  // them (the daemon read it before or after), so they are placed by position once it lands.
  const arrivedDuringFetch = new Map<string, Batch[]>();
  // Records that arrive while the request list is fetched: placed in front of it unless it holds them.
  let recordedDuringFetch: RequestRecord[] | null = null;

  return createStore<DashboardState>()((set, get) => {
    const notify = (tone: DashboardNotice['tone'], message: string): void => {
      const notice: DashboardNotice = { id: ++noticeId, tone, message, at: now() };
      set((state) => ({ notices: [...state.notices, notice].slice(-MAX_NOTICES) }));
    };

    const appendLog = (modelId: string, batch: Batch): void => {
      arrivedDuringFetch.get(modelId)?.push(batch);
      set((state) => {
        const { append, next } = linesAfter(state.logNext[modelId] ?? null, batch.first, batch.lines);
        return {
          logs: { ...state.logs, [modelId]: capped([...(state.logs[modelId] ?? []), ...append], maxLogLines) },
          logNext: { ...state.logNext, [modelId]: next },
        };
      });
    };

    return {
      snapshot: null,
      connection: 'connecting',
      connectionDetail: null,
      history: [],
      logs: {},
      logNext: {},
      logErrors: {},
      pulls: {},
      hubHits: null,
      hubOffer: null,
      hubBusy: false,
      hubError: null,
      requests: null,
      activityKeep: 0,
      keepBodiesBytes: 0,
      activityError: null,
      tab: 'models',
      logModelId: null,
      pending: {},
      notices: [],

      applyEvent(event) {
        switch (event.type) {
          case 'SnapshotUpdated': {
            const { snapshot } = event;
            // Another daemon (a restart): its logs start again at position 0, so the lines held
            // belong to servers that are gone and their positions would hide the new ones.
            const restarted = get().snapshot !== null && get().snapshot?.startedAt !== snapshot.startedAt;
            if (restarted) arrivedDuringFetch.clear();
            set((state) => ({
              snapshot,
              connection: 'open',
              connectionDetail: null,
              history: withSample(state.history, sampleOf(snapshot), historyWindowMs),
              // Its request ids start again at r1 too: the list held is another daemon's.
              ...(restarted ? { logs: {}, logNext: {}, logErrors: {}, requests: null } : {}),
            }));
            return;
          }
          case 'LogAppended':
            appendLog(event.modelId, { first: event.first, lines: event.lines });
            return;
          case 'RequestRecorded':
            recordedDuringFetch?.push(event.record);
            set((state) => (state.requests === null ? {} : { requests: [event.record, ...state.requests].slice(0, Math.max(1, state.activityKeep)) }));
            return;
          case 'ModelQuarantined':
            notify('error', `${event.modelId} was quarantined: ${event.reason}`);
            return;
          case 'ModelFellBack':
            notify('warn', `${event.fallbackId} now answers for ${event.modelId}: ${event.reason}`);
            return;
          case 'PullProgressed': {
            const { pull } = event;
            const before = get().pulls[pull.id];
            set((state) => ({ pulls: { ...state.pulls, [pull.id]: pull } }));
            // Its end once, as the daemon says it.
            if (before?.state !== pull.state && pull.state === 'done') notify('ok', `${pull.id} is pulled: ${pull.message}`);
            if (before?.state !== pull.state && pull.state === 'failed') notify('error', `Pulling ${pull.id} failed: ${pull.message}`);
            return;
          }
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
        const arrived: Batch[] = [];
        arrivedDuringFetch.set(modelId, arrived);
        try {
          const tail = await bridge.getLogs({ id: modelId });
          let lines = tail.lines;
          let next = tail.next;
          for (const batch of arrived) {
            const placed = linesAfter(next, batch.first, batch.lines);
            lines = [...lines, ...placed.append];
            next = placed.next;
          }
          set((state) => {
            const { [modelId]: _cleared, ...logErrors } = state.logErrors;
            return { logs: { ...state.logs, [modelId]: capped(lines, maxLogLines) }, logNext: { ...state.logNext, [modelId]: next }, logErrors };
          });
        } catch (error) {
          set((state) => ({ logErrors: { ...state.logErrors, [modelId]: `Could not read the log: ${messageOf(error)}` } }));
        } finally {
          if (arrivedDuringFetch.get(modelId) === arrived) arrivedDuringFetch.delete(modelId);
        }
      },

      async searchHub(query) {
        set({ hubBusy: true, hubError: null });
        try {
          const hits = await bridge.searchHub({ query });
          set({ hubHits: hits, hubOffer: null });
        } catch (error) {
          set({ hubError: messageOf(error) });
        } finally {
          set({ hubBusy: false });
        }
      },

      async openRepo(repo) {
        set({ hubBusy: true, hubError: null });
        try {
          set({ hubOffer: await bridge.offerRepo({ repo }) });
        } catch (error) {
          set({ hubError: messageOf(error) });
        } finally {
          set({ hubBusy: false });
        }
      },

      async startPull(name) {
        set({ hubError: null });
        try {
          const pull = await bridge.startPull({ name });
          // An event may have told a later state already: the answer only fills in a pull not heard of.
          set((state) => (state.pulls[pull.id] === undefined ? { pulls: { ...state.pulls, [pull.id]: pull } } : {}));
        } catch (error) {
          set({ hubError: messageOf(error) });
        }
      },

      async cancelPull(id) {
        try {
          await bridge.cancelPull({ name: id });
        } catch (error) {
          notify('error', `Could not cancel the pull of ${id}: ${messageOf(error)}`);
        }
      },

      async loadActivity() {
        const arrived: RequestRecord[] = [];
        recordedDuringFetch = arrived;
        try {
          const answer = await bridge.getActivity();
          const held = new Set(answer.requests.map((record) => record.id));
          const newer = arrived.filter((record) => !held.has(record.id)).reverse();
          set({ requests: [...newer, ...answer.requests].slice(0, Math.max(1, answer.keep)), activityKeep: answer.keep, keepBodiesBytes: answer.keepBodiesBytes, activityError: null });
        } catch (error) {
          set({ activityError: `Could not read the requests: ${messageOf(error)}` });
        } finally {
          if (recordedDuringFetch === arrived) recordedDuringFetch = null;
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

function sampleOf(snapshot: Snapshot): BudgetHistoryPoint {
  return { at: snapshot.budget.sampledAt, usedBytes: snapshot.budget.usedBytes, budgetBytes: snapshot.budget.budgetBytes };
}

/**
 * Appends a sample, replacing one with the same stamp, and drops what fell out of the window.
 * A sample older than the newest (a restarted daemon's clock, a reordered event) starts the
 * history again rather than drawing a line backwards in time.
 */
export function withSample(history: readonly BudgetHistoryPoint[], sample: BudgetHistoryPoint, windowMs: number): BudgetHistoryPoint[] {
  const last = history[history.length - 1];
  let next: BudgetHistoryPoint[];
  if (last === undefined) next = [sample];
  else if (sample.at < last.at) next = [sample];
  else if (sample.at === last.at) next = [...history.slice(0, -1), sample];
  else next = [...history, sample];
  const from = sample.at - windowMs;
  const firstKept = next.findIndex((s) => s.at >= from);
  // Keep one sample before the window so the line starts at the window's left edge.
  return next.slice(Math.max(0, firstKept - 1));
}

/** A LogAppended's lines and the position of the first. */
interface Batch {
  first: number;
  lines: readonly string[];
}

function capped(lines: string[], max: number): string[] {
  return lines.length > max ? lines.slice(lines.length - max) : lines;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
