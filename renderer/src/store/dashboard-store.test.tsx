import { describe, expect, it } from 'vitest';
import { RecordingBridge } from '../test-fixtures/recording-bridge.js';
import { twoGpusWithOtherProgram } from '../test-fixtures/scenarios.js';
import { GiB, NOW } from '../test-fixtures/snapshot-builder.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { createDashboardStore, mergeTail, withSample } from './dashboard-store.js';

function at(snapshot: Snapshot, sampledAt: number, usedGiB: number): Snapshot {
  return { ...snapshot, budget: { ...snapshot.budget, sampledAt, usedBytes: usedGiB * GiB } };
}

describe('dashboard store', () => {
  it('takes the first snapshot from the subscription and replaces it on every SnapshotUpdated', () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    const store = createDashboardStore({ bridge });
    expect(store.getState().connection).toBe('connecting');
    store.getState().connect();
    expect(store.getState().snapshot?.models.map((m) => m.id)).toEqual(['qwen-14b', 'qwen-0.5b', 'llama-8b']);
    expect(store.getState().connection).toBe('open');
    const next = { ...twoGpusWithOtherProgram(), revision: 8, models: [] };
    bridge.emit({ type: 'SnapshotUpdated', snapshot: next });
    expect(store.getState().snapshot).toBe(next);
  });

  it('keeps a budget sample per new sampledAt, drops samples that left the window, and restarts on a clock going back', () => {
    const base = twoGpusWithOtherProgram();
    const bridge = new RecordingBridge(at(base, NOW, 1));
    const store = createDashboardStore({ bridge, historyWindowMs: 60_000 });
    store.getState().connect();
    bridge.emit({ type: 'SnapshotUpdated', snapshot: at(base, NOW + 10_000, 2) });
    bridge.emit({ type: 'SnapshotUpdated', snapshot: at(base, NOW + 10_000, 3) });
    bridge.emit({ type: 'SnapshotUpdated', snapshot: at(base, NOW + 50_000, 4) });
    expect(store.getState().history.map((s) => [s.at - NOW, s.usedBytes / GiB])).toEqual([[0, 1], [10_000, 3], [50_000, 4]]);
    bridge.emit({ type: 'SnapshotUpdated', snapshot: at(base, NOW + 90_000, 5) });
    // NOW+10s stays as the line's left edge (the window starts at NOW+30s); NOW is gone.
    expect(store.getState().history.map((s) => s.at - NOW)).toEqual([10_000, 50_000, 90_000]);
    bridge.emit({ type: 'SnapshotUpdated', snapshot: at(base, NOW, 6) });
    expect(store.getState().history.map((s) => s.at - NOW)).toEqual([0]);
  });

  it('appends LogAppended lines per model and keeps at most maxLogLines', () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    const store = createDashboardStore({ bridge, maxLogLines: 3 });
    store.getState().connect();
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', lines: ['a', 'b'] });
    bridge.emit({ type: 'LogAppended', modelId: 'llama-8b', lines: ['x'] });
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', lines: ['c', 'd'] });
    expect(store.getState().logs).toEqual({ 'qwen-14b': ['b', 'c', 'd'], 'llama-8b': ['x'] });
  });

  it('merges lines that arrive while a log tail is being fetched, without doubling them', async () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    let answer: (lines: string[]) => void = () => {};
    bridge.getLogs = () => new Promise((resolve) => (answer = (lines) => resolve({ modelId: 'qwen-14b', lines })));
    const store = createDashboardStore({ bridge });
    store.getState().connect();
    const loading = store.getState().loadLogs('qwen-14b');
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', lines: ['3', '4'] });
    answer(['1', '2', '3']);
    await loading;
    expect(store.getState().logs['qwen-14b']).toEqual(['1', '2', '3', '4']);
  });

  it('reports lost and restored connections, and keeps "unauthorized" until the stream is really back', () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    const store = createDashboardStore({ bridge });
    store.getState().connect();
    bridge.setConnected(false);
    expect(store.getState().connection).toBe('lost');
    expect(store.getState().snapshot).not.toBeNull();
    store.getState().setUnauthorized('no token');
    bridge.setConnected(false);
    expect(store.getState()).toMatchObject({ connection: 'unauthorized', connectionDetail: 'no token' });
    bridge.setConnected(true);
    expect(store.getState().connection).toBe('open');
  });

  it('runs one command per model at a time and turns each outcome into a notice', async () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    let finish: () => void = () => {};
    bridge.answer = (command, modelId) =>
      new Promise((resolve) => (finish = () => resolve({ ok: true, message: `Pinned ${modelId}.` })));
    const store = createDashboardStore({ bridge, now: () => NOW });
    const first = store.getState().runCommand('pin', 'llama-8b');
    await store.getState().runCommand('unload', 'llama-8b');
    expect(store.getState().pending).toEqual({ 'llama-8b': 'pin' });
    finish();
    await first;
    expect(bridge.commands).toEqual([{ command: 'pin', modelId: 'llama-8b' }]);
    expect(store.getState().pending).toEqual({});
    expect(store.getState().notices.map((n) => [n.tone, n.message])).toEqual([['ok', 'Pinned llama-8b.']]);

    bridge.answer = async () => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:9137');
    };
    await store.getState().runCommand('load', 'qwen-0.5b');
    expect(store.getState().notices.at(-1)).toMatchObject({ tone: 'error', message: 'Could not load qwen-0.5b: connect ECONNREFUSED 127.0.0.1:9137' });
  });

  it('stops receiving events once unsubscribed', () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    const store = createDashboardStore({ bridge });
    const stop = store.getState().connect();
    stop();
    expect(bridge.subscribed).toBe(false);
  });
});

describe('withSample and mergeTail', () => {
  it('replaces a sample with the same stamp', () => {
    expect(withSample([{ at: 1, usedBytes: 1, budgetBytes: 9 }], { at: 1, usedBytes: 2, budgetBytes: 9 }, 100)).toEqual([
      { at: 1, usedBytes: 2, budgetBytes: 9 },
    ]);
  });

  it('joins a tail and live lines by their longest overlap', () => {
    expect(mergeTail(['a', 'b'], ['b', 'c'])).toEqual(['a', 'b', 'c']);
    expect(mergeTail(['a', 'b'], ['a', 'b'])).toEqual(['a', 'b']);
    expect(mergeTail(['a', 'b'], ['c'])).toEqual(['a', 'b', 'c']);
    expect(mergeTail([], ['c'])).toEqual(['c']);
  });
});
