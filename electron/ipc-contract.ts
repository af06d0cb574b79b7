// The one IPC contract between the Electron main process and the dashboard's preload.
//
// Derived from the admin API's route table (core/contracts/admin-routes.ts): each call is one
// invoke channel, `llmtray:<call>`, carrying one argument, the call's parameters, and answering
// with the call's answer; the event stream is one push channel. Main's handlers, the preload and
// the argument checks all come from the table (GitHub Desktop's ipc-shared pattern), so a call
// added there is carried here with no code, and a changed signature is a compile error on both
// sides instead of a silent `undefined` at run time.
import type { AdminEvent } from '../core/contracts/admin-events.js';
import { ADMIN_CALL_NAMES, type AdminCallName } from '../core/contracts/admin-routes.js';

/** The invoke channel of a call. */
export type InvokeChannel<K extends AdminCallName = AdminCallName> = `llmtray:${K}`;

export function invokeChannel<K extends AdminCallName>(name: K): InvokeChannel<K> {
  return `llmtray:${name}`;
}

/** Every invoke channel, for registering and removing handlers without missing one. */
export const ALL_INVOKE_CHANNELS: readonly InvokeChannel[] = ADMIN_CALL_NAMES.map(invokeChannel);

/** Push channel → its payload. Main sends, the preload listens. */
export interface PushChannelMap {
  'llmtray:event': AdminEvent;
}

export type PushChannel = keyof PushChannelMap;

export const EVENT_CHANNEL = 'llmtray:event' satisfies PushChannel;
