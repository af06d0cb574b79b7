// Main's side of the IPC contract: one handler per invoke channel, each of which checks who is
// asking and what it was given before the admin service sees anything.
//
// Why check the sender on every call: any frame that ends up in any of our webContents (an
// iframe, a page navigated away despite the guards, a future second window) can call
// ipcRenderer through a preload. Only the dashboard window's own main frame, showing our own
// files, may run commands. Why validate arguments at run time when the types already agree:
// the types bind our renderer, not whatever else manages to send on the channel; a compromised
// page is exactly the caller that ignores them.
import type { AdminEvent } from '../core/contracts/admin-events.js';
import { ADMIN_CALL_NAMES, callAdmin, parseParams, type AdminApi, type AdminCallName } from '../core/contracts/admin-routes.js';
import { EVENT_CHANNEL, invokeChannel, type InvokeReply, type PushChannel, type PushChannelMap } from './ipc-contract.js';
import { errorMessage } from '../core/contracts/error-message.js';

/** The parts of Electron's IpcMainInvokeEvent a handler reads. */
export interface IpcInvokeEventLike {
  sender: { id: number };
  senderFrame: { url: string } | null;
}

/** The parts of Electron's ipcMain used here; Electron's own object satisfies it. */
export interface IpcMainPort {
  handle(channel: string, listener: (event: IpcInvokeEventLike, ...args: unknown[]) => unknown): void;
  removeHandler(channel: string): void;
}

/** The parts of Electron's WebContents used to push events. */
export interface PushTarget {
  send(channel: string, ...args: unknown[]): void;
  isDestroyed(): boolean;
}

export interface IpcHandlerOptions {
  ipcMain: IpcMainPort;
  /** The daemon's admin service (AdminService implements AdminApi). */
  admin: AdminApi;
  /** Whether the event comes from the dashboard window's main frame showing our files. Never blocks. */
  isTrustedSender: (event: IpcInvokeEventLike) => boolean;
}

/**
 * Registers a handler on every call's invoke channel. Returns the function that removes them
 * again (idempotent). Each answers an InvokeReply: the call's answer, or, for a foreign sender,
 * a bad argument or the admin's own refusal, the sentence that names the channel or the call and
 * what was wrong (the same parameter check and sentence as the HTTP transport's), which the
 * preload throws to the page as it is.
 */
export function registerIpcHandlers(options: IpcHandlerOptions): () => void {
  const { ipcMain, admin, isTrustedSender } = options;
  const register = (name: AdminCallName): void => {
    const channel = invokeChannel(name);
    const answer = async (event: IpcInvokeEventLike, args: unknown[]): Promise<unknown> => {
      if (!isTrustedSender(event)) {
        const from = event.senderFrame === null ? 'a frame that no longer exists' : `'${event.senderFrame.url}'`;
        throw new Error(`${channel} refused: the request came from webContents ${event.sender.id} showing ${from}, not from the dashboard window`);
      }
      if (args.length !== 1) throw new Error(`${channel} takes 1 argument (the call's parameters), got ${args.length}`);
      return callAdmin(admin, name, parseParams(name, args[0]));
    };
    ipcMain.handle(channel, (event, ...args): Promise<InvokeReply> =>
      answer(event, args).then(
        (value) => ({ ok: true, answer: value }),
        (error: unknown) => ({ ok: false, message: errorMessage(error) }),
      ),
    );
  };
  for (const name of ADMIN_CALL_NAMES) register(name);
  return () => {
    for (const name of ADMIN_CALL_NAMES) ipcMain.removeHandler(invokeChannel(name));
  };
}

/** Sends one push message, typed by the contract. Does nothing to a destroyed target. */
export function push<C extends PushChannel>(target: PushTarget, channel: C, payload: PushChannelMap[C]): void {
  if (!target.isDestroyed()) target.send(channel, payload);
}

/**
 * An admin listener that forwards every event to the dashboard window, when there is one.
 * Why forward while the window is hidden: the renderer's store then stays current, and showing
 * the window never shows a stale picture first. Never throws.
 */
export function forwardAdminEvents(target: () => PushTarget | null): (event: AdminEvent) => void {
  return (event) => {
    const current = target();
    if (current !== null) push(current, EVENT_CHANNEL, event);
  };
}
