// The dashboard bridge as the preload builds it over ipcRenderer.
//
// Kept apart from preload.ts (which only hands it to contextBridge) so it can be tested with a
// plain fake ipcRenderer: Electron's module cannot even be loaded outside an Electron process.
// What crosses into the page is exactly DashboardBridge, never ipcRenderer itself nor the
// IpcRendererEvent (whose `sender` would let the page send on any channel).
import type { AdminEvent } from '../core/contracts/admin-events.js';
import { ADMIN_CALL_NAMES, type AdminAnswer, type AdminApi } from '../core/contracts/admin-routes.js';
import type { DashboardBridge } from '../core/contracts/bridge.js';
import { EVENT_CHANNEL, invokeChannel, unwrapInvokeReply, type PushChannelMap } from './ipc-contract.js';

type PushListener = (event: unknown, ...args: unknown[]) => void;

/** The parts of Electron's ipcRenderer the bridge uses; Electron's own object satisfies it. */
export interface IpcRendererPort {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>;
  on(channel: string, listener: PushListener): unknown;
  removeListener(channel: string, listener: PushListener): unknown;
}

/** Where a listener's own exception goes; it must not stop delivery to the others. */
export type ListenerErrorReporter = (error: unknown) => void;

export function createPreloadBridge(
  ipc: IpcRendererPort,
  reportListenerError: ListenerErrorReporter = (error) => console.error('llmtray: a dashboard event listener threw', error),
): DashboardBridge {
  // Every call of the route table, each on its own channel with its parameters as the one argument.
  const calls = Object.fromEntries(
    ADMIN_CALL_NAMES.map((name) => [name, (params?: unknown) => invokeCall(ipc, name, params ?? {})]),
  ) as unknown as AdminApi;
  return { ...calls, subscribe: (listener, onConnection) => subscribe(ipc, listener, onConnection, reportListenerError) };
}

/** One call over its channel: main's answer, or its refusal thrown with main's sentence as the message. */
function invokeCall(ipc: IpcRendererPort, name: (typeof ADMIN_CALL_NAMES)[number], params: unknown): Promise<unknown> {
  return ipc.invoke(invokeChannel(name), params).then(unwrapInvokeReply);
}

/**
 * The bridge's subscribe over IPC. Main pushes every admin event to the window; the first
 * thing a subscriber needs is a whole snapshot, which it asks for. Events that arrive while
 * that answer is on its way are held and delivered after it, except snapshots older than it,
 * so the subscriber never goes back in time. If the snapshot cannot be fetched the stream
 * counts as lost (`onConnection(false)`) until main pushes the next snapshot.
 */
function subscribe(
  ipc: IpcRendererPort,
  listener: (event: AdminEvent) => void,
  onConnection: ((connected: boolean) => void) | undefined,
  reportListenerError: ListenerErrorReporter,
): () => void {
  let phase: 'fetching' | 'connected' | 'lost' | 'closed' = 'fetching';
  let revision = Number.NEGATIVE_INFINITY;
  const held: AdminEvent[] = [];

  const call = (fn: () => void): void => {
    try {
      fn();
    } catch (error) {
      reportListenerError(error);
    }
  };
  const deliver = (event: AdminEvent): void => {
    if (event.type === 'SnapshotUpdated') {
      if (event.snapshot.revision <= revision) return;
      revision = event.snapshot.revision;
    }
    call(() => listener(event));
  };
  const connect = (snapshot: Extract<AdminEvent, { type: 'SnapshotUpdated' }>): void => {
    phase = 'connected';
    deliver(snapshot);
    if (onConnection) call(() => onConnection(true));
  };

  const onPush: PushListener = (_ipcEvent, payload) => {
    const event = payload as PushChannelMap[typeof EVENT_CHANNEL];
    if (phase === 'fetching') held.push(event);
    else if (phase === 'connected') deliver(event);
    else if (phase === 'lost' && event.type === 'SnapshotUpdated') connect(event);
  };
  ipc.on(EVENT_CHANNEL, onPush);

  (invokeCall(ipc, 'getSnapshot', {}) as Promise<AdminAnswer<'getSnapshot'>>).then(
    (snapshot) => {
      if (phase !== 'fetching') return;
      connect({ type: 'SnapshotUpdated', snapshot });
      for (const event of held.splice(0)) deliver(event);
    },
    () => {
      if (phase !== 'fetching') return;
      phase = 'lost';
      const latest = held.splice(0).filter((event) => event.type === 'SnapshotUpdated').at(-1);
      if (latest !== undefined) connect(latest);
      else if (onConnection) call(() => onConnection(false));
    },
  );

  return () => {
    if (phase === 'closed') return;
    phase = 'closed';
    held.length = 0;
    ipc.removeListener(EVENT_CHANNEL, onPush);
  };
}
