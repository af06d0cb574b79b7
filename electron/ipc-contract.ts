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

/**
 * What an invoke channel answers: the call's answer, or the sentence saying why not. Why not a
 * thrown error: Electron hands a handler's exception to the page as "Error invoking remote
 * method 'llmtray:getLogs': AdminRefusal: …", its own prefix and the error's class in front of
 * the sentence meant for the person, so the handlers answer every refusal as data and the
 * preload throws it as a plain Error with just the sentence, as the HTTP transport does.
 */
export type InvokeReply = { ok: true; answer: unknown } | { ok: false; message: string };

/** The preload's side: the answer, or an Error whose message is exactly main's sentence. */
export function unwrapInvokeReply(reply: unknown): unknown {
  const parsed = reply as InvokeReply | null;
  if (parsed !== null && typeof parsed === 'object' && parsed.ok === true) return parsed.answer;
  if (parsed !== null && typeof parsed === 'object' && parsed.ok === false && typeof parsed.message === 'string') throw new Error(parsed.message);
  throw new Error(`main answered an invoke with something that is not an InvokeReply: ${JSON.stringify(reply)}`);
}
