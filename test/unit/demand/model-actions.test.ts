// A person's commands change the desired state's inputs and ask the controller to look again.
import { describe, expect, it } from 'vitest';
import { ModelActivity } from '../../../core/demand/activity.js';
import { createModelActions, PinPolicy } from '../../../core/demand/model-actions.js';
import { phaseOfState, type ModelStateName, type ModelStatus } from '../../../core/contracts/model-status.js';
import type { FailureKind } from '../../../core/contracts/recovery.js';
import { catalogModel } from '../../support/catalog-model.js';
import { FakeClock } from '../../support/fake-clock.js';

function setup(models = [catalogModel('a'), catalogModel('p', { pinnedByDefault: true })]) {
  const pinned = new Set<string>();
  const pins = {
    isPinned: (id: string) => pinned.has(id),
    setPinned: async (id: string, on: boolean) => {
      const changed = pinned.has(id) !== on;
      if (on) pinned.add(id);
      else pinned.delete(id);
      return changed;
    },
  };
  const activity = new ModelActivity(new FakeClock());
  const calls: string[] = [];
  const quarantined = new Map<string, string>();
  // Each model's state as the controller's last pass left it; idle and never failed unless a test says so.
  const states = new Map<string, { state: ModelStateName; failure?: FailureKind; servedBy?: string }>();
  const status = (id: string): ModelStatus => {
    const s = states.get(id) ?? { state: 'idle' };
    return {
      modelId: id,
      state: s.state,
      phase: phaseOfState(s.state),
      level: null,
      busy: s.state === 'active',
      recovery: { kind: s.failure ?? 'none', attempts: s.failure === undefined ? 0 : 1, nextAction: null, nextAttemptAt: null, lastError: null },
      servedBy: s.servedBy ?? null,
      unschedulableReason: null,
      next: null,
      since: 0,
    };
  };
  const controller = {
    status,
    trigger: () => calls.push('trigger'),
    retry: (id: string) => (calls.push(`retry ${id}`), true),
    whyUnservable: (id: string) => (quarantined.has(id) ? { code: 'model_quarantined', reason: quarantined.get(id) ?? '' } : null),
  };
  // Requests claimed on each model's server: the supervisor's count, which unload reports.
  const claimed = new Map<string, number>();
  // Per model, the wanted models in fallback it answers for (the daemon asks the controller).
  const answering = new Map<string, string[]>();
  const policy = new PinPolicy(pins);
  const actions = createModelActions(
    {
      resolve: (id) => models.find((m) => m.id === id),
      pins,
      activity,
      inFlight: (id) => claimed.get(id) ?? 0,
      controller,
      answersFor: (id) => answering.get(id) ?? [],
    },
    policy,
  );
  const model = (id: string) => models.find((m) => m.id === id)!;
  return { actions, pinned, activity, calls, policy, model, quarantined, claimed, answering, states };
}

describe('model actions', () => {
  it('pin persists and triggers; pinning twice says so', async () => {
    const s = setup();
    expect((await s.actions.pin('a')).message).toMatch(/a pinned/);
    expect(s.pinned.has('a')).toBe(true);
    expect(s.policy.isPinned(s.model('a'))).toBe(true);
    expect((await s.actions.pin('a')).message).toMatch(/already pinned/);
    expect(s.calls.filter((c) => c === 'trigger')).toHaveLength(2);
  });

  it('unpins a model the config pins, for this run, and says the config will pin it again', async () => {
    const s = setup();
    expect(s.policy.isPinned(s.model('p'))).toBe(true);
    const result = await s.actions.unpin('p');
    expect(s.policy.isPinned(s.model('p'))).toBe(false);
    expect(result.message).toMatch(/pinned again at the next start by the config file/);
  });

  it('load counts as use; unload forgets it and unpins', async () => {
    const s = setup();
    s.states.set('a', { state: 'ready' });
    await s.actions.load('a');
    expect(s.activity.recentlyUsed('a', 600_000)).toBe(true);
    await s.actions.pin('a');
    const result = await s.actions.unload('a');
    expect(s.activity.recentlyUsed('a', 600_000)).toBe(false);
    expect(s.policy.isPinned(s.model('a'))).toBe(false);
    expect(result.message).toMatch(/unloads now \(and is no longer pinned\)/);
  });

  it('refuses to load a quarantined model, saying why and what to do, without keeping it wanted', async () => {
    const s = setup();
    s.quarantined.set('a', 'tensor data is not within the file bounds');
    const result = await s.actions.load('a');
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/a is quarantined; retry it first \(llmtray retry a\): tensor data is not within the file bounds/);
    expect(s.activity.recentlyUsed('a', 600_000)).toBe(false);
  });

  it('unload of a busy model says it waits for its requests, counted where they are claimed', async () => {
    const s = setup();
    s.states.set('a', { state: 'active' });
    s.claimed.set('a', 2);
    // A request waiting for the model is not in flight: only claims on its server are.
    s.activity.wait('a');
    expect((await s.actions.unload('a')).message).toMatch(/unloads after its 2 request\(s\) in flight finish/);
    s.claimed.set('a', 0);
    expect((await s.actions.unload('a')).message).toMatch(/unloads now/);
  });

  it("unload of a model that answers for another in fallback says it stays, and what lets it go", async () => {
    const s = setup();
    s.states.set('a', { state: 'ready' });
    await s.actions.pin('a');
    s.answering.set('a', ['p']);
    const result = await s.actions.unload('a');
    expect(result).toEqual({ ok: true, message: 'a stays loaded (and is no longer pinned): it answers for p, in fallback and still wanted; it unloads once p is unloaded or retried' });
    // Its own want is gone all the same: once p lets go, nothing keeps it.
    expect(s.pinned.has('a')).toBe(false);
    expect(s.activity.recentlyUsed('a', 600_000)).toBe(false);
    s.answering.set('a', []);
    expect((await s.actions.unload('a')).message).toBe('a unloads now');
  });

  it('retry of a failing model asks the controller to start the ladder over', async () => {
    const s = setup();
    s.states.set('a', { state: 'failed', failure: 'crash' });
    expect((await s.actions.retry('a')).message).toBe('a: its failures are forgotten and recovery starts over; it loads when next wanted');
    expect(s.calls).toContain('retry a');
    // Degraded (serving, smaller) is a failure to forget too: its full level is tried again.
    s.states.set('a', { state: 'degraded', failure: 'oom' });
    expect((await s.actions.retry('a')).message).toMatch(/recovery starts over/);
  });

  it('retry of a healthy model says nothing needed retrying, and leaves the controller alone', async () => {
    const s = setup();
    s.states.set('a', { state: 'ready' });
    expect(await s.actions.retry('a')).toEqual({ ok: true, message: 'a has not failed: nothing needed retrying' });
    expect(s.calls).not.toContain('retry a');
  });

  it('unload of a model that is not loaded says so instead of "unloads now"', async () => {
    const s = setup();
    expect((await s.actions.unload('a')).message).toBe('a was not loaded: nothing to unload');
    await s.actions.pin('a');
    s.states.set('a', { state: 'queued' });
    expect((await s.actions.unload('a')).message).toBe('a was not loaded yet: it no longer waits to load (and is no longer pinned)');
    s.states.set('a', { state: 'fallback', servedBy: 'p' });
    expect((await s.actions.unload('a')).message).toBe('a was not loaded (p answered for it): it is no longer wanted');
  });

  it('unpin says what the next pass does: evict a resident model nobody uses now, keep one in use', async () => {
    const s = setup();
    s.states.set('a', { state: 'ready' });
    await s.actions.pin('a');
    expect((await s.actions.unpin('a')).message).toBe('a unpinned: nothing has used it within its idle time (600 s), so it is being evicted now');

    await s.actions.pin('a');
    await s.actions.load('a');
    expect((await s.actions.unpin('a')).message).toBe('a unpinned: it stays while used and is evicted once unused for 600 s');

    s.states.set('a', { state: 'idle' });
    await s.actions.pin('a');
    expect((await s.actions.unpin('a')).message).toBe('a unpinned: it was not loaded and is no longer wanted');
  });

  it('pin of a quarantined model says a retry must come first', async () => {
    const s = setup();
    s.states.set('a', { state: 'quarantined', failure: 'invalid' });
    expect((await s.actions.pin('a')).message).toBe('a pinned, but it is quarantined: it loads once retried (llmtray retry a), then stays resident');
  });

  it('pin and load of a model already serving say it is loaded, not that it loads now', async () => {
    const s = setup();
    s.states.set('a', { state: 'ready' });
    expect((await s.actions.pin('a')).message).toBe('a pinned: it is loaded and stays resident');
    expect((await s.actions.load('a')).message).toBe('a is already loaded: it stays for its idle time (600 s) from now');
  });
});
