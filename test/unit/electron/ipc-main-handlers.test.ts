import { describe, expect, it } from 'vitest';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import { AdminRefusal, type AdminApi } from '../../../core/contracts/admin-routes.js';
import { ALL_INVOKE_CHANNELS, EVENT_CHANNEL, unwrapInvokeReply } from '../../../electron/ipc-contract.js';
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
  /** What the page gets through the preload: the handler's answer, or its refusal thrown. */
  const invoke = async (channel: string, event: IpcInvokeEventLike, ...args: unknown[]): Promise<unknown> => {
    const handler = handlers.get(channel);
    if (!handler) throw new Error(`no handler for ${channel}`);
    return unwrapInvokeReply(await handler(event, ...args));
  };
  return { ipcMain, handlers, invoke };
}

function fakeAdmin() {
  const calls: string[] = [];
  const current = snapshot([model('demo-chat', { state: 'ready', level: 'full' })]);
  const admin: AdminApi = {
    getSnapshot: async () => current,
    runCommand: async ({ id, command }) => {
      calls.push(`${command} ${id}`);
      return { ok: true, message: `${command} ${id}: done` };
    },
    getLogs: async ({ id }) => {
      if (id !== 'demo-chat') throw new AdminRefusal(404, 'unknown_model', `Unknown model '${id}'; the models are: demo-chat.`);
      return { modelId: id, lines: ['load_tensors: done', 'server is listening'], next: 2 };
    },
    // The pull calls go through the same handlers; these tests are about the handlers, not pulls.
    startPull: async ({ name }) => {
      throw new AdminRefusal(409, 'no_pulls', `not pulling ${name} here`);
    },
    listPulls: async () => [],
    cancelPull: async ({ name }) => {
      throw new AdminRefusal(404, 'no_such_pull', `No pull of ${name} is running`);
    },
    deletePull: async ({ name }) => {
      throw new AdminRefusal(404, 'not_pulled', `llmtray pulled no model ${name}`);
    },
    searchHub: async () => [],
    offerRepo: async ({ repo }) => ({ repo, quants: [] }),
    getActivity: async () => ({ requests: [], keep: 1000, keepBodiesBytes: 0 }),
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
    expect([...handlers.keys()].sort()).toEqual(['llmtray:cancelPull', 'llmtray:deletePull', 'llmtray:getActivity', 'llmtray:getLogs', 'llmtray:getSnapshot', 'llmtray:listPulls', 'llmtray:offerRepo', 'llmtray:runCommand', 'llmtray:searchHub', 'llmtray:startPull']);
    expect([...ALL_INVOKE_CHANNELS].sort()).toEqual([...handlers.keys()].sort());
    unregister();
    expect(handlers.size).toBe(0);
  });

  it('answers the dashboard: snapshot, command, logs, each with its parameters as the one argument', async () => {
    const { invoke, calls, current } = setup();
    expect(await invoke('llmtray:getSnapshot', fromDashboard, {})).toBe(current);
    expect(await invoke('llmtray:runCommand', fromDashboard, { id: 'demo-chat', command: 'pin' })).toEqual({ ok: true, message: 'pin demo-chat: done' });
    expect(calls).toEqual(['pin demo-chat']);
    expect(await invoke('llmtray:getLogs', fromDashboard, { id: 'demo-chat' })).toEqual({ modelId: 'demo-chat', lines: ['load_tensors: done', 'server is listening'], next: 2 });
  });

  it('answers a refusal as data with just the sentence, so Electron adds no prefix and no class name in front of it', async () => {
    const { handlers } = setup();
    const reply = await handlers.get('llmtray:getLogs')!(fromDashboard, { id: 'nope' });
    expect(reply).toEqual({ ok: false, message: "Unknown model 'nope'; the models are: demo-chat." });
  });

  it('rejects logs of an unknown model with the admin\'s sentence', async () => {
    const { invoke } = setup();
    await expect(invoke('llmtray:getLogs', fromDashboard, { id: 'nope' })).rejects.toThrow("Unknown model 'nope'; the models are: demo-chat.");
  });

  it.each([
    ['another webContents', { sender: { id: 9 }, senderFrame: { url: DASHBOARD_INDEX_URL } }, "webContents 9 showing 'llmtray://dashboard/index.html'"],
    ['a foreign page in the dashboard window', { sender: { id: DASHBOARD_ID }, senderFrame: { url: 'https://evil.example/' } }, "webContents 3 showing 'https://evil.example/'"],
    ['a local file in the dashboard window', { sender: { id: DASHBOARD_ID }, senderFrame: { url: 'file:///home/ada/index.html' } }, "webContents 3 showing 'file:///home/ada/index.html'"],
    ['a frame that is gone', { sender: { id: DASHBOARD_ID }, senderFrame: null }, 'webContents 3 showing a frame that no longer exists'],
  ])('refuses %s on every channel, naming it, and runs nothing', async (_name, event, named) => {
    const { invoke, calls } = setup();
    for (const [channel, args] of [
      ['llmtray:getSnapshot', [{}]],
      ['llmtray:runCommand', [{ id: 'demo-chat', command: 'unload' }]],
      ['llmtray:getLogs', [{ id: 'demo-chat' }]],
      ['llmtray:startPull', [{ name: 'hf.co/o/r:Q4_K_M' }]],
      ['llmtray:listPulls', [{}]],
      ['llmtray:cancelPull', [{ name: 'hf.co/o/r:Q4_K_M' }]],
      ['llmtray:deletePull', [{ name: 'hf.co/o/r:Q4_K_M' }]],
      ['llmtray:searchHub', [{ query: 'qwen' }]],
      ['llmtray:offerRepo', [{ repo: 'o/r' }]],
    ] as const) {
      await expect(invoke(channel, event, ...args)).rejects.toThrow(`${channel} refused: the request came from ${named}`);
    }
    expect(calls).toEqual([]);
  });

  it('refuses everyone while there is no dashboard window', async () => {
    const ipc = fakeIpcMain();
    registerIpcHandlers({ ipcMain: ipc.ipcMain, admin: fakeAdmin().admin, isTrustedSender: dashboardSenderCheck(() => null) });
    await expect(ipc.invoke('llmtray:getSnapshot', fromDashboard, {})).rejects.toThrow('not from the dashboard window');
  });

  it.each([
    ['an unknown command', [{ id: 'demo-chat', command: 'rm' }], "runCommand: command: expected one of pin, unpin, load, unload, retry, got 'rm'"],
    ['a command that is not a string', [{ id: 'demo-chat', command: { toString: 'pin' } }], 'runCommand: command: expected one of pin, unpin, load, unload, retry, got an object'],
    ['an empty model id', [{ id: '', command: 'pin' }], "runCommand: id: expected a model id or alias (non-empty text), got ''"],
    ['a numeric model id', [{ id: 42, command: 'pin' }], 'runCommand: id: expected a model id or alias (non-empty text), got number 42'],
    ['an absurdly long model id', [{ id: 'x'.repeat(10_000), command: 'pin' }], 'runCommand: id: expected a model id or alias of at most 256 characters'],
    ['a missing parameter', [{ command: 'pin' }], 'runCommand: id: expected a model id or alias (non-empty text), got nothing'],
    ['a parameter it does not take', [{ id: 'demo-chat', command: 'pin', now: true }], "runCommand has no parameter 'now'; it takes id, command"],
    ['positional arguments', ['pin', 'demo-chat'], 'llmtray:runCommand takes 1 argument (the call\'s parameters), got 2'],
    ['a list for the parameters', [['pin', 'demo-chat']], 'runCommand takes its parameters as an object; got a list'],
  ])('rejects runCommand with %s, naming what was wrong', async (_name, args, message) => {
    const { invoke, calls } = setup();
    await expect(invoke('llmtray:runCommand', fromDashboard, ...args)).rejects.toThrow(message);
    expect(calls).toEqual([]);
  });

  it('checks the other channels\' arguments with the same route table', async () => {
    const { invoke } = setup();
    await expect(invoke('llmtray:getSnapshot', fromDashboard, {}, 'extra')).rejects.toThrow('llmtray:getSnapshot takes 1 argument');
    await expect(invoke('llmtray:getSnapshot', fromDashboard, { id: 'x' })).rejects.toThrow("getSnapshot has no parameter 'id'; it takes none");
    await expect(invoke('llmtray:getLogs', fromDashboard, { id: null })).rejects.toThrow('getLogs: id: expected a model id or alias (non-empty text), got null');
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
