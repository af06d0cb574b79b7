// The load-progress feed between the supervisor's notification and the real admin service, on a
// fake clock: what a subscriber (the dashboard's event stream, the tray) is sent while a model
// loads, how often, and that nothing ticks once the load is over or when none runs.
import { describe, expect, it } from 'vitest';
import { AdminService } from '../../../core/admin/admin-service.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { feedLoadProgress, LOAD_PROGRESS_REPUBLISH_MS } from '../../../core/daemon/load-progress-feed.js';
import type { LoadFraction } from '../../../core/engine/supervisor/supervisor.js';
import { Emitter } from '../../../core/common/emitter.js';
import { FakeClock } from '../../support/fake-clock.js';
import { fixtureModel, fixtureSnapshot } from '../../support/fixture-snapshot.js';

/** One model's load as the supervisor reports it: its fraction while loading, null once ready. */
class FakeLoad {
  readonly progress = new Emitter<LoadFraction>("the fake supervisor's load progress");
  readonly onLoadProgress = this.progress.event;
  fraction: number | null = null;
  loading = true;

  /** The engine reported a new fraction: the supervisor stores it, then tells its listeners. */
  report(fraction: number): void {
    this.fraction = fraction;
    this.progress.fire({ modelId: 'demo-chat', fraction });
  }
}

function setup() {
  const clock = new FakeClock();
  const load = new FakeLoad();
  const startedAt = clock.now();
  // The snapshot as the daemon builds it: read from the supervisor's state when it is built.
  const build = (): Omit<Snapshot, 'revision'> => {
    const base = fixtureSnapshot();
    const model = fixtureModel('demo-chat', {
      status: { ...fixtureModel('x').status, modelId: 'demo-chat', state: load.loading ? 'loading' : 'ready', phase: load.loading ? 'loading' : 'serving', level: 'full' },
      loading: load.loading ? { fraction: load.fraction, startedAt, expectedMs: null } : null,
    });
    return { ...base, models: [model] };
  };
  const unused = async () => ({ ok: true as const, message: 'not used here' });
  const commands = { pin: unused, unpin: unused, load: unused, unload: unused, retry: unused };
  const admin = new AdminService({ buildSnapshot: build, commands, logs: () => undefined, activity: () => ({ requests: [], keep: 1, keepBodiesBytes: 0 }), clock });
  const sent: { at: number; fraction: number | null; state: string }[] = [];
  admin.subscribe((event) => {
    if (event.type !== 'SnapshotUpdated') return;
    const model = event.snapshot.models[0]!;
    sent.push({ at: clock.now(), fraction: model.loading?.fraction ?? null, state: model.status.state });
  });
  sent.length = 0; // The subscription's own first snapshot is not the feed's doing.
  const stop = feedLoadProgress({ supervisor: load, changed: () => admin.changed(), clock });
  return { clock, load, sent, stop };
}

describe('feedLoadProgress', () => {
  it("republishes the snapshot with the engine's new fraction at once, then at most once per interval, the latest always", async () => {
    const { clock, load, sent } = setup();
    load.report(0.1);
    await clock.advance(0);
    expect(sent).toEqual([{ at: clock.now(), fraction: 0.1, state: 'loading' }]);

    // Readiness asks fast at first: four fractions within the interval are one trailing snapshot with the last.
    for (const fraction of [0.2, 0.3, 0.4, 0.5]) {
      await clock.advance(100);
      load.report(fraction);
    }
    expect(sent).toHaveLength(1);
    await clock.advance(LOAD_PROGRESS_REPUBLISH_MS - 400);
    expect(sent.map((s) => s.fraction)).toEqual([0.1, 0.5]);

    // A long load reporting every 50 ms: a subscriber's latest snapshot is never older than the
    // interval (each is built as it goes out, with the fraction a waiting stream's comment says
    // then), and never two come within it.
    for (let i = 1; i <= 60; i++) {
      await clock.advance(50);
      load.report(0.5 + i / 200);
      expect(clock.now() - sent.at(-1)!.at).toBeLessThanOrEqual(LOAD_PROGRESS_REPUBLISH_MS);
    }
    const gaps = sent.slice(1).map((s, i) => s.at - sent[i]!.at);
    expect(Math.min(...gaps)).toBeGreaterThanOrEqual(LOAD_PROGRESS_REPUBLISH_MS);
    // 3 s of changes make about six snapshots, not sixty.
    expect(sent.length).toBeGreaterThanOrEqual(2 + 5);
    expect(sent.length).toBeLessThanOrEqual(2 + 7);
    await clock.advance(LOAD_PROGRESS_REPUBLISH_MS);
    expect(sent.at(-1)!.fraction).toBe(load.fraction);
  });

  it('sets no timer when nothing loads, and none once the load is over', async () => {
    const { clock, load, sent } = setup();
    expect(clock.pendingDelays()).toEqual([]);
    await clock.advance(10_000);
    expect(sent).toEqual([]);

    load.report(0.3);
    await clock.advance(10);
    load.report(0.9);
    load.loading = false; // Ready: the supervisor reports no fraction any more.
    await clock.advance(LOAD_PROGRESS_REPUBLISH_MS);
    expect(sent.at(-1)).toMatchObject({ fraction: null, state: 'ready' });
    const count = sent.length;
    expect(clock.pendingDelays()).toEqual([]);
    await clock.advance(60_000);
    expect(sent).toHaveLength(count);
  });

  it('stops listening and drops a pending republish when stopped', async () => {
    const { clock, load, sent, stop } = setup();
    load.report(0.2);
    await clock.advance(0);
    load.report(0.4);
    stop();
    stop();
    expect(load.progress.size).toBe(0);
    await clock.advance(10_000);
    expect(sent.map((s) => s.fraction)).toEqual([0.2]);
  });
});
