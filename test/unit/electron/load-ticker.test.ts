// The tray's words during a load, as main.ts wires them: each tick rebuilds the menu from the
// latest snapshot with the time then (buildTrayMenu, the real one), on a fake clock.
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { createLoadTicker, LOAD_TICK_MS } from '../../../electron/load-ticker.js';
import { buildTrayMenu, type TrayActions, type TrayMenuItem } from '../../../electron/tray-menu.js';
import { FakeClock } from '../../support/fake-clock.js';
import { model, NOW, snapshot } from './snapshot-fixture.js';

const noActions: TrayActions = { copyText: () => {}, runCommand: () => {}, openDashboard: () => {}, setStartAtLogin: () => {}, quit: () => {} };

const loadingChat = (fraction: number | null, expectedMs: number | null = null): Snapshot =>
  snapshot([model('demo-chat', { state: 'loading', level: 'full' }, { loading: { fraction, startedAt: NOW, expectedMs } })]);
const readyChat = snapshot([model('demo-chat', { state: 'ready', level: 'full' })]);

/** The tray as main.ts runs it: a ticker whose tick rebuilds the menu; the model's label of each rebuild. */
function tray(clock: FakeClock) {
  let latest: Snapshot = readyChat;
  const labels: string[] = [];
  const ticker = createLoadTicker(() => {
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

describe('createLoadTicker: the tray during a load', () => {
  it('rebuilds the menu each second while a snapshot shows a load, so its seconds and estimate move', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    // An engine that reports no fraction, estimated from a 4 s last load: no snapshot comes for it.
    t.receive(loadingChat(null, 4_000));
    await clock.advance(3 * LOAD_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — loading ~25 %, 1.0 s', 'demo-chat — loading ~50 %, 2.0 s', 'demo-chat — loading ~75 %, 3.0 s']);
  });

  it("shows the engine's latest fraction at the next tick", async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    t.receive(loadingChat(0.1));
    await clock.advance(LOAD_TICK_MS);
    t.receive(loadingChat(0.4));
    t.receive(loadingChat(0.45));
    await clock.advance(LOAD_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — loading 10 %, 1.0 s', 'demo-chat — loading 45 %, 2.0 s']);
    // Snapshots during a load keep one timer, not one each.
    expect(clock.pendingDelays()).toEqual([LOAD_TICK_MS]);
  });

  it('stops once a snapshot shows no load, sets no timer while none does, and starts again with the next load', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    t.receive(readyChat);
    expect(clock.pendingDelays()).toEqual([]);
    t.receive(loadingChat(0.5));
    await clock.advance(LOAD_TICK_MS);
    t.receive(readyChat);
    expect(clock.pendingDelays()).toEqual([]);
    await clock.advance(10 * LOAD_TICK_MS);
    expect(t.labels).toEqual(['demo-chat — loading 50 %, 1.0 s']);

    t.receive(loadingChat(0.2));
    await clock.advance(LOAD_TICK_MS);
    expect(t.labels).toHaveLength(2);
  });

  it('ticks no more after stop, whatever comes', async () => {
    const clock = new FakeClock(NOW);
    const t = tray(clock);
    t.receive(loadingChat(0.5));
    t.ticker.stop();
    t.receive(loadingChat(0.6));
    await clock.advance(5 * LOAD_TICK_MS);
    expect(t.labels).toEqual([]);
    expect(clock.pendingDelays()).toEqual([]);
  });
});
