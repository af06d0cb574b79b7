// The recovery ladder end to end (recovery-ladder.ts): how each kind of failure climbs from retry
// to quarantine, when, at which level, and what a model that serves again, or the machine in the
// way, does to it.
import { afterEach, describe, expect, it } from 'vitest';
import { Controller, DEFAULT_HEALTHY_AFTER_MS, ENVIRONMENT_RECHECK_MS } from '../../../core/controller/index.js';
import { footprintAt } from '../../../core/policy/levels.js';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { FakeDesired, RecordingServer } from '../../support/recording-server.js';
import { failure, GiB, model, RecordingLog, stopAfterTest, stopWorlds, world } from './controller-world.js';

afterEach(stopWorlds);

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

  it('oom: a smaller context, then part on the CPU, then CPU only, then its fallback serves in its place', async () => {
    const w = world([model('a', 8, { fallbackId: 'small' }), model('small', 2, { wanted: false })]);
    w.server.failLaunch('a', failure('oom'), 4);
    await w.start();

    expect(w.server.launches()).toEqual([
      { modelId: 'a', level: 'full' },
      { modelId: 'a', level: 'smaller-context' },
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
      'a full', 'a smaller-context', 'a partial', 'a minimal', 'small full', 'small smaller-context', 'small partial', 'small minimal',
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

    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'smaller-context', 'partial', 'minimal']);
    expect(w.state('a')).toBe('quarantined');
    expect(w.controller.whyUnservable('a')?.reason).toMatch(/the ladder says fall back, but it has no fallback model configured/);
  });

  it('a launch whose host share RAM cannot hold (part on the CPU, or all of it) is refused with the numbers, without launching', async () => {
    const w = world([model('a', 4)], { hostFreeGiB: 1 });
    w.server.failLaunch('a', failure('oom'), 2);
    await w.start();

    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'smaller-context']);
    expect(w.ofType('LaunchFailed').map((e) => [e.level, e.error])).toEqual([
      ['full', 'scripted oom failure'],
      ['smaller-context', 'scripted oom failure'],
      ['partial', 'a needs 2 GiB of RAM for the layers on the CPU; 1 GiB free'],
      ['minimal', 'a needs 4 GiB of RAM on the CPU; 1 GiB free'],
    ]);
    expect(w.state('a')).toBe('quarantined');
  });

  it('hang: retried once at full, then at a smaller context, which serves (degraded)', async () => {
    const w = world([model('a', 4)]);
    w.server.failLaunch('a', failure('hang'), 2);
    await w.start();
    expect(w.state('a')).toBe('failed');

    await w.clock.advance(1000);
    expect(w.server.launches().map((l) => l.level)).toEqual(['full', 'full', 'smaller-context']);
    expect(w.state('a')).toBe('degraded');
    // Ready is not yet healthy: the ladder holds until its first answer.
    expect(w.controller.status('a')).toMatchObject({ level: 'smaller-context', recovery: { kind: 'hang', attempts: 2 } });
    w.controller.served('a');
    expect(w.controller.status('a')).toMatchObject({ level: 'smaller-context', recovery: { kind: 'none', attempts: 0, nextAction: null } });
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
    stopAfterTest(async () => {
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
      { modelId: 'a', level: 'smaller-context' },
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
