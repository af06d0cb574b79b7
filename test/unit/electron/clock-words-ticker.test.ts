// The tray's words during a load and a retry's wait, as main.ts wires them: each tick rebuilds the menu from the
// latest snapshot with the time then (buildTrayMenu, the real one), on a fake clock.
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { createClockWordsTicker, CLOCK_TICK_MS } from '../../../electron/clock-words-ticker.js';
import { buildTrayMenu, type TrayActions, type TrayMenuItem } from '../../../electron/tray-menu.js';
import { FakeClock } from '../../support/fake-clock.js';
import { model, NOW, snapshot } from './snapshot-fixture.js';

const noActions: TrayActions = { copyText: () => {}, runCommand: () => {}, openDashboard: () => {}, cancelPull: () => {}, setStartAtLogin: () => {}, quit: () => {} };

const loadingChat = (fraction: number | null, expectedMs: number | null = null): Snapshot =>
  snapshot([model('demo-chat', { state: 'loading', level: 'full' }, { loading: { fraction, startedAt: NOW, expectedMs } })]);
const readyChat = snapshot([model('demo-chat', { state: 'ready', level: 'full' })]);

/** The tray as main.ts runs it: a ticker whose tick rebuilds the menu; the model's label of each rebuild. */
function tray(clock: FakeClock) {
  let latest: Snapshot = readyChat;
  const labels: string[] = [];
  const ticker = createClockWordsTicker(() => {
    const items = buildTrayMenu(latest, noActions, { startAtLogin: false, now: clock.now() });
    const item = items.find((i): i is Extract<TrayMenuItem, { label: string }> => i.type !== 'separator' && i.label.startsWith('demo-chat — '));
    labels.push(item?.label ?? 'no demo-chat item');
  }, clock);
  return {
    labels,
    ticker,
    /** A snapshot arrives (SnapshotUpdated). */
    receive(next: Snapshot): void {
      latest = next;
      ticker.follow(next);
    },
  };
}

describe('createClockWordsTicker: the tray during a load and a retry wait', () => {
  it('rebuilds the menu each second while a snapshot shows a load, so its seconds and estimate move', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    // An engine that reports no fraction, estimated from a 4 s last load: no snapshot comes for it.
    t.receive(loadingChat(null, 4_000));
    await clock.advance(3 * CLOCK_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — loading ~25 %, 1.0 s', 'demo-chat — loading ~50 %, 2.0 s', 'demo-chat — loading ~75 %, 3.0 s']);
  });

  it("shows the engine's latest fraction at the next tick", async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    t.receive(loadingChat(0.1));
    await clock.advance(CLOCK_TICK_MS);
    t.receive(loadingChat(0.4));
    t.receive(loadingChat(0.45));
    await clock.advance(CLOCK_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — loading 10 %, 1.0 s', 'demo-chat — loading 45 %, 2.0 s']);
    // Snapshots during a load keep one timer, not one each.
    expect(clock.pendingDelays()).toEqual([CLOCK_TICK_MS]);
  });

  it('stops once a snapshot shows no load, sets no timer while none does, and starts again with the next load', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    t.receive(readyChat);
    expect(clock.pendingDelays()).toEqual([]);
    t.receive(loadingChat(0.5));
    await clock.advance(CLOCK_TICK_MS);
    t.receive(readyChat);
    expect(clock.pendingDelays()).toEqual([]);
    await clock.advance(10 * CLOCK_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — loading 50 %, 1.0 s']);

    t.receive(loadingChat(0.2));
    await clock.advance(CLOCK_TICK_MS);
    expect(t.labels).toHaveLength(2);
  });

  it('counts a retry down each second, and stops once the retry is no longer awaited', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    const retrying = snapshot([
      model('demo-chat', {
        state: 'failed',
        recovery: { kind: 'crash', attempts: 1, nextAction: 'retry', nextAttemptAt: NOW + 3_000, lastError: 'killed by SIGKILL' },
      }),
    ]);
    t.receive(retrying);
    await clock.advance(2 * CLOCK_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — failed: crashed, retrying in 2 s', 'demo-chat — failed: crashed, retrying in 1 s']);
    // Failed with nothing scheduled (waiting for memory, say): nothing moves, no timer.
    t.receive(snapshot([model('demo-chat', { state: 'failed', recovery: { kind: 'crash', attempts: 1, nextAction: null, nextAttemptAt: null, lastError: null } })]));
    expect(clock.pendingDelays()).toEqual([]);
  });

  it('ticks no more after stop, whatever comes', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    t.receive(loadingChat(0.5));
    t.ticker.stop();
    t.receive(loadingChat(0.6));
    await clock.advance(5 * CLOCK_TICK_MS);
    expect(t.labels).toEqual([]);
    expect(clock.pendingDelays()).toEqual([]);
  });
});
