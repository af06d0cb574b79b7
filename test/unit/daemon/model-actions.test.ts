// A person's commands change the desired state's inputs and ask the controller to look again.
import { describe, expect, it } from 'vitest';
import { ModelActivity } from '../../../core/daemon/activity.js';
import { createModelActions, PinPolicy } from '../../../core/daemon/model-actions.js';
import { catalogModel } from './catalog-model.js';

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
  const clock = { now: () => 1_000, elapsed: () => 1_000 };
  const activity = new ModelActivity(clock);
  const calls: string[] = [];
  const quarantined = new Map<string, string>();
  const controller = {
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
  return { actions, pinned, activity, calls, policy, model, quarantined, claimed, answering };
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
    s.claimed.set('a', 2);
    // A request waiting for the model is not in flight: only claims on its server are.
    s.activity.wait('a');
    expect((await s.actions.unload('a')).message).toMatch(/unloads after its 2 request\(s\) in flight finish/);
    s.claimed.set('a', 0);
    expect((await s.actions.unload('a')).message).toMatch(/unloads now/);
  });

  it("unload of a model that answers for another in fallback says it stays, and what lets it go", async () => {
    const s = setup();
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

  it('retry asks the controller to start the ladder over', async () => {
    const s = setup();
    await s.actions.retry('a');
    expect(s.calls).toContain('retry a');
  });
});
