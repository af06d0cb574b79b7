// The controller's own loop (controller.ts): triggers collapse into passes, a refresh is one pass,
// reconcileNow answers with a fresh pass, a pass that fails backs off, and stopping ends it all.
import { afterEach, describe, expect, it } from 'vitest';
import { ACTIVITY_REFRESH_MS } from '../../../core/controller/index.js';
import { settle } from '../../support/fake-clock.js';
import { failure, GiB, model, stopWorlds, world } from './controller-world.js';

afterEach(stopWorlds);

describe('convergence', () => {
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
});

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
