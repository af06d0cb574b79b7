import { describe, expect, it } from 'vitest';
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { createPreloadBridge, type IpcRendererPort } from '../../../electron/preload-bridge.js';
import { settle } from '../../support/fake-clock.js';
import { snapshot } from './snapshot-fixture.js';

type Listener = (event: unknown, ...args: unknown[]) => void;

/** An ipcRenderer whose invoke answers are resolved by the test, and whose pushes it sends. */
function fakeIpcRenderer() {
  const listeners = new Map<string, Set<Listener>>();
  const invocations: unknown[][] = [];
  const pending: Array<{ channel: string; resolve: (value: unknown) => void; reject: (error: Error) => void }> = [];
  const ipc: IpcRendererPort = {
    invoke: (channel, ...args) => {
      invocations.push([channel, ...args]);
      return new Promise((resolve, reject) => pending.push({ channel, resolve, reject }));
    },
    on: (channel, listener) => {
      if (!listeners.has(channel)) listeners.set(channel, new Set());
      listeners.get(channel)!.add(listener);
    },
    removeListener: (channel, listener) => {
      listeners.get(channel)?.delete(listener);
    },
  };
  return {
    ipc,
    invocations,
    /** Main's handler answering the call (an InvokeReply). */
    answer: async (value: unknown) => {
      pending.shift()!.resolve({ ok: true, answer: value });
      await settle();
    },
    /** Main's handler refusing the call with its sentence. */
    refuse: async (message: string) => {
      pending.shift()!.resolve({ ok: false, message });
      await settle();
    },
    fail: async (message: string) => {
      pending.shift()!.reject(new Error(message));
      await settle();
    },
    /** What main's webContents.send does: every listener gets (IpcRendererEvent, payload). */
    push: (channel: string, payload: unknown) => {
      for (const listener of listeners.get(channel) ?? []) listener({ sender: 'the IpcRendererEvent' }, payload);
    },
    listenerCount: (channel: string) => listeners.get(channel)?.size ?? 0,
  };
}

const at = (revision: number): Snapshot => snapshot([], { revision });
const updated = (revision: number): AdminEvent => ({ type: 'SnapshotUpdated', snapshot: at(revision) });
const quarantined: AdminEvent = { type: 'ModelQuarantined', modelId: 'kev', reason: 'unknown architecture', at: 1 };

describe('createPreloadBridge', () => {
  it('exposes exactly the DashboardBridge methods', () => {
    const bridge = createPreloadBridge(fakeIpcRenderer().ipc);
    expect(Object.keys(bridge).sort()).toEqual(['cancelPull', 'deletePull', 'getActivity', 'getLogs', 'getSnapshot', 'listPulls', 'offerRepo', 'runCommand', 'searchHub', 'startPull', 'subscribe']);
  });

  it('invokes each call\'s channel with its parameters and resolves with main\'s answer', async () => {
    const fake = fakeIpcRenderer();
    const bridge = createPreloadBridge(fake.ipc);
    const snap = bridge.getSnapshot();
    const result = bridge.runCommand({ id: 'demo-chat', command: 'pin' });
    const logs = bridge.getLogs({ id: 'demo-chat' });
    expect(fake.invocations).toEqual([
      ['llmtray:getSnapshot', {}],
      ['llmtray:runCommand', { id: 'demo-chat', command: 'pin' }],
      ['llmtray:getLogs', { id: 'demo-chat' }],
    ]);
    await fake.answer(at(3));
    await fake.answer({ ok: true, message: 'pinned' });
    await fake.answer({ modelId: 'demo-chat', lines: ['line'], next: 1 });
    expect(await snap).toEqual(at(3));
    expect(await result).toEqual({ ok: true, message: 'pinned' });
    expect(await logs).toEqual({ modelId: 'demo-chat', lines: ['line'], next: 1 });
  });

  it('throws main\'s refusal to the page with the sentence as the whole message', async () => {
    const fake = fakeIpcRenderer();
    const logs = createPreloadBridge(fake.ipc).getLogs({ id: 'nope' }).catch((error: unknown) => error);
    await fake.refuse("Unknown model 'nope'; the models are: demo-chat.");
    const refused = await logs;
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toBe("Unknown model 'nope'; the models are: demo-chat.");
  });

  it('subscribe delivers a snapshot first, then the events held while it was fetched, then live ones', async () => {
    const fake = fakeIpcRenderer();
    const seen: unknown[] = [];
    const connection: boolean[] = [];
    createPreloadBridge(fake.ipc).subscribe((event) => seen.push(event), (connected) => connection.push(connected));
    expect(fake.invocations).toEqual([['llmtray:getSnapshot', {}]]);
    fake.push('llmtray:event', updated(4)); // older than the answer below: dropped
    fake.push('llmtray:event', quarantined);
    fake.push('llmtray:event', updated(6));
    expect(seen).toEqual([]);
    await fake.answer(at(5));
    expect(seen).toEqual([updated(5), quarantined, updated(6)]);
    expect(connection).toEqual([true]);
    fake.push('llmtray:event', updated(7));
    expect(seen.at(-1)).toEqual(updated(7));
  });

  it('hands the page the event only, never the IpcRendererEvent', async () => {
    const fake = fakeIpcRenderer();
    const args: unknown[][] = [];
    createPreloadBridge(fake.ipc).subscribe((...received: unknown[]) => args.push(received));
    await fake.answer(at(1));
    fake.push('llmtray:event', quarantined);
    expect(args).toEqual([[updated(1)], [quarantined]]);
  });

  it('unsubscribe stops delivery, removes its listener, and is idempotent', async () => {
    const fake = fakeIpcRenderer();
    const seen: unknown[] = [];
    const unsubscribe = createPreloadBridge(fake.ipc).subscribe((event) => seen.push(event));
    await fake.answer(at(1));
    expect(fake.listenerCount('llmtray:event')).toBe(1);
    unsubscribe();
    unsubscribe();
    expect(fake.listenerCount('llmtray:event')).toBe(0);
    fake.push('llmtray:event', updated(2));
    expect(seen).toEqual([updated(1)]);
  });

  it('unsubscribing before the snapshot arrives delivers nothing', async () => {
    const fake = fakeIpcRenderer();
    const seen: unknown[] = [];
    const connection: boolean[] = [];
    createPreloadBridge(fake.ipc).subscribe((event) => seen.push(event), (c) => connection.push(c))();
    await fake.answer(at(1));
    expect(seen).toEqual([]);
    expect(connection).toEqual([]);
  });

  it('reports the stream lost when the snapshot cannot be fetched, and back with the next pushed snapshot', async () => {
    const fake = fakeIpcRenderer();
    const seen: unknown[] = [];
    const connection: boolean[] = [];
    createPreloadBridge(fake.ipc).subscribe((event) => seen.push(event), (c) => connection.push(c));
    await fake.fail('daemon stopped');
    expect(connection).toEqual([false]);
    fake.push('llmtray:event', quarantined); // no snapshot yet: the contract says a snapshot comes first
    fake.push('llmtray:event', updated(9));
    fake.push('llmtray:event', quarantined);
    expect(seen).toEqual([updated(9), quarantined]);
    expect(connection).toEqual([false, true]);
  });

  it('keeps delivering when a listener throws, and reports the throw', async () => {
    const fake = fakeIpcRenderer();
    const reported: unknown[] = [];
    const bridge = createPreloadBridge(fake.ipc, (error) => reported.push(error));
    let calls = 0;
    bridge.subscribe(() => {
      calls++;
      throw new Error('render failed');
    });
    await fake.answer(at(1));
    fake.push('llmtray:event', quarantined);
    expect(calls).toBe(2);
    expect(reported).toHaveLength(2);
  });
});
