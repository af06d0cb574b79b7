// The one IPC contract between the Electron main process and the dashboard's preload.
//
// Everything is derived from DashboardBridge (core/contracts/bridge.ts): each request method
// of the bridge is one invoke channel with the same arguments and result, and the bridge's
// event stream is one push channel. Main's handlers, the preload and the argument validators
// are all typed from these maps (GitHub Desktop's ipc-shared pattern), so a method added to
// the bridge, a renamed channel or a changed signature is a compile error on both sides
// instead of a silent `undefined` at run time.
import type { AdminEvent } from '../core/contracts/admin-events.js';
import type { DashboardBridge } from '../core/contracts/bridge.js';

/** The bridge's request/response methods; `subscribe` travels over the push channel. */
export type BridgeRequestMethod = Exclude<keyof DashboardBridge, 'subscribe'>;

/** Bridge method → invoke channel name. */
export const INVOKE_CHANNELS = {
  getSnapshot: 'llmtray:getSnapshot',
  runCommand: 'llmtray:runCommand',
  getLogs: 'llmtray:getLogs',
} as const satisfies Record<BridgeRequestMethod, `llmtray:${string}`>;

export type InvokeChannel = (typeof INVOKE_CHANNELS)[BridgeRequestMethod];

/** Invoke channel → the bridge method's signature (arguments and awaited result). */
export type InvokeChannelMap = {
  [M in BridgeRequestMethod as (typeof INVOKE_CHANNELS)[M]]: DashboardBridge[M];
};

export type InvokeArgs<C extends InvokeChannel> = Parameters<InvokeChannelMap[C]>;
export type InvokeResult<C extends InvokeChannel> = Awaited<ReturnType<InvokeChannelMap[C]>>;

/** Push channel → its payload. Main sends, the preload listens. */
export interface PushChannelMap {
  'llmtray:event': AdminEvent;
}

export type PushChannel = keyof PushChannelMap;

export const EVENT_CHANNEL = 'llmtray:event' satisfies PushChannel;

/** Every channel name, for registering and removing handlers without missing one. */
export const ALL_INVOKE_CHANNELS: readonly InvokeChannel[] = Object.values(INVOKE_CHANNELS);
