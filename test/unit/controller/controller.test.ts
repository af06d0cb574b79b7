// The reconcile loop against a recording fake server and a fake clock: what it launches and
// evicts, in which order, when, and what each model's visible state says. No sleeps: time
// moves only through FakeClock.advance, and promise work settles on one event-loop turn.
import { afterEach, describe, expect, it } from 'vitest';
import { ACTIVITY_REFRESH_MS, Controller, DEFAULT_HEALTHY_AFTER_MS, DEFAULT_RESYNC_MS, ENVIRONMENT_RECHECK_MS, MOVE_UP_COOL_DOWN_MS, MOVE_UP_SETTLE_MS } from '../../../core/controller/index.js';
import type { ModelDemand } from '../../../core/controller/effects.js';
import type { ControllerEvent } from '../../../core/contracts/controller-events.js';
import type { ServerFailureKind } from '../../../core/contracts/server-events.js';
import { footprintAt } from '../../../core/policy/levels.js';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { FakeDesired, RecordingServer, ScriptedLaunchError, type ScriptedFailure } from '../../support/recording-server.js';

const GiB = 1024 ** 3;

/** A launch failure as the supervisor reports it: the kind and llama.cpp's words. */
function failure(kind: ServerFailureKind, beforeSpawn = false): ScriptedFailure {
  return { kind, reason: `scripted ${kind} failure`, beforeSpawn };
}

class RecordingLog {
  readonly lines: { level: 'info' | 'warn' | 'error'; message: string }[] = [];
  info(message: string): void {
    this.lines.push({ level: 'info', message });
  }
  warn(message: string): void {
    this.lines.push({ level: 'warn', message });
  }
  error(message: string): void {
    this.lines.push({ level: 'error', message });
  }
  count(pattern: RegExp): number {
    return this.lines.filter((l) => pattern.test(l.message)).length;
  }
}

/** A wanted model of `gib` GiB at full; degraded is a quarter of the KV cache smaller. */
function model(modelId: string, gib: number, extra: Partial<ModelDemand> = {}): ModelDemand {
  return {
    modelId,
    priority: 0,
    pinned: false,
    wanted: true,
    inFlight: 0,
    estimate: { weightsBytes: gib * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8 },
    definitionHash: 'v1',
    ...extra,
  };
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

function world(models: ModelDemand[], { budgetGiB = 24, hostFreeGiB = 64 } = {}) {
  const clock = new FakeClock();
  const desired = new FakeDesired({ models, budgetBytes: budgetGiB * GiB, hostFreeBytes: hostFreeGiB * GiB });
  const server = new RecordingServer((id, level) => footprintAt(level, desired.model(id).estimate).deviceBytes, () => clock.now());
  const log = new RecordingLog();
  const controller = new Controller({
    provider: desired,
    server,
    clock,
    log,
    classify: (error) => (error instanceof ScriptedLaunchError ? error.kind : 'crash'),
  });
  const events: ControllerEvent[] = [];
  controller.onEvent((event) => events.push(event));
  const abort = new AbortController();
  let running: Promise<void> = Promise.resolve();
  const stop = async (): Promise<void> => {
    abort.abort();
    await running;
  };
  const start = async (): Promise<void> => {
    running = controller.run(abort.signal);
    stops.push(stop);
    await settle();
  };
  const state = (id: string) => controller.status(id)?.state;
  const ofType = <T extends ControllerEvent['type']>(type: T) =>
    events.filter((e): e is Extract<ControllerEvent, { type: T }> => e.type === type);
  const states = (id: string) => ofType('ModelStateChanged').filter((e) => e.modelId === id).map((e) => e.status.state);
  return { clock, desired, server, log, controller, events, start, stop, state, ofType, states };
}

describe('convergence', () => {
  it('launches what fits, reports what does not, and then does no work however often it looks again', async () => {
    const w = world([model('a', 10, { priority: 2 }), model('b', 8, { priority: 1 }), model('c', 10)]);
    await w.start();

    expect(w.server.launches()).toEqual([
      { modelId: 'a', level: 'full' },
      { modelId: 'b', level: 'full' },
    ]);
    expect(w.state('a')).toBe('ready');
    expect(w.state('b')).toBe('ready');
    expect(w.state('c')).toBe('queued');
    expect(w.controller.status('c')?.unschedulableReason).toMatch(/^needs 10 GiB; 24 GiB budget, 18 GiB held by a .* and b .*, 6 GiB free$/);
    expect(w.controller.lastPlan()?.unschedulable.map((u) => u.modelId)).toEqual(['c']);

    const calls = w.server.calls.length;
    const reads = w.desired.reads;
    w.controller.trigger();
    await w.controller.reconcileNow();
    await w.clock.advance(DEFAULT_RESYNC_MS * 3);
    expect(w.desired.reads).toBeGreaterThanOrEqual(reads + 4);
    expect(w.server.calls.length).toBe(calls);
    // The same reason on every pass is logged once, not once per pass.
    expect(w.log.count(/^c does not fit/)).toBe(1);
    expect(w.ofType('ModelUnschedulableChanged').filter((e) => e.modelId === 'c')).toHaveLength(1);

    // A model gone from the catalog and not running is forgotten.
    w.desired.state.models = w.desired.state.models.filter((m) => m.modelId !== 'c');
    await w.controller.reconcileNow();
    expect(w.controller.statuses().map((s) => s.modelId)).toEqual(['a', 'b']);
  });

  it('a burst of triggers while idle is one pass', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    const reads = w.desired.reads;
    for (let i = 0; i < 10; i++) w.controller.trigger();
    await settle();
    expect(w.desired.reads).toBe(reads + 1);
  });

  it('a refresh is one pass within ACTIVITY_REFRESH_MS however often it is asked, and none once stopped', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    const reads = w.desired.reads;
    for (let i = 0; i < 10; i++) w.controller.refreshSoon();
    await settle();
    expect(w.desired.reads).toBe(reads); // not at once: a status is allowed to lag this little
    await w.clock.advance(ACTIVITY_REFRESH_MS - 1);
    w.controller.refreshSoon(); // inside the window: the same pass, not a later one
    expect(w.desired.reads).toBe(reads);
    await w.clock.advance(1);
    expect(w.desired.reads).toBe(reads + 1);
    await w.clock.advance(ACTIVITY_REFRESH_MS * 4);
    expect(w.desired.reads).toBe(reads + 1);

    w.controller.refreshSoon();
    await w.stop();
    await w.clock.advance(ACTIVITY_REFRESH_MS * 4);
    expect(w.desired.reads).toBe(reads + 1);
  });

  it('a burst of triggers during a pass is exactly one more pass, never a concurrent one', async () => {
    const w = world([model('a', 4)]);
    w.server.place('old', 'full', 8 * GiB);
    w.server.hold('evict', 'old');
    await w.start();
    expect(w.desired.reads).toBe(1);

    for (let i = 0; i < 10; i++) w.controller.trigger();
    await settle();
    expect(w.desired.reads).toBe(1);

    w.server.release('evict', 'old');
    await settle();
    expect(w.desired.reads).toBe(2);
    expect(w.server.evictions()).toEqual(['old']);
  });

  it('evicts first and launches only after the eviction has finished', async () => {
    const w = world([model('a', 6)], { budgetGiB: 10 });
    w.desired.state.models.push(model('old', 8, { wanted: false }));
    w.server.place('old', 'full', 8 * GiB);
    w.server.hold('evict', 'old');
    await w.start();

    expect(w.server.calls).toEqual([{ op: 'evict', modelId: 'old' }]);
    expect(w.state('old')).toBe('evicting');
    expect(w.state('a')).toBe('queued');

    w.server.release('evict', 'old');
    await settle();
    expect(w.server.calls).toEqual([
      { op: 'evict', modelId: 'old' },
      { op: 'launch', modelId: 'a', level: 'full' },
    ]);
    expect(w.state('old')).toBe('idle');
    expect(w.state('a')).toBe('ready');
  });

  it('hints the launch an eviction makes room for before evicting, so the supervisor can start its runtime meanwhile; no hint without an eviction', async () => {
    const w = world([model('a', 6)], { budgetGiB: 10 });
    w.desired.state.models.push(model('old', 8, { wanted: false }));
    w.server.place('old', 'full', 8 * GiB);
    w.server.hold('evict', 'old');
    await w.start();
    expect(w.server.preparations).toEqual([expect.objectContaining({ modelId: 'a', level: 'full', afterCalls: 0 })]);
    expect(w.server.calls).toEqual([{ op: 'evict', modelId: 'old' }]);

    w.server.release('evict', 'old');
    await settle();
    // The launch goes where the hint said.
    expect(w.server.placements.get('a')).toEqual(w.server.preparations[0]?.placement);

    w.desired.state.models.push(model('b', 2));
    await w.controller.reconcileNow();
    await settle();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['a', 'b']);
    expect(w.server.preparations.map((p) => p.modelId)).toEqual(['a']);
  });

  it('a load in flight is neither launched twice nor evicted by later passes', async () => {
    const w = world([model('a', 6)]);
    w.server.hold('launch', 'a');
    await w.start();
    expect(w.state('a')).toBe('loading');

    w.desired.update('a', { wanted: false });
    await w.controller.reconcileNow();
    await w.controller.reconcileNow();
    expect(w.server.calls).toEqual([{ op: 'launch', modelId: 'a', level: 'full' }]);

    // Judged once it is up: no longer wanted, so it goes.
    w.server.release('launch', 'a');
    await settle();
    expect(w.server.evictions()).toEqual(['a']);
  });
});

describe('the live budget', () => {
  it('evicts the lowest-priority idle model when the budget shrinks', async () => {
    const w = world([model('a', 8, { priority: 1 }), model('b', 8, { priority: 5 })], { budgetGiB: 20 });
    await w.start();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['b', 'a']);

    w.desired.state.budgetBytes = 10 * GiB;
    w.controller.trigger();
    await settle();

    expect(w.server.evictions()).toEqual(['a']);
    expect(w.server.launches()).toHaveLength(2);
    expect(w.state('a')).toBe('queued');
    expect(w.controller.status('a')?.unschedulableReason).toMatch(/^needs 8 GiB; 10 GiB budget, 8 GiB held by b/);
    expect(w.state('b')).toBe('ready');
  });

  it('never evicts a pinned or an active model, even over budget', async () => {
    const w = world([model('p', 8, { pinned: true }), model('x', 8)], { budgetGiB: 20 });
    await w.start();
    w.desired.update('x', { inFlight: 1 });
    w.desired.state.models.push(model('c', 2));
    w.desired.state.budgetBytes = 4 * GiB;
    w.controller.trigger();
    await settle();

    expect(w.server.evictions()).toEqual([]);
    expect(w.state('p')).toBe('ready');
    expect(w.state('x')).toBe('active');
    // Pinned p alone leaves c no room: that is final until a pin goes, so it is named alone.
    expect(w.controller.status('c')?.unschedulableReason).toBe('needs 2 GiB; 4 GiB budget, 8 GiB held by pinned p (8 GiB), 4 GiB over it: it fits only if a pinned model is unpinned');
    expect(w.controller.whyUnservable('c')?.code).toBe('model_unschedulable');
  });

  it('prices a model with its draft and says so when it does not fit', async () => {
    const estimate = {
      weightsBytes: 20 * GiB,
      kvBytesPerToken: 0,
      contextTokens: 4096,
      computeBytes: 0,
      draft: { weightsBytes: 6 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0 },
    };
    const w = world([model('big', 0, { estimate, draftId: 'tiny-draft' })]);
    await w.start();
    expect(w.server.launches()).toEqual([]);
    expect(w.controller.status('big')?.unschedulableReason).toBe(
      'needs 26 GiB with its draft tiny-draft (20 GiB + 6 GiB), more than the whole 24 GiB budget',
    );
  });
});

describe('the read model', () => {
  it('answers from the records as they are: a server that ends is out of every answer before any pass', async () => {
    const w = world([model('a', 10), model('b', 8)]);
    w.desired.state.warmSpare = { bytes: 10 * GiB };
    await w.start();
    expect(w.controller.held('b')?.bytes).toBe(8 * GiB);
    expect(w.server.spareVerdicts.at(-1)).toBe(false); // 24 GiB - 18 held < 10

    const reads = w.desired.reads;
    w.server.die('b', 'invalid');
    // No pass has run since (the one the exit asks for starts on a later turn), and yet:
    expect(w.desired.reads).toBe(reads);
    expect(w.controller.held('b')).toBeNull();
    expect(w.controller.placement('b')).toBeNull();
    expect(w.controller.whyUnservable('b')?.code).toBe('model_quarantined');
    expect(w.server.spareVerdicts.at(-1)).toBe(true); // 24 GiB - 10 held >= 10
  });

  it('reads memory once a pass, and answers from that observation until the next pass', async () => {
    const w = world([model('a', 10), model('b', 8)]);
    w.desired.state.warmSpare = { bytes: 12 * GiB };
    await w.start();
    // Each pass read the budget once and measured once, whatever it did.
    expect(w.server.measureReads).toBe(w.desired.reads);
    expect(w.server.spareVerdicts.at(-1)).toBe(false); // 24 GiB - 18 held < 12

    // Memory shrinks, and no pass has read it yet.
    w.desired.state.budgetBytes = 20 * GiB;
    const reads = [w.desired.reads, w.server.measureReads];
    w.server.die('b');
    // Judged on the last pass's 24 GiB (24 - 10 >= 12), not on a sample of its own (20 - 10 < 12).
    expect(w.server.spareVerdicts.at(-1)).toBe(true);
    expect([w.desired.reads, w.server.measureReads]).toEqual(reads);

    await w.controller.reconcileNow();
    expect(w.server.spareVerdicts.at(-1)).toBe(false);
    expect(w.server.measureReads).toBe(w.desired.reads);
  });

  it('keeps no spare where none may be kept, however much room there is', async () => {
    const w = world([model('a', 1)]);
    await w.start();
    expect(w.server.spareVerdicts.length).toBeGreaterThan(0);
    expect(w.server.spareVerdicts.every((wanted) => !wanted)).toBe(true);
  });
});

describe('the recovery ladder, end to end', () => {
  it('crash: retried four times with a doubling backoff, then quarantined', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('crash'), 5);
    await w.start();

    expect(w.server.launches()).toHaveLength(1);
    expect(w.state('a')).toBe('failed');
    expect(w.controller.status('a')?.next).toBe('retrying in 1 s');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 1, nextAction: 'retry', nextAttemptAt: w.clock.now() + 1000 });
    // A trigger during the backoff looks again but does not cut the backoff short.
    w.controller.trigger();
    await settle();
    expect(w.server.launches()).toHaveLength(1);

    for (const [delay, launchesAfter] of [[1000, 2], [2000, 3], [4000, 4], [8000, 5]] as const) {
      await w.clock.advance(delay - 1);
      expect(w.server.launches()).toHaveLength(launchesAfter - 1);
      await w.clock.advance(1);
      expect(w.server.launches()).toHaveLength(launchesAfter);
    }

    expect(w.state('a')).toBe('quarantined');
    expect(w.server.launches().every((l) => l.level === 'full')).toBe(true);
    const [quarantined] = w.ofType('ModelQuarantined');
    expect(quarantined?.reason).toMatch(/^failed 5 launches in a row \(last failure: crash — scripted crash failure\)\. It is quarantined until you retry it/);
    expect(w.ofType('LaunchFailed').map((e) => e.nextAction)).toEqual(['retry', 'retry', 'retry', 'retry', 'quarantine']);
    expect(w.controller.whyUnservable('a')).toEqual({ code: 'model_quarantined', reason: quarantined?.reason });

    await w.clock.advance(10 * 60_000);
    expect(w.server.launches()).toHaveLength(5);
  });

  it('a wall-clock step back of an hour during a backoff does not delay the retry', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('crash'), 1);
    await w.start();
    const shownAt = w.clock.now() + 1000;
    expect(w.controller.status('a')?.recovery.nextAttemptAt).toBe(shownAt);
    w.clock.jumpWall(-3_600_000);
    await w.clock.advance(999);
    expect(w.server.launches()).toHaveLength(1);
    await w.clock.advance(1);
    expect(w.server.launches()).toHaveLength(2);
  });

  it('a wall-clock step forward of an hour during a backoff does not let a pass launch early', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('crash'), 1);
    await w.start();
    w.clock.jumpWall(3_600_000);
    w.controller.trigger();
    await settle();
    expect(w.server.launches()).toHaveLength(1);
    await w.clock.advance(1000);
    expect(w.server.launches()).toHaveLength(2);
  });

  it('oom: degraded, then part on the CPU, then CPU only, then its fallback serves in its place', async () => {
    const w = world([model('a', 8, { fallbackId: 'small' }), model('small', 2, { wanted: false })]);
    w.server.failLaunch('a', failure('oom'), 4);
    await w.start();

    expect(w.server.launches()).toEqual([
      { modelId: 'a', level: 'full' },
      { modelId: 'a', level: 'degraded' },
      { modelId: 'a', level: 'partial' },
      { modelId: 'a', level: 'minimal' },
      { modelId: 'small', level: 'full' },
    ]);
    expect(w.state('a')).toBe('fallback');
    expect(w.controller.status('a')?.servedBy).toBe('small');
    expect(w.controller.servingModel('a')).toBe('small');
    expect(w.controller.whyUnservable('a')).toBeNull();
    expect(w.state('small')).toBe('ready');
    expect(w.ofType('ModelFellBack')).toMatchObject([{ modelId: 'a', fallbackId: 'small' }]);

    // A person's retry lifts the fallback: the model itself comes back, its stand-in goes.
    w.controller.retry('a');
    await settle();
    expect(w.server.calls.slice(5)).toEqual([
      { op: 'evict', modelId: 'small' },
      { op: 'launch', modelId: 'a', level: 'full' },
    ]);
    expect(w.state('a')).toBe('ready');
    expect(w.controller.servingModel('a')).toBe('a');
  });

  it('oom: when the fallback fails too, the model is unservable with the fallback’s reason', async () => {
    const w = world([model('a', 8, { fallbackId: 'small' }), model('small', 2, { wanted: false })]);
    w.server.failLaunch('a', failure('oom'), 4);
    w.server.failLaunch('small', failure('oom'), 4);
    await w.start();

    expect(w.server.launches().map((l) => `${l.modelId} ${l.level}`)).toEqual([
      'a full', 'a degraded', 'a partial', 'a minimal', 'small full', 'small degraded', 'small partial', 'small minimal',
    ]);
    expect(w.state('a')).toBe('fallback');
    expect(w.state('small')).toBe('quarantined');
    const why = w.controller.whyUnservable('a');
    expect(why).toEqual({ code: 'model_quarantined', reason: expect.stringMatching(/^its fallback small is unavailable: failed 4 launches in a row/) });
  });

  it('oom with no fallback configured ends in quarantine, saying so', async () => {
    const w = world([model('a', 8)]);
    w.server.failLaunch('a', failure('oom'), 4);
    await w.start();

    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'degraded', 'partial', 'minimal']);
    expect(w.state('a')).toBe('quarantined');
    expect(w.controller.whyUnservable('a')?.reason).toMatch(/the ladder says fall back, but it has no fallback model configured/);
  });

  it('a launch whose host share RAM cannot hold (part on the CPU, or all of it) is refused with the numbers, without launching', async () => {
    const w = world([model('a', 4)], { hostFreeGiB: 1 });
    w.server.failLaunch('a', failure('oom'), 2);
    await w.start();

    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'degraded']);
    expect(w.ofType('LaunchFailed').map((e) => [e.level, e.error])).toEqual([
      ['full', 'scripted oom failure'],
      ['degraded', 'scripted oom failure'],
      ['partial', 'a needs 2 GiB of RAM for the layers on the CPU; 1 GiB free'],
      ['minimal', 'a needs 4 GiB of RAM on the CPU; 1 GiB free'],
    ]);
    expect(w.state('a')).toBe('quarantined');
  });

  it('hang: retried once at full, then degraded, which serves', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('hang'), 2);
    await w.start();
    expect(w.state('a')).toBe('failed');

    await w.clock.advance(1000);
    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'full', 'degraded']);
    expect(w.state('a')).toBe('degraded');
    // Ready is not yet healthy: the ladder holds until its first answer.
    expect(w.controller.status('a')).toMatchObject({ level: 'degraded', recovery: { kind: 'hang', attempts: 2 } });
    w.controller.served('a');
    expect(w.controller.status('a')).toMatchObject({ level: 'degraded', recovery: { kind: 'none', attempts: 0, nextAction: null } });
    expect(w.log.count(/^a is healthy again \(it answered a request\); its recovery ladder starts over$/)).toBe(1);
  });

  it('a server that dies at its first request every time, before answering, climbs the ladder to quarantine', async () => {
    // What a CUDA fault at the first decode looks like: every launch reaches ready, and every
    // server dies as it is asked to work. Ready used to reset the ladder: relaunched forever.
    const w = world([model('a', 4)]);
    await w.start();
    for (let death = 1; death <= 5; death++) {
      expect(w.state('a')).toBe('ready');
      w.server.die('a', 'crash', 'CUDA error: an illegal memory access was encountered');
      await settle();
      expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: death });
      await w.clock.advance(2 ** (death - 1) * 1000);
    }
    expect(w.state('a')).toBe('quarantined');
    expect(w.server.launches()).toHaveLength(5);
    expect(w.controller.whyUnservable('a')?.reason).toMatch(/^failed 5 launches in a row \(last failure: crash — CUDA error: an illegal memory access was encountered\)/);
    expect(w.log.count(/^a died after it was ready, before it answered anything; retrying in/)).toBe(4);
    expect(w.log.count(/healthy again/)).toBe(0);
  });

  it('a failing model is healthy again once its server answers a request, or stays ready through its trial', async () => {
    const w = world([model('a', 4), model('b', 4)]);
    w.server.failLaunch('a', failure('crash'), 2);
    w.server.failLaunch('b', failure('crash'), 2);
    await w.start();
    await w.clock.advance(1000);
    await w.clock.advance(2000);
    expect(w.state('a')).toBe('ready');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 2 });
    // 'a' answers: its ladder starts over at once.
    w.controller.served('a');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'none', attempts: 0 });
    // 'b' answers nothing: healthy only when the trial is over, with the same server up.
    await w.clock.advance(DEFAULT_HEALTHY_AFTER_MS - 1);
    expect(w.controller.status('b')?.recovery).toMatchObject({ kind: 'crash', attempts: 2 });
    await w.clock.advance(1);
    expect(w.controller.status('b')?.recovery).toMatchObject({ kind: 'none', attempts: 0 });
    expect(w.log.count(/^b is healthy again \(it stayed ready for 30 s\)/)).toBe(1);
    // Healthy, a death while serving starts a fresh ladder: one retry, not the third rung.
    w.controller.served('b');
    w.server.die('b');
    await settle();
    expect(w.controller.status('b')?.recovery).toMatchObject({ kind: 'crash', attempts: 1, nextAction: 'retry' });
    expect(w.log.count(/^b died while serving; retrying in 1 s$/)).toBe(1);
  });

  it('a trial ends with its server: a server that dies on trial climbs, and the next one starts its own trial', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('crash'), 1);
    await w.start();
    await w.clock.advance(1000);
    expect(w.state('a')).toBe('ready');
    await w.clock.advance(DEFAULT_HEALTHY_AFTER_MS / 2);
    w.server.die('a');
    await settle();
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 2 });
    await w.clock.advance(2000);
    expect(w.state('a')).toBe('ready');
    // The first trial's timer is gone: half a trial later, the second server is still on its own.
    await w.clock.advance(DEFAULT_HEALTHY_AFTER_MS / 2);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 2 });
    await w.clock.advance(DEFAULT_HEALTHY_AFTER_MS / 2);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'none', attempts: 0 });
  });

  it('the trial length is read at each ready, so a reload applies to the next', async () => {
    let trialMs = 60_000;
    const clock = new FakeClock();
    const desired = new FakeDesired({ models: [model('a', 4)], budgetBytes: 24 * GiB, hostFreeBytes: 64 * GiB });
    const server = new RecordingServer((id, level) => footprintAt(level, desired.model(id).estimate).deviceBytes, () => clock.now());
    const controller = new Controller({ provider: desired, server, clock, log: new RecordingLog(), classify: () => 'crash', healthyAfterMs: () => trialMs });
    const abort = new AbortController();
    const running = controller.run(abort.signal);
    stops.push(async () => {
      abort.abort();
      await running;
    });
    server.failLaunch('a', failure('crash'), 1);
    await settle();
    trialMs = 5_000; // a reload while it waits for its retry
    await clock.advance(1000);
    expect(controller.status('a')?.state).toBe('ready');
    trialMs = 60_000; // and another during its trial, which does not move it
    await clock.advance(5_000);
    expect(controller.status('a')?.recovery).toMatchObject({ kind: 'none', attempts: 0 });
  });

  it('the machine in the way: tried again every 2 s for as long as it lasts, never quarantined, said once; back at once when it clears', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', { kind: 'environment', reason: "the data dir's disk is full: 0 B free (/data)", beforeSpawn: true }, 40);
    await w.start();
    for (let look = 1; look < 40; look++) await w.clock.advance(ENVIRONMENT_RECHECK_MS);
    expect(w.server.launches()).toHaveLength(40);
    expect(w.state('a')).toBe('failed');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'environment', attempts: 40, nextAction: 'retry', lastError: "the data dir's disk is full: 0 B free (/data)" });
    // Not quarantined, but a request is refused at once with the machine's words and when to come back.
    expect(w.controller.whyUnservable('a')).toEqual({ code: 'model_environment_failure', reason: "the data dir's disk is full: 0 B free (/data)", retryAfterSeconds: 2 });
    expect(w.controller.waitReason('a')).toContain("its last launch failed (environment: the data dir's disk is full: 0 B free (/data))");
    expect(w.log.count(/^a failed to launch; retrying in 2 s$/)).toBe(1);
    // There is room again: the next look launches it.
    await w.clock.advance(ENVIRONMENT_RECHECK_MS);
    expect(w.state('a')).toBe('ready');
    expect(w.controller.whyUnservable('a')).toBeNull();
    expect(w.ofType('ModelQuarantined')).toEqual([]);
  });

  it('the machine’s failures and the model’s own are counted apart', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('crash'), 3);
    await w.start();
    await w.clock.advance(1000);
    await w.clock.advance(2000);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 3 });
    w.server.failLaunch('a', { kind: 'environment', reason: 'the data dir is read-only (/data)', beforeSpawn: true }, 10);
    await w.clock.advance(4000);
    for (let look = 1; look < 10; look++) await w.clock.advance(ENVIRONMENT_RECHECK_MS);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'environment', attempts: 10 });
    // Its own next crash is its first in a row since the machine got in the way: retried, not quarantined.
    w.server.failLaunch('a', failure('crash'), 1);
    await w.clock.advance(ENVIRONMENT_RECHECK_MS);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 1, nextAction: 'retry' });
  });

  it('retry() lifts quarantine; nothing else does until the definition changes', async () => {
    const w = world([model('a', 4), model('b', 4)]);
    w.server.failLaunch('a', failure('oom'), 4);
    w.server.failLaunch('b', failure('oom'), 4);
    await w.start();
    expect(w.state('a')).toBe('quarantined');
    expect(w.state('b')).toBe('quarantined');

    w.controller.trigger();
    await w.clock.advance(5 * 60_000);
    expect(w.server.launches()).toHaveLength(8);

    expect(w.controller.retry('a')).toBe(true);
    await settle();
    expect(w.state('a')).toBe('ready');

    w.desired.update('b', { definitionHash: 'v2' });
    w.controller.trigger();
    await settle();
    expect(w.state('b')).toBe('ready');
    expect(w.server.launches().slice(8)).toEqual([
      { modelId: 'a', level: 'full' },
      { modelId: 'b', level: 'full' },
    ]);
  });

  it('a server that dies after it was ready climbs the ladder like a failed launch, once', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    expect(w.state('a')).toBe('ready');

    w.server.die('a', 'crash', 'it was killed by SIGKILL while serving');
    // However many passes look afterwards, the one death is one rung.
    w.controller.trigger();
    await w.controller.reconcileNow();
    await w.controller.reconcileNow();
    expect(w.state('a')).toBe('failed');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 1, nextAction: 'retry', lastError: 'it was killed by SIGKILL while serving' });
    expect(w.ofType('LaunchFailed')).toHaveLength(1);
    expect(w.server.launches()).toHaveLength(1);

    await w.clock.advance(1000);
    expect(w.server.launches()).toHaveLength(2);
    expect(w.state('a')).toBe('ready');
  });

  it('a hang while serving climbs the hang rung, and the next launch gets a fresh engine', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    w.server.die('a', 'hang', 'it made no progress for 60 s with 1 request in flight');
    await settle();
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'hang', attempts: 1, nextAction: 'retry' });
    await w.clock.advance(1000);
    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'full']);
    expect(w.state('a')).toBe('ready');
  });

  it('a launch that fails while a pass runs counts once, and an oom is relaunched smaller with llama.cpp\'s words', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    w.server.failLaunch('a', { kind: 'oom', reason: 'failed to allocate buffer for kv cache' });
    await w.start();
    // Passes during the load see it loading (it holds memory), and neither launch it again nor count it.
    expect(w.state('a')).toBe('loading');
    await w.controller.reconcileNow();
    expect(w.server.measureReads).toBe(2);
    expect(w.controller.lastPlan()?.launch).toEqual([]);

    w.server.release('launch', 'a');
    await settle();
    await w.controller.reconcileNow();
    expect(w.ofType('LaunchFailed')).toMatchObject([{ modelId: 'a', kind: 'oom', attempts: 1, error: 'failed to allocate buffer for kv cache', nextAction: 'degrade' }]);
    expect(w.server.launches()).toEqual([
      { modelId: 'a', level: 'full' },
      { modelId: 'a', level: 'degraded' },
    ]);
    expect(w.state('a')).toBe('degraded');
  });

  it('a launch that fails before any process ran counts once too', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('crash', true));
    await w.start();
    expect(w.ofType('LaunchFailed')).toHaveLength(1);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 1 });
  });

  it('a server control that rejects a launch without its ServerExited still counts it once and backs off, never looping hot', async () => {
    const w = world([model('a', 4)]);
    // Breaks the contract on purpose: the launch rejects, and no event ever says so.
    let launches = 0;
    w.server.launch = async () => {
      launches++;
      throw new Error('the control broke');
    };
    await w.start();
    w.controller.trigger();
    await settle();
    await w.controller.reconcileNow();
    expect(launches).toBe(1);
    expect(w.ofType('LaunchFailed')).toMatchObject([{ modelId: 'a', kind: 'crash', attempts: 1, error: 'the control broke', nextAction: 'retry' }]);
    expect(w.controller.status('a')?.next).toBe('retrying in 1 s');
    await w.clock.advance(1000);
    expect(launches).toBe(2);
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 2 });
  });

  it('an invalid model is quarantined at its first failure, with the reason', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', { kind: 'invalid', reason: "tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete" });
    await w.start();
    expect(w.server.launches()).toHaveLength(1);
    expect(w.state('a')).toBe('quarantined');
    expect(w.controller.whyUnservable('a')).toMatchObject({ code: 'model_quarantined', reason: expect.stringMatching(/not within the file bounds/) });
  });

  it('a model that fails to launch does not disturb one that is serving', async () => {
    const w = world([model('b', 4)]);
    await w.start();
    w.desired.state.models.push(model('a', 4));
    w.server.failLaunch('a', failure('crash'));
    w.controller.trigger();
    await settle();

    expect(w.state('a')).toBe('failed');
    expect(w.state('b')).toBe('ready');
    expect(w.server.evictions()).toEqual([]);

    await w.clock.advance(1000);
    expect(w.state('a')).toBe('ready');
    expect(w.state('b')).toBe('ready');
  });

  it('a failing model retries only in memory nobody wants: it never evicts a wanted model', async () => {
    // Room for one. 'chat' serves; 'broken' is asked for later and crashes on every launch.
    const w = world([model('chat', 6, { lastUsed: 1 })], { budgetGiB: 10 });
    await w.start();
    w.server.failLaunch('broken', failure('crash'), 10);
    w.desired.state.models.push(model('broken', 6, { lastUsed: 2 }));
    w.controller.trigger();
    await settle();
    // Newer, so before its first failure it wins the room once: chat goes, broken fails.
    expect(w.server.evictions()).toEqual(['chat']);
    expect(w.state('broken')).toBe('failed');
    // chat is asked for again while broken retries, even pinned: chat comes back and stays.
    w.desired.update('chat', { lastUsed: 3 });
    w.desired.update('broken', { pinned: true });
    w.controller.trigger();
    await settle();
    expect(w.state('chat')).toBe('ready');
    for (let i = 0; i < 3; i++) await w.clock.advance(60_000);
    expect(w.server.evictions()).toEqual(['chat']);
    expect(w.state('chat')).toBe('ready');
    expect(w.state('broken')).toBe('failed');
    expect(w.controller.status('broken')?.unschedulableReason).toMatch(/held by chat/);
    // Once nobody wants chat, broken's retries may use its memory.
    w.desired.update('chat', { wanted: false });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['chat', 'chat']);
  });

  /**
   * Room for one: 'b', which a request waited for, wins the room from 'a' and serves; then its
   * server dies while 'a' stays wanted (used within its TTL), and 'b' wants what `bWants` says.
   * The death is counted once, as a crash.
   */
  async function bDiesServingInWantedARoom(bWants: Parameters<ReturnType<typeof world>['desired']['update']>[1], answered = true) {
    const w = world([model('a', 6, { lastUsed: 1 })], { budgetGiB: 10 });
    await w.start();
    w.desired.state.models.push(model('b', 6, { lastUsed: 2, waitingSince: 2 }));
    w.controller.trigger();
    await settle();
    expect(w.state('b')).toBe('ready');
    if (answered) w.controller.served('b');
    w.desired.update('a', { lastUsed: 3 });
    w.desired.update('b', bWants);
    w.server.die('b');
    await settle();
    expect(w.controller.status('b')?.recovery).toMatchObject({ kind: 'crash', attempts: 1 });
    return w;
  }

  it('a model whose server died while serving is not kept to unwanted memory: its waiting requests get it back from a wanted model', async () => {
    // Kept out as a failing launch is, 'b' would never come back while 'a' is in use: the soak
    // saw every request for it refused for minutes.
    const w = await bDiesServingInWantedARoom({ lastUsed: 4, waitingSince: 4 });
    await w.clock.advance(1000);
    expect(w.state('b')).toBe('ready');
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['a', 'b', 'b']);
    expect(w.server.evictions()).toEqual(['a']);
  });

  it('so does one whose fresh server died at its first request, before answering: its waiting request gets it back', async () => {
    // The full soak stalled here: a hang frozen at a fresh server's first request, and every
    // request for it left waiting while an idle model kept the room.
    const w = await bDiesServingInWantedARoom({ lastUsed: 4, waitingSince: 4 }, false);
    await w.clock.advance(1000);
    expect(w.state('b')).toBe('ready');
    expect(w.server.evictions()).toEqual(['a']);
  });

  it('a model whose server died while serving, with no request waiting for it, retries only in memory nobody wants, even pinned', async () => {
    // Nobody waits for 'b' when it dies: its relaunch is a retry like any failed model's, and
    // 'a', used within its TTL, keeps the room until nobody wants it.
    const w = await bDiesServingInWantedARoom({ lastUsed: 4, waitingSince: undefined, pinned: true });
    // 'a' (wanted) comes back into the room; 'b' does not push it out again while it is wanted.
    for (let i = 0; i < 3; i++) await w.clock.advance(60_000);
    expect(w.state('a')).toBe('ready');
    expect(w.server.evictions()).toEqual(['a']);
    expect(w.controller.status('b')?.unschedulableReason).toMatch(/held by a/);
    // A request for 'b' now: it competes as a waited-for model and gets its room back.
    w.desired.update('b', { waitingSince: 5 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(1000);
    expect(w.state('b')).toBe('ready');
    expect(w.server.evictions()).toEqual(['a', 'a']);
  });

  it('a quarantined model leaves the plan: it holds no memory there, no reason names it, and the model it kept out comes back', async () => {
    const w = world([model('broken', 6, { lastUsed: 2 }), model('chat', 6, { lastUsed: 1 })], { budgetGiB: 10 });
    w.server.failLaunch('broken', { kind: 'invalid', reason: 'model is corrupted or incomplete' });
    await w.start();
    expect(w.state('broken')).toBe('quarantined');
    expect(w.state('chat')).toBe('ready');
    const plan = w.controller.lastPlan();
    expect(plan?.launch).not.toContain('broken');
    expect(plan?.unschedulable).toEqual([]);
    expect(w.controller.status('chat')?.unschedulableReason).toBeNull();
  });
});

describe('placement on the workstation\'s GPUs', () => {
  const twoGpus = [
    { index: 0, name: 'RTX 4090', deviceClass: 'nvidia:rtx 4090', budgetBytes: 10 * GiB },
    { index: 1, name: 'RTX 4090', deviceClass: 'nvidia:rtx 4090', budgetBytes: 10 * GiB },
  ];

  it('places each model on a GPU of its own budget, launches it there, and names each GPU when one is left out', async () => {
    const w = world([model('a', 8, { lastUsed: 3 }), model('b', 8, { lastUsed: 2 }), model('c', 8, { lastUsed: 1 })], { budgetGiB: 20 });
    w.desired.state.devices = twoGpus;
    await w.start();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['a', 'b']);
    expect(new Set([w.server.placements.get('a')?.devices[0]?.index, w.server.placements.get('b')?.devices[0]?.index])).toEqual(new Set([0, 1]));
    expect(w.controller.placement('a')).toEqual(w.server.placements.get('a'));
    // 20 GiB in all, but no GPU has 8 free: the sum would have said it fits.
    expect(w.controller.status('c')?.unschedulableReason).toMatch(/^needs 8 GiB; GPU 0 RTX 4090: 10 GiB budget, 8 GiB held by (a|b) .*; GPU 1 RTX 4090: 10 GiB budget, 8 GiB held by (a|b) .*, 2 GiB free/);
  });

  it('evicts on the GPU that needs the room, never a model elsewhere for nothing', async () => {
    const w = world([model('a', 8, { lastUsed: 1 }), model('b', 4, { lastUsed: 2, wanted: false })], { budgetGiB: 20 });
    w.desired.state.devices = twoGpus;
    await w.start();
    const onA = w.server.placements.get('a')?.devices[0]?.index;
    // b (4 GiB) does not fit next to a (8 of 10 GiB held): it goes to the other GPU.
    w.desired.update('b', { wanted: true });
    w.controller.trigger();
    await settle();
    expect(w.server.placements.get('b')?.devices[0]?.index).not.toBe(onA);
    // A newer 9 GiB model needs a GPU to itself: the least recently used model goes (a), and
    // only it: b, on the other GPU, stays.
    w.desired.state.models.push(model('big', 9, { lastUsed: 3 }));
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['a']);
    expect(w.server.isRunning('b')).toBe(true);
    expect(w.server.placements.get('big')?.devices[0]?.index).toBe(onA);
  });
});

describe('moving up', () => {
  const oneGpu = [{ index: 0, name: 'RTX 4090', deviceClass: 'nvidia:rtx 4090', budgetBytes: 10 * GiB }];
  /** 8 blocks of 1 GiB and 1 GiB outside them: 9 GiB on one GPU, or part of it in host RAM. */
  const layered = (modelId: string, extra: Partial<ModelDemand> = {}): ModelDemand =>
    model(modelId, 9, { estimate: { weightsBytes: 9 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8, blockWeightsBytes: GiB, nonBlockWeightsBytes: GiB }, ...extra });

  it('runs a model partly on the CPU while the GPU is full, and moves it onto the GPU once the room is back and it is idle', async () => {
    const w = world([model('hog', 6, { lastUsed: 2 }), layered('big', { lastUsed: 1 })], { budgetGiB: 10 });
    w.desired.state.devices = oneGpu;
    await w.start();
    expect(w.server.placements.get('big')).toMatchObject({ kind: 'partial', devices: [{ index: 0, layers: 3 }], hostBytes: 5 * GiB });

    // While it serves a request it is not moved, even with the room back.
    w.desired.update('big', { inFlight: 1 });
    w.desired.update('hog', { wanted: false });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['hog']);
    expect(w.server.placements.get('big')?.kind).toBe('partial');

    // Idle: stopped where it was and launched whole on the GPU.
    w.desired.update('big', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['hog', 'big']);
    expect(w.server.placements.get('big')).toMatchObject({ kind: 'gpu', devices: [{ index: 0, layers: 8, bytes: 9 * GiB }], hostBytes: 0 });
    expect(w.state('big')).toBe('ready');
    expect(w.log.count(/^moving big up: it now fits whole on GPU 0; stopping it/)).toBe(1);
    // At rest there: nothing more moves.
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['hog', 'big']);
  });

  /**
   * Today's story: `chat` (priority 5) arrives while `tiny` (priority 1) streams, and goes partly
   * to host RAM beside it; then `tiny` goes idle. `tinyExtra` sets what tiny is (pinned, its priority).
   */
  async function displacedByTiny(tinyExtra: Partial<ModelDemand> = {}) {
    // 8 blocks of 0.625 GiB and 1 GiB outside them: 6 GiB, whole on the GPU, or on the CPU beside a 9 GiB model.
    const tinyEstimate = { weightsBytes: 6 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8, blockWeightsBytes: 0.625 * GiB, nonBlockWeightsBytes: GiB };
    const w = world([model('tiny', 6, { priority: 1, lastUsed: 1, estimate: tinyEstimate, ...tinyExtra })], { budgetGiB: 10 });
    w.desired.state.devices = oneGpu;
    await w.start();
    w.desired.update('tiny', { inFlight: 1 });
    w.desired.state.models.push(layered('chat', { priority: 5, lastUsed: 2 }));
    w.controller.trigger();
    await settle();
    expect(w.server.placements.get('chat')).toMatchObject({ kind: 'partial', devices: [{ index: 0, layers: 3 }] });
    return w;
  }

  it('moves a higher-priority model up once what displaced it has been idle the settle time, evicting it; its status says why it waits until then', async () => {
    const w = await displacedByTiny();
    // While tiny streams, chat waits for it, and says so.
    expect(w.controller.status('chat')?.next).toBe(`moving up to GPU 0 when tiny has been idle ${MOVE_UP_SETTLE_MS / 1000} s`);
    await w.clock.advance(MOVE_UP_SETTLE_MS * 3);
    expect(w.server.evictions()).toEqual([]);

    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS - 1);
    expect(w.server.evictions()).toEqual([]);
    expect(w.controller.status('chat')?.next).toBe(`moving up to GPU 0 when tiny has been idle ${MOVE_UP_SETTLE_MS / 1000} s`);

    // The settle time ends: its own timer asks for the pass that stops both, and chat comes back whole on the GPU.
    await w.clock.advance(1);
    await settle();
    expect(new Set(w.server.evictions())).toEqual(new Set(['chat', 'tiny']));
    expect(w.server.placements.get('chat')).toMatchObject({ kind: 'gpu', devices: [{ index: 0, layers: 8, bytes: 9 * GiB }], hostBytes: 0 });
    expect(w.state('chat')).toBe('ready');
    expect(w.controller.status('chat')?.next).toBeNull();
    expect(w.log.count(/^moving chat up: it now fits whole on GPU 0; stopping it and tiny \(idle/)).toBe(1);
  });

  it.each([
    ['pinned', { pinned: true }],
    ['of equal priority', { priority: 5 }],
    ['of higher priority', { priority: 7 }],
  ] as const)('never evicts a displacer that is %s, however long it idles', async (_what, tinyExtra) => {
    const w = await displacedByTiny(tinyExtra);
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_COOL_DOWN_MS + MOVE_UP_SETTLE_MS);
    expect(w.server.evictions()).toEqual([]);
    expect(w.server.placements.get('chat')?.kind).toBe('partial');
    expect(w.controller.status('chat')?.next).toBeNull();
    // That alone kept it: an unpinned tiny of lower priority, idle as long, is evicted at the next pass.
    w.desired.update('tiny', { pinned: false, priority: 1 });
    w.controller.trigger();
    await settle();
    await settle();
    expect(new Set(w.server.evictions())).toEqual(new Set(['chat', 'tiny']));
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
  });

  it('never evicts a busy displacer: a stream that goes on past the settle time keeps chat waiting', async () => {
    const w = await displacedByTiny();
    // Idle for a moment between two requests: not long enough.
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS / 2);
    w.desired.update('tiny', { inFlight: 1 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS * 2);
    expect(w.server.evictions()).toEqual([]);
    // Its idle time starts over at its next idle, not at the first.
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS - 1);
    expect(w.server.evictions()).toEqual([]);
    await w.clock.advance(1);
    await settle();
    expect(new Set(w.server.evictions())).toEqual(new Set(['chat', 'tiny']));
  });

  it('does not thrash: the evicted model asked for again is served beside it, not bounced back, and a moved model is not moved again within the cool-down', async () => {
    const w = await displacedByTiny();
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS);
    await settle();
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
    const evictions = w.server.evictions().length;

    // Still wanted, tiny came back where room is left beside chat: on the CPU.
    expect(w.server.placements.get('tiny')?.kind).toBe('cpu');
    // Requests for it within the cool-down, and idle again past the settle time: chat outranks it, so it is not bounced back down.
    w.desired.update('tiny', { inFlight: 1, lastUsed: w.clock.elapsed() });
    w.controller.trigger();
    await settle();
    w.desired.update('tiny', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await w.clock.advance(MOVE_UP_SETTLE_MS * 2);
    expect(w.server.evictions()).toHaveLength(evictions);
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
    expect(w.server.placements.get('tiny')?.kind).toBe('cpu');

    // Another program takes 2 GiB for a moment: chat no longer fits whole and is placed partly on the CPU again.
    w.desired.update('tiny', { wanted: false });
    w.desired.state.devices = [{ ...oneGpu[0]!, budgetBytes: 8 * GiB }];
    w.controller.trigger();
    await settle();
    await settle();
    expect(w.server.placements.get('chat')?.kind).toBe('partial');
    // The room is back, nothing to evict, but chat moved up less than the cool-down ago: it stays, and says why.
    w.desired.state.devices = oneGpu;
    w.controller.trigger();
    await settle();
    const movedAgain = w.server.evictions().length;
    expect(w.server.placements.get('chat')?.kind).toBe('partial');
    expect(w.controller.status('chat')?.next).toBe(`moving up to GPU 0 when its last move is ${MOVE_UP_COOL_DOWN_MS / 1000} s old`);
    // Once the cool-down has passed, it moves up.
    await w.clock.advance(MOVE_UP_COOL_DOWN_MS);
    await settle();
    expect(w.server.evictions()).toHaveLength(movedAgain + 1);
    expect(w.server.placements.get('chat')?.kind).toBe('gpu');
  });
});

describe('waiting for room', () => {
  it('a model kept out by a busy one waits (not strict); one kept out by pins alone is refused (strict)', async () => {
    const w = world([model('busy', 8), model('pinned', 8, { pinned: true })], { budgetGiB: 20 });
    await w.start();
    w.desired.update('busy', { inFlight: 1 });
    w.desired.state.models.push(model('wants-room', 8, { waitingSince: w.clock.now() }), model('too-big', 14));
    w.controller.trigger();
    await settle();

    expect(w.controller.status('wants-room')?.unschedulableReason).toMatch(/held by .*active busy/);
    expect(w.controller.whyUnservable('wants-room')).toBeNull();
    expect(w.controller.waitReason('wants-room')).toMatch(/^it is waiting for memory: needs 8 GiB; 20 GiB budget/);
    expect(w.controller.yieldsTo('busy')).toEqual(['wants-room']);
    expect(w.controller.yieldsTo('pinned')).toEqual([]);

    expect(w.controller.whyUnservable('too-big')).toEqual({
      code: 'model_unschedulable',
      reason: 'needs 14 GiB; 20 GiB budget, 8 GiB held by pinned pinned (8 GiB), 12 GiB free: it fits only if a pinned model is unpinned',
    });

    // The busy model drains: the waiting one is swapped in, no refusal ever.
    w.desired.update('busy', { inFlight: 0, wanted: false });
    w.controller.trigger();
    await settle();
    expect(w.state('wants-room')).toBe('ready');
    expect(w.server.evictions()).toEqual(['busy']);
  });

  it('an idle model its turn holds is not swapped out for a waiting one; once the hold ends, it is', async () => {
    const w = world([model('served', 8, { lastUsed: 1 })], { budgetGiB: 10 });
    await w.start();
    expect(w.state('served')).toBe('ready');
    // Its client's request just ended; another model's request waits for the memory.
    w.desired.update('served', { heldForTurn: true });
    w.desired.state.models.push(model('waiting', 8, { waitingSince: w.clock.now(), lastUsed: w.clock.now() }));
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual([]);
    expect(w.state('served')).toBe('ready'); // held, not decoding: its status does not say Active
    expect(w.controller.waitReason('waiting')).toMatch(/^it is waiting for memory/);
    expect(w.controller.yieldsTo('served')).toEqual(['waiting']);

    w.desired.update('served', { heldForTurn: false });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual(['served']);
    expect(w.state('waiting')).toBe('ready');
  });

  it('waiting models are served in the order their oldest request came, not the newest', async () => {
    const w = world([model('a', 8, { waitingSince: 10, lastUsed: 30 }), model('b', 8, { waitingSince: 5, lastUsed: 20 })], { budgetGiB: 10 });
    await w.start();
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['b']);
    expect(w.state('a')).toBe('queued');
  });
});

describe('a new definition', () => {
  it('reaches an idle running model: it is stopped and launched again with the new one, the ladder untouched', async () => {
    const w = world([model('a', 4, { pinned: true })]);
    await w.start();
    expect(w.state('a')).toBe('ready');
    expect(w.controller.definitionPending('a')).toBe(false);
    w.desired.update('a', { definitionHash: 'v2' });
    w.controller.trigger();
    await settle();
    await settle();
    expect(w.server.calls.map((c) => `${c.op} ${c.modelId}`)).toEqual(['launch a', 'evict a', 'launch a']);
    expect(w.state('a')).toBe('ready');
    expect(w.controller.definitionPending('a')).toBe(false);
    expect(w.log.count(/^a: its definition changed since it was launched; relaunching it with the new one$/)).toBe(1);
    // Converged: another pass changes nothing.
    w.controller.trigger();
    await settle();
    expect(w.server.calls).toHaveLength(3);
  });

  it('drains a busy one first: its request finishes on the old server, new ones wait, then it is relaunched', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    const release = w.server.claim('a');
    w.desired.update('a', { definitionHash: 'v2', inFlight: 1 });
    w.controller.trigger();
    await settle();
    expect(w.server.evictions()).toEqual([]);
    expect(w.controller.definitionPending('a')).toBe(true);
    expect(w.controller.status('a')?.next).toBe('runs its old definition; relaunching with the new one once its requests finish');
    release?.();
    w.desired.update('a', { inFlight: 0 });
    w.controller.trigger();
    await settle();
    await settle();
    expect(w.server.evictions()).toEqual(['a']);
    expect(w.server.launches()).toHaveLength(2);
    expect(w.controller.definitionPending('a')).toBe(false);
    expect(w.controller.status('a')?.next).toBeNull();
  });
});

describe('claims', () => {
  it('an eviction that finds the server claimed stops nothing, launches nothing, and the next pass evicts it', async () => {
    const w = world([model('old', 8, { lastUsed: 1 })], { budgetGiB: 10 });
    await w.start();
    // The pass reads 'old' idle; a request claims it before the eviction reaches it.
    w.desired.state.models.push(model('new', 8, { lastUsed: 2 }));
    w.server.hold('evict', 'old');
    w.controller.trigger();
    await settle();
    const release = w.server.claim('old');
    w.server.release('evict', 'old');
    await settle();

    expect(w.server.isRunning('old')).toBe(true);
    expect(w.server.launches().map((l) => l.modelId)).toEqual(['old']);
    expect(w.state('old')).toBe('ready');
    expect(w.log.count(/old was not evicted: a request claimed it/)).toBe(1);

    release?.();
    w.controller.trigger();
    await settle();
    expect(w.server.isRunning('old')).toBe(false);
    expect(w.state('new')).toBe('ready');
  });

  it('thousands of claims racing passes never see a claimed server stopped, nor memory overcommitted', async () => {
    const rng = mulberry32(7);
    const ids = ['a', 'b', 'c'];
    // Room for one model at a time: every switch is an eviction, each one a chance to race a claim.
    const w = world(ids.map((id) => model(id, 6, { wanted: false })), { budgetGiB: 10 });
    const open = new Map<string, (() => void)[]>(ids.map((id) => [id, []]));
    const held = new Set<string>();
    const violations: string[] = [];
    w.server.onServerEvent((event) => {
      if (event.type === 'ServerStopped' && (open.get(event.modelId)?.length ?? 0) > 0) violations.push(`stopped ${event.modelId} with claims`);
      const running = ids.filter((id) => w.server.isRunning(id)).length;
      if (event.type === 'ServerSpawned' && running > 1) violations.push(`${running} servers of 6 GiB in a 10 GiB budget after spawning ${event.modelId}`);
    });
    await w.start();
    for (let step = 0; step < 4000; step++) {
      const id = ids[Math.floor(rng() * ids.length)] as string;
      const claims = open.get(id) as (() => void)[];
      const roll = rng();
      if (roll < 0.25) {
        // A request arrives: its model is wanted now, and it claims the server if it is ready.
        w.desired.update(id, { wanted: true, lastUsed: step });
        const release = w.server.claim(id);
        if (release !== null) claims.push(release);
      } else if (roll < 0.7) {
        claims.shift()?.();
        if (claims.length === 0) w.desired.update(id, { wanted: false });
      } else if (roll < 0.85 && !held.has(id)) {
        // The next eviction of it stalls (a slow SIGTERM), so claims can arrive after the pass read the counts.
        w.server.hold('evict', id);
        held.add(id);
      } else if (held.has(id)) {
        w.server.release('evict', id);
        held.delete(id);
      }
      for (const m of ids) w.desired.update(m, { inFlight: open.get(m)?.length ?? 0 });
      w.controller.trigger();
      if (rng() < 0.5) await settle();
    }
    for (const id of held) w.server.release('evict', id);
    for (const claims of open.values()) for (const release of claims.splice(0)) release();
    await w.clock.advance(1000);
    expect(violations).toEqual([]);
    // The race was real: evictions happened, and some found a claim that came after the pass read the counts.
    expect(w.server.evictions().length).toBeGreaterThan(200);
    expect(w.log.count(/was not evicted: a request claimed it/)).toBeGreaterThan(10);
  });
});

/** A small seeded PRNG, so the race test explores the same interleavings every run. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('apply errors', () => {
  it('a failed eviction backs off (doubling), launches nothing meanwhile, and success resets the backoff', async () => {
    const w = world([model('a', 8)], { budgetGiB: 10 });
    w.desired.state.models.push(model('old', 8, { wanted: false }));
    w.server.place('old');
    w.server.failEvict('old', new Error('device busy'), 2);
    await w.start();

    expect(w.ofType('ReconcileFailed').map((e) => e.retryInMs)).toEqual([1000]);
    expect(w.ofType('ReconcileFailed')[0]?.error).toBe('could not evict old: device busy');
    await w.clock.advance(1000);
    expect(w.ofType('ReconcileFailed').map((e) => e.retryInMs)).toEqual([1000, 2000]);
    expect(w.server.launches()).toEqual([]);

    await w.clock.advance(2000);
    expect(w.server.calls).toEqual([
      { op: 'evict', modelId: 'old' },
      { op: 'evict', modelId: 'old' },
      { op: 'evict', modelId: 'old' },
      { op: 'launch', modelId: 'a', level: 'full' },
    ]);

    w.desired.update('old', { wanted: true, priority: 9 });
    w.desired.state.budgetBytes = 20 * GiB;
    w.server.place('stray', 'full', GiB);
    w.server.failEvict('stray', new Error('device busy'), 1);
    w.controller.trigger();
    await settle();
    expect(w.ofType('ReconcileFailed').map((e) => e.retryInMs)).toEqual([1000, 2000, 1000]);
  });

  it('a desired state that cannot be read fails the pass and is retried', async () => {
    const w = world([model('a', 4)]);
    w.desired.readError = new Error('GPU probe failed');
    await w.start();
    expect(w.ofType('ReconcileFailed')).toMatchObject([{ error: 'GPU probe failed', retryInMs: 1000 }]);

    w.desired.readError = null;
    await w.clock.advance(1000);
    expect(w.state('a')).toBe('ready');
  });
});

describe('reconcileNow', () => {
  it('resolves only after a pass that started after the call', async () => {
    const w = world([model('a', 4)]);
    w.server.place('old', 'full', 8 * GiB);
    w.server.hold('evict', 'old');
    await w.start();
    expect(w.desired.reads).toBe(1);

    // The running pass read the world before 'b' was wanted, so it cannot be the one that counts.
    w.desired.state.models.push(model('b', 4));
    let launchedWhenResolved: string[] | null = null;
    const fresh = w.controller.reconcileNow().then(() => (launchedWhenResolved = w.server.launches().map((l) => l.modelId)));
    await settle();
    expect(launchedWhenResolved).toBeNull();

    w.server.release('evict', 'old');
    await fresh;
    expect(launchedWhenResolved).toEqual(['a', 'b']);
  });

  it('sees a demand made before the call', async () => {
    const w = world([model('a', 4, { wanted: false })]);
    await w.start();
    w.desired.update('a', { wanted: true });
    await w.controller.reconcileNow();
    expect(w.server.launches()).toEqual([{ modelId: 'a', level: 'full' }]);
  });

  it('rejects when the controller is not running', async () => {
    const w = world([]);
    await expect(w.controller.reconcileNow()).rejects.toThrow(/not running/);
  });
});

describe('visible states', () => {
  it('passes through queued, loading, ready as the server loads', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    await w.start();
    expect(w.state('a')).toBe('loading');
    w.server.release('launch', 'a');
    await settle();
    expect(w.states('a')).toEqual(['queued', 'loading', 'ready']);
  });

  it('a model too big for the whole budget is unservable at once', async () => {
    const w = world([model('huge', 30)]);
    await w.start();
    expect(w.controller.whyUnservable('huge')).toEqual({ code: 'model_unschedulable', reason: 'needs 30 GiB, more than the whole 24 GiB budget' });
  });
});

describe('stopping', () => {
  it('aborts the loads in flight, waits for them, counts no failure, and says it stopped', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    await w.start();

    await w.stop();
    expect(w.state('a')).toBe('queued');
    expect(w.controller.status('a')?.recovery.attempts).toBe(0);
    expect(w.ofType('LaunchFailed')).toEqual([]);
    expect(w.ofType('ControllerStopped')).toHaveLength(1);
    expect(w.controller.hasStopped()).toBe(true);
    expect(w.clock.pendingDelays()).toEqual([]);
    await expect(w.controller.reconcileNow()).rejects.toThrow(/not running/);
  });

  it('lets the pass in progress finish, and rejects a reconcileNow that no fresh pass will answer', async () => {
    const w = world([]);
    w.server.place('old', 'full', GiB);
    w.server.hold('evict', 'old');
    await w.start();
    const pending = w.controller.reconcileNow().catch((error: unknown) => error);
    const stopped = w.stop();
    await settle();
    expect(w.state('old')).toBe('evicting');

    w.server.release('evict', 'old');
    await stopped;
    expect(w.state('old')).toBe('idle');
    expect(await pending).toMatchObject({ message: 'the controller stopped before a fresh pass ran' });
    expect(w.desired.reads).toBe(1);
  });

  it('waits for a load that does not stop at once before it returns', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a', { honourAbort: false });
    await w.start();
    let stopped = false;
    const stopping = w.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);

    w.server.release('launch', 'a');
    await stopping;
    expect(w.state('a')).toBe('ready');
  });
});
