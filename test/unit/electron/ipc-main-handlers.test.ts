import { describe, expect, it } from 'vitest';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { CommandResult, ModelCommand } from '../../../core/contracts/commands.js';
import type { AdminPort } from '../../../electron/admin-port.js';
import { ALL_INVOKE_CHANNELS, EVENT_CHANNEL } from '../../../electron/ipc-contract.js';
import {
  forwardAdminEvents,
  registerIpcHandlers,
  type IpcInvokeEventLike,
  type IpcMainPort,
  type PushTarget,
} from '../../../electron/ipc-main-handlers.js';
import { DASHBOARD_INDEX_URL, dashboardSenderCheck } from '../../../electron/window-security.js';
import { model, snapshot } from './snapshot-fixture.js';

const DASHBOARD_ID = 3;

function fakeIpcMain() {
  const handlers = new Map<string, (event: IpcInvokeEventLike, ...args: unknown[]) => unknown>();
  const ipcMain: IpcMainPort = {
    handle: (channel, listener) => {
      if (handlers.has(channel)) throw new Error(`second handler for ${channel}`);
      handlers.set(channel, listener);
    },
    removeHandler: (channel) => {
      handlers.delete(channel);
    },
  };
  /** What ipcRenderer.invoke would get: the handler's value, or its error. */
  const invoke = async (channel: string, event: IpcInvokeEventLike, ...args: unknown[]): Promise<unknown> => {
    const handler = handlers.get(channel);
    if (!handler) throw new Error(`no handler for ${channel}`);
    return handler(event, ...args);
  };
  return { ipcMain, handlers, invoke };
}

function fakeAdmin() {
  const calls: string[] = [];
  const current = snapshot([model('demo-chat', { state: 'ready', level: 'full' })]);
  const admin: AdminPort = {
    snapshot: () => current,
    run: async (command: ModelCommand, modelId: string): Promise<CommandResult> => {
      calls.push(`${command} ${modelId}`);
      return { ok: true, message: `${command} ${modelId}: done` };
    },
    logs: (modelId) =>
      modelId === 'demo-chat' ? { found: true, modelId: 'demo-chat', lines: ['load_tensors: done', 'server is listening'], next: 2 } : { found: false, message: `Unknown model '${modelId}'; the models are: demo-chat.` },
    subscribe: () => () => {},
  };
  return { admin, calls, current };
}

const fromDashboard: IpcInvokeEventLike = { sender: { id: DASHBOARD_ID }, senderFrame: { url: DASHBOARD_INDEX_URL } };

function setup() {
  const ipc = fakeIpcMain();
  const admin = fakeAdmin();
  const unregister = registerIpcHandlers({
    ipcMain: ipc.ipcMain,
    admin: admin.admin,
    isTrustedSender: dashboardSenderCheck(() => DASHBOARD_ID),
  });
  return { ...ipc, ...admin, unregister };
}

describe('registerIpcHandlers', () => {
  it('handles exactly the contract\'s channels and removes them again', () => {
    const { handlers, unregister } = setup();
    expect([...handlers.keys()].sort()).toEqual(['llmtray:getLogs', 'llmtray:getSnapshot', 'llmtray:runCommand']);
    expect([...ALL_INVOKE_CHANNELS].sort()).toEqual([...handlers.keys()].sort());
    unregister();
    expect(handlers.size).toBe(0);
  });

  it('answers the dashboard: snapshot, command, logs', async () => {
    const { invoke, calls, current } = setup();
    expect(await invoke('llmtray:getSnapshot', fromDashboard)).toBe(current);
    expect(await invoke('llmtray:runCommand', fromDashboard, 'pin', 'demo-chat')).toEqual({ ok: true, message: 'pin demo-chat: done' });
    expect(calls).toEqual(['pin demo-chat']);
    expect(await invoke('llmtray:getLogs', fromDashboard, 'demo-chat')).toEqual({ lines: ['load_tensors: done', 'server is listening'], next: 2 });
  });

  it('rejects logs of an unknown model with the admin\'s sentence', async () => {
    const { invoke } = setup();
    await expect(invoke('llmtray:getLogs', fromDashboard, 'nope')).rejects.toThrow("Unknown model 'nope'; the models are: demo-chat.");
  });

  it.each([
    ['another webContents', { sender: { id: 9 }, senderFrame: { url: DASHBOARD_INDEX_URL } }, "webContents 9 showing 'llmtray://dashboard/index.html'"],
    ['a foreign page in the dashboard window', { sender: { id: DASHBOARD_ID }, senderFrame: { url: 'https://evil.example/' } }, "webContents 3 showing 'https://evil.example/'"],
    ['a local file in the dashboard window', { sender: { id: DASHBOARD_ID }, senderFrame: { url: 'file:///home/ada/index.html' } }, "webContents 3 showing 'file:///home/ada/index.html'"],
    ['a frame that is gone', { sender: { id: DASHBOARD_ID }, senderFrame: null }, 'webContents 3 showing a frame that no longer exists'],
  ])('refuses %s on every channel, naming it, and runs nothing', async (_name, event, named) => {
    const { invoke, calls } = setup();
    for (const [channel, args] of [
      ['llmtray:getSnapshot', []],
      ['llmtray:runCommand', ['unload', 'demo-chat']],
      ['llmtray:getLogs', ['demo-chat']],
    ] as const) {
      await expect(invoke(channel, event, ...args)).rejects.toThrow(`${channel} refused: the request came from ${named}`);
    }
    expect(calls).toEqual([]);
  });

  it('refuses everyone while there is no dashboard window', async () => {
    const ipc = fakeIpcMain();
    registerIpcHandlers({ ipcMain: ipc.ipcMain, admin: fakeAdmin().admin, isTrustedSender: dashboardSenderCheck(() => null) });
    await expect(ipc.invoke('llmtray:getSnapshot', fromDashboard)).rejects.toThrow('not from the dashboard window');
  });

  it.each([
    ['an unknown command', ['rm', 'demo-chat'], "llmtray:runCommand: the command must be one of pin, unpin, load, unload, retry; got 'rm'"],
    ['a command that is not a string', [{ toString: 'pin' }, 'demo-chat'], 'the command must be one of pin, unpin, load, unload, retry; got an object'],
    ['an empty model id', ['pin', ''], "llmtray:runCommand: the model id must be a non-empty string; got ''"],
    ['a numeric model id', ['pin', 42], 'the model id must be a non-empty string; got number 42'],
    ['an absurdly long model id', ['pin', 'x'.repeat(10_000)], 'the model id is 10000 characters long; at most 256 are accepted'],
    ['a missing argument', ['pin'], 'llmtray:runCommand takes 2 argument(s), got 1'],
    ['an extra argument', ['pin', 'demo-chat', 'now'], 'llmtray:runCommand takes 2 argument(s), got 3'],
  ])('rejects runCommand with %s', async (_name, args, message) => {
    const { invoke, calls } = setup();
    await expect(invoke('llmtray:runCommand', fromDashboard, ...args)).rejects.toThrow(message);
    expect(calls).toEqual([]);
  });

  it('validates the other channels\' arguments too', async () => {
    const { invoke } = setup();
    await expect(invoke('llmtray:getSnapshot', fromDashboard, 'extra')).rejects.toThrow('llmtray:getSnapshot takes 0 argument(s), got 1');
    await expect(invoke('llmtray:getLogs', fromDashboard, null)).rejects.toThrow('llmtray:getLogs: the model id must be a non-empty string; got null');
  });
});

describe('forwardAdminEvents', () => {
  const event: AdminEvent = { type: 'ModelQuarantined', modelId: 'kev', reason: 'unknown architecture', at: 1 };

  function target(destroyed = false) {
    const sent: unknown[][] = [];
    const pushTarget: PushTarget = { send: (...args) => sent.push(args), isDestroyed: () => destroyed };
    return { sent, pushTarget };
  }

  it('pushes every event to the dashboard on the event channel', () => {
    const { sent, pushTarget } = target();
    forwardAdminEvents(() => pushTarget)(event);
    expect(sent).toEqual([[EVENT_CHANNEL, event]]);
  });

  it('drops events while there is no window or it is destroyed', () => {
    const { sent, pushTarget } = target(true);
    forwardAdminEvents(() => pushTarget)(event);
    forwardAdminEvents(() => null)(event);
    expect(sent).toEqual([]);
  });
});
