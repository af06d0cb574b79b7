// The reconcile loop against a recording fake server and a fake clock: what it launches and
// evicts, in which order, when, and what each model's visible state says. No sleeps: time
// moves only through FakeClock.advance, and promise work settles on one event-loop turn.
import { afterEach, describe, expect, it } from 'vitest';
import { Controller, DEFAULT_RESYNC_MS } from '../../../core/controller/index.js';
import type { ModelDemand } from '../../../core/controller/effects.js';
import { ModelUnservableError, type ControllerEvent } from '../../../core/contracts/controller-events.js';
import { footprintAt } from '../../../core/policy/levels.js';
import type { FailureKind } from '../../../core/policy/recover.js';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { FakeDesired, RecordingServer } from '../../support/recording-server.js';

const GiB = 1024 ** 3;

/** A launch failure the test's classifier reads the kind from, as the engine's LaunchError does. */
class ScriptedFailure extends Error {
  constructor(readonly kind: FailureKind) {
    super(`scripted ${kind} failure`);
  }
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
    estimate: { weightsBytes: gib * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0 },
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
  const server = new RecordingServer((id, level) => footprintAt(level, desired.model(id).estimate).deviceBytes);
  const log = new RecordingLog();
  const controller = new Controller({
    provider: desired,
    server,
    clock,
    log,
    classify: (error) => (error instanceof ScriptedFailure ? error.kind : 'crash'),
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
  return { clock, desired, server, log, controller, events, start, stop, state, ofType };
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
    expect(w.controller.status('c')?.unschedulableReason).toMatch(/held by active x \(8 GiB\) and pinned p \(8 GiB\)|held by pinned p \(8 GiB\) and active x \(8 GiB\)/);
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

describe('the recovery ladder, end to end', () => {
  it('crash: retried four times with a doubling backoff, then quarantined', async () => {
    const w = world([model('a', 4)]);
    w.server.fail('launch', 'a', new ScriptedFailure('crash'), 5);
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

  it('oom: degraded, then part on the CPU, then CPU only, then its fallback serves in its place', async () => {
    const w = world([model('a', 8, { fallbackId: 'small' }), model('small', 2, { wanted: false })]);
    w.server.fail('launch', 'a', new ScriptedFailure('oom'), 4);
    const ready = w.controller.waitUntilReady('a', new AbortController().signal).then(() => 'ready');
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
    await expect(ready).resolves.toBe('ready');

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
    w.server.fail('launch', 'a', new ScriptedFailure('oom'), 4);
    w.server.fail('launch', 'small', new ScriptedFailure('oom'), 4);
    const outcome = w.controller.waitUntilReady('a', new AbortController().signal).catch((error: unknown) => error);
    await w.start();

    expect(w.server.launches().map((l) => `${l.modelId} ${l.level}`)).toEqual([
      'a full', 'a degraded', 'a partial', 'a minimal', 'small full', 'small degraded', 'small partial', 'small minimal',
    ]);
    expect(w.state('a')).toBe('fallback');
    expect(w.state('small')).toBe('quarantined');
    const why = w.controller.whyUnservable('a');
    expect(why).toEqual({ code: 'model_quarantined', reason: expect.stringMatching(/^its fallback small is unavailable: failed 4 launches in a row/) });
    expect(await outcome).toMatchObject(why ?? {});
  });

  it('oom with no fallback configured ends in quarantine, saying so', async () => {
    const w = world([model('a', 8)]);
    w.server.fail('launch', 'a', new ScriptedFailure('oom'), 4);
    await w.start();

    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'degraded', 'partial', 'minimal']);
    expect(w.state('a')).toBe('quarantined');
    expect(w.controller.whyUnservable('a')?.reason).toMatch(/the ladder says fall back, but it has no fallback model configured/);
  });

  it('a CPU-only launch that host RAM cannot hold is refused with the numbers, without launching', async () => {
    const w = world([model('a', 4)], { hostFreeGiB: 1 });
    w.server.fail('launch', 'a', new ScriptedFailure('oom'), 3);
    await w.start();

    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'degraded', 'partial']);
    expect(w.controller.status('a')?.recovery.lastError).toBe('a needs 4 GiB of RAM on the CPU; 1 GiB free');
    expect(w.state('a')).toBe('quarantined');
  });

  it('hang: retried once at full, then degraded, which serves', async () => {
    const w = world([model('a', 4)]);
    w.server.fail('launch', 'a', new ScriptedFailure('hang'), 2);
    await w.start();
    expect(w.state('a')).toBe('failed');

    await w.clock.advance(1000);
    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'full', 'degraded']);
    expect(w.state('a')).toBe('degraded');
    expect(w.controller.status('a')).toMatchObject({ level: 'degraded', recovery: { kind: 'none', attempts: 0, nextAction: null } });
  });

  it('retry() lifts quarantine; nothing else does until the definition changes', async () => {
    const w = world([model('a', 4), model('b', 4)]);
    w.server.fail('launch', 'a', new ScriptedFailure('oom'), 4);
    w.server.fail('launch', 'b', new ScriptedFailure('oom'), 4);
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

  it('a server that dies after it was ready climbs the ladder like a failed launch', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    expect(w.state('a')).toBe('ready');

    w.server.die('a');
    w.controller.serverDied('a', 'crash', 'engine exited with signal SIGKILL');
    await settle();
    expect(w.state('a')).toBe('failed');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 1, nextAction: 'retry', lastError: 'engine exited with signal SIGKILL' });
    expect(w.server.launches()).toHaveLength(1);

    await w.clock.advance(1000);
    expect(w.server.launches()).toHaveLength(2);
    expect(w.state('a')).toBe('ready');
    // A death report for a model that is not running (say, one being evicted) changes nothing.
    w.controller.serverDied('b', 'crash', 'not ours');
    expect(w.controller.status('b')).toBeUndefined();
  });

  it('a server found gone by a pass, before anyone reported its death, counts as a crash too', async () => {
    const w = world([model('a', 4)]);
    await w.start();
    w.server.die('a');
    w.controller.trigger();
    await settle();
    expect(w.state('a')).toBe('failed');
    expect(w.controller.status('a')?.recovery).toMatchObject({ kind: 'crash', attempts: 1, lastError: "a's server ended without being asked to" });
    // The supervisor's report that follows is not counted twice.
    w.controller.serverDied('a', 'crash', 'killed by SIGKILL while serving');
    expect(w.controller.status('a')?.recovery.attempts).toBe(1);
  });

  it('a model that fails to launch does not disturb one that is serving', async () => {
    const w = world([model('b', 4)]);
    await w.start();
    w.desired.state.models.push(model('a', 4));
    w.server.fail('launch', 'a', new ScriptedFailure('crash'), 1);
    w.controller.trigger();
    await settle();

    expect(w.state('a')).toBe('failed');
    expect(w.state('b')).toBe('ready');
    expect(w.server.evictions()).toEqual([]);

    await w.clock.advance(1000);
    expect(w.state('a')).toBe('ready');
    expect(w.state('b')).toBe('ready');
  });
});

describe('apply errors', () => {
  it('a failed eviction backs off (doubling), launches nothing meanwhile, and success resets the backoff', async () => {
    const w = world([model('a', 8)], { budgetGiB: 10 });
    w.desired.state.models.push(model('old', 8, { wanted: false }));
    w.server.place('old');
    w.server.fail('evict', 'old', new Error('device busy'), 2);
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
    w.server.fail('evict', 'stray', new Error('device busy'), 1);
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

describe('waitUntilReady', () => {
  it('resolves when the model becomes ready, after passing through its states', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    const ready = w.controller.waitUntilReady('a', new AbortController().signal);
    await w.start();
    expect(w.state('a')).toBe('loading');

    w.server.release('launch', 'a');
    await expect(ready).resolves.toBeUndefined();
    const states = w.ofType('ModelStateChanged').filter((e) => e.modelId === 'a').map((e) => e.status.state);
    expect(states).toEqual(['queued', 'loading', 'ready']);
  });

  it('rejects with the reason as soon as the model is quarantined', async () => {
    const w = world([model('a', 4)]);
    w.server.fail('launch', 'a', new ScriptedFailure('oom'), 4);
    const outcome = w.controller.waitUntilReady('a', new AbortController().signal).then(
      () => null,
      (error: unknown) => error,
    );
    await w.start();
    const error = await outcome;
    expect(error).toBeInstanceOf(ModelUnservableError);
    expect(error).toMatchObject({ code: 'model_quarantined', reason: expect.stringMatching(/^failed 4 launches in a row \(last failure: oom/) });
  });

  it('rejects at once for a model the plan leaves out', async () => {
    const w = world([model('huge', 30)]);
    await w.start();
    await expect(w.controller.waitUntilReady('huge', new AbortController().signal)).rejects.toMatchObject({
      code: 'model_unschedulable',
      reason: 'needs 30 GiB, more than the whole 24 GiB budget',
    });
  });

  it('rejects with the signal reason when the wait is abandoned', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    await w.start();
    const abort = new AbortController();
    const waiting = w.controller.waitUntilReady('a', abort.signal);
    abort.abort(new Error('client left'));
    await expect(waiting).rejects.toThrow('client left');
    w.server.release('launch', 'a');
  });
});

describe('stopping', () => {
  it('aborts the loads in flight, waits for them, counts no failure, and releases every waiter', async () => {
    const w = world([model('a', 4)]);
    w.server.hold('launch', 'a');
    await w.start();
    const waiting = w.controller.waitUntilReady('a', new AbortController().signal).catch((error: unknown) => error);

    await w.stop();
    expect(w.state('a')).toBe('queued');
    expect(w.controller.status('a')?.recovery.attempts).toBe(0);
    expect(w.ofType('LaunchFailed')).toEqual([]);
    expect(await waiting).toMatchObject({ message: 'the controller stopped, so a will not be loaded' });
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
