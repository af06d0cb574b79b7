// Main's side of the IPC contract: one handler per invoke channel, each of which checks who is
// asking and what it was given before the admin service sees anything.
//
// Why check the sender on every call: any frame that ends up in any of our webContents (an
// iframe, a page navigated away despite the guards, a future second window) can call
// ipcRenderer through a preload. Only the dashboard window's own main frame, showing our own
// files, may run commands. Why validate arguments at run time when the types already agree:
// the types bind our renderer, not whatever else manages to send on the channel; a compromised
// page is exactly the caller that ignores them.
import { MODEL_COMMANDS, isModelCommand, type ModelCommand } from '../core/contracts/commands.js';
import type { AdminEvent } from '../core/contracts/admin-events.js';
import type { AdminPort } from './admin-port.js';
import {
  ALL_INVOKE_CHANNELS,
  EVENT_CHANNEL,
  type InvokeArgs,
  type InvokeChannel,
  type InvokeResult,
  type PushChannel,
  type PushChannelMap,
} from './ipc-contract.js';

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

/** Longer than any id the catalog makes (slugs of file names), short enough to refuse junk. */
export const MAX_MODEL_ID_LENGTH = 256;

type Handlers = { [C in InvokeChannel]: (...args: InvokeArgs<C>) => Promise<InvokeResult<C>> | InvokeResult<C> };
type Validators = { [C in InvokeChannel]: (args: readonly unknown[]) => InvokeArgs<C> };

export interface IpcHandlerOptions {
  ipcMain: IpcMainPort;
  admin: AdminPort;
  /** Whether the event comes from the dashboard window's main frame showing our files. Never blocks. */
  isTrustedSender: (event: IpcInvokeEventLike) => boolean;
}

/**
 * Registers a handler on every invoke channel. Returns the function that removes them again
 * (idempotent). A foreign sender or a bad argument rejects the invoke with an Error whose
 * message names the channel and what was wrong; Electron hands that message to the caller.
 */
export function registerIpcHandlers(options: IpcHandlerOptions): () => void {
  const { ipcMain, admin, isTrustedSender } = options;
  const handlers: Handlers = {
    'llmtray:getSnapshot': () => admin.snapshot(),
    'llmtray:runCommand': (command, modelId) => admin.run(command, modelId),
    'llmtray:getLogs': (modelId) => {
      const found = admin.logs(modelId);
      if (!found.found) throw new Error(found.message);
      return { lines: found.lines, next: found.next };
    },
  };
  const register = <C extends InvokeChannel>(channel: C): void => {
    ipcMain.handle(channel, (event, ...args) => {
      if (!isTrustedSender(event)) {
        const from = event.senderFrame === null ? 'a frame that no longer exists' : `'${event.senderFrame.url}'`;
        throw new Error(`${channel} refused: the request came from webContents ${event.sender.id} showing ${from}, not from the dashboard window`);
      }
      return handlers[channel](...VALIDATORS[channel](args));
    });
  };
  for (const channel of ALL_INVOKE_CHANNELS) register(channel);
  return () => {
    for (const channel of ALL_INVOKE_CHANNELS) ipcMain.removeHandler(channel);
  };
}

const VALIDATORS: Validators = {
  'llmtray:getSnapshot': (args) => {
    expectArgumentCount('llmtray:getSnapshot', args, 0);
    return [];
  },
  'llmtray:runCommand': (args) => {
    expectArgumentCount('llmtray:runCommand', args, 2);
    return [commandArgument('llmtray:runCommand', args[0]), modelIdArgument('llmtray:runCommand', args[1])];
  },
  'llmtray:getLogs': (args) => {
    expectArgumentCount('llmtray:getLogs', args, 1);
    return [modelIdArgument('llmtray:getLogs', args[0])];
  },
};

function expectArgumentCount(channel: InvokeChannel, args: readonly unknown[], count: number): void {
  if (args.length !== count) throw new Error(`${channel} takes ${count} argument(s), got ${args.length}`);
}

function commandArgument(channel: InvokeChannel, value: unknown): ModelCommand {
  if (isModelCommand(value)) return value;
  throw new Error(`${channel}: the command must be one of ${MODEL_COMMANDS.join(', ')}; got ${describe(value)}`);
}

function modelIdArgument(channel: InvokeChannel, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new Error(`${channel}: the model id must be a non-empty string; got ${describe(value)}`);
  }
  if (value.length > MAX_MODEL_ID_LENGTH) {
    throw new Error(`${channel}: the model id is ${value.length} characters long; at most ${MAX_MODEL_ID_LENGTH} are accepted`);
  }
  return value;
}

/** A short, safe rendering of an unexpected value for an error message. */
function describe(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`;
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
