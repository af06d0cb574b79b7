import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RecordingBridge } from '../../../renderer/src/test-fixtures/recording-bridge.js';
import { twoGpusWithOtherProgram } from '../../../renderer/src/test-fixtures/scenarios.js';
import { GiB, NOW } from '../../../renderer/src/test-fixtures/snapshot-builder.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import type { LogTail } from '../../../core/contracts/log-lines.js';
import { createDashboardStore, withSample } from '../../../renderer/src/store/dashboard-store.js';

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

  it('appends LogAppended batches per model, keeps at most maxLogLines, and marks lines the daemon left out', () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    const store = createDashboardStore({ bridge, maxLogLines: 4 });
    store.getState().connect();
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 0, lines: ['a', 'b'] });
    bridge.emit({ type: 'LogAppended', modelId: 'llama-8b', first: 7, lines: ['x'] });
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 2, lines: ['c', 'd'] });
    expect(store.getState().logs).toEqual({ 'qwen-14b': ['a', 'b', 'c', 'd'], 'llama-8b': ['x'] });
    // Positions 4 to 40 were over the daemon's rate: one marker with the count, then the newest lines.
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 41, lines: ['y', 'z'] });
    expect(store.getState().logs['qwen-14b']).toEqual(['d', '… 37 lines dropped', 'y', 'z']);
    expect(store.getState().logNext).toEqual({ 'qwen-14b': 43, 'llama-8b': 8 });
  });

  it('places batches that arrive during a tail fetch by position: a repeated line is neither lost nor doubled', async () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    let answer: (tail: LogTail) => void = () => {};
    bridge.getLogs = () => new Promise((resolve) => (answer = (tail) => resolve({ modelId: 'qwen-14b', ...tail })));
    const store = createDashboardStore({ bridge });
    store.getState().connect();

    // The daemon read its tail before it logged the second 'idle': the batch holds a new line
    // that equals the tail's last one. Matching text would have taken it for the overlap.
    let loading = store.getState().loadLogs('qwen-14b');
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 2, lines: ['idle'] });
    answer({ lines: ['ready', 'idle'], next: 2 });
    await loading;
    expect(store.getState().logs['qwen-14b']).toEqual(['ready', 'idle', 'idle']);

    // Now it read the tail after logging the batch's lines: they are in it already.
    loading = store.getState().loadLogs('qwen-14b');
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 3, lines: ['idle', 'slot 0 done'] });
    answer({ lines: ['ready', 'idle', 'idle', 'idle', 'slot 0 done'], next: 5 });
    await loading;
    expect(store.getState().logs['qwen-14b']).toEqual(['ready', 'idle', 'idle', 'idle', 'slot 0 done']);
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 5, lines: ['idle'] });
    expect(store.getState().logs['qwen-14b']).toEqual(['ready', 'idle', 'idle', 'idle', 'slot 0 done', 'idle']);
  });

  it('ends up with exactly the daemon\'s log, however batches and the tail fetch interleave', async () => {
    // The daemon's log (few distinct lines, so text repeats), cut into batches that the store
    // hears before, during and after one tail fetch; the daemon reads the tail at any moment
    // after the batches heard before the fetch were written.
    const scenario = fc
      .array(fc.constantFrom('idle', 'slot', 'done'), { minLength: 1, maxLength: 25 })
      .chain((log) =>
        fc.record({
          log: fc.constant(log),
          cuts: fc.uniqueArray(fc.integer({ min: 1, max: log.length }), { maxLength: 8 }).map((c) => [...c].sort((a, b) => a - b)),
          from: fc.integer({ min: 0, max: log.length - 1 }),
          fetchStarts: fc.nat(),
          fetchTakes: fc.nat(),
          readAt: fc.nat(),
        }),
      );
    await fc.assert(
      fc.asyncProperty(scenario, async ({ log, cuts, from, fetchStarts, fetchTakes, readAt }) => {
        const bounds = [from, ...cuts.filter((c) => c > from), log.length].filter((b, i, all) => i === 0 || b > all[i - 1]!);
        const batches = bounds.slice(0, -1).map((first, i) => ({ first, lines: log.slice(first, bounds[i + 1]) }));
        const startAt = fetchStarts % (batches.length + 1);
        const endAt = startAt + (fetchTakes % (batches.length - startAt + 1));
        const writtenBeforeFetch = startAt === 0 ? from : bounds[startAt]!;
        const read = writtenBeforeFetch + (readAt % (log.length - writtenBeforeFetch + 1));

        const bridge = new RecordingBridge(twoGpusWithOtherProgram());
        let answer: (tail: LogTail) => void = () => {};
        bridge.getLogs = () => new Promise((resolve) => (answer = (tail) => resolve({ modelId: 'qwen-14b', ...tail })));
        const store = createDashboardStore({ bridge, maxLogLines: 100 });
        store.getState().connect();
        const emit = (i: number) => bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', ...batches[i]! });
        for (let i = 0; i < startAt; i++) emit(i);
        const loading = store.getState().loadLogs('qwen-14b');
        for (let i = startAt; i < endAt; i++) emit(i);
        answer({ lines: log.slice(0, read), next: read });
        await loading;
        for (let i = endAt; i < batches.length; i++) emit(i);
        expect(store.getState().logs['qwen-14b']).toEqual(log);
      }),
    );
  });

  it('forgets the logs of a daemon that restarted, whose positions start again at 0', () => {
    const bridge = new RecordingBridge(twoGpusWithOtherProgram());
    const store = createDashboardStore({ bridge });
    store.getState().connect();
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 0, lines: ['old 0', 'old 1', 'old 2'] });
    bridge.emit({ type: 'SnapshotUpdated', snapshot: { ...twoGpusWithOtherProgram(), revision: 9 } });
    expect(store.getState().logs['qwen-14b']).toHaveLength(3);
    bridge.emit({ type: 'SnapshotUpdated', snapshot: { ...twoGpusWithOtherProgram(), startedAt: NOW + 60_000, revision: 1 } });
    bridge.emit({ type: 'LogAppended', modelId: 'qwen-14b', first: 0, lines: ['new 0'] });
    expect(store.getState().logs['qwen-14b']).toEqual(['new 0']);
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

describe('withSample', () => {
  it('replaces a sample with the same stamp', () => {
    expect(withSample([{ at: 1, usedBytes: 1, budgetBytes: 9 }], { at: 1, usedBytes: 2, budgetBytes: 9 }, 100)).toEqual([
      { at: 1, usedBytes: 2, budgetBytes: 9 },
    ]);
  });
});
