// What Ollama's model routes are told of each model (core/demand/model-cards.ts): facts for the
// translation, cards with a stable digest, the resident models with when each expires (an app's
// keep_alive, a pin that outlasts it, a busy model that does not expire), and keep_alive kept
// in the activity with a pass asked for.
import { describe, expect, it } from 'vitest';
import type { Snapshot } from '../../../core/contracts/snapshot.js';
import { ModelActivity } from '../../../core/demand/activity.js';
import { modelCards } from '../../../core/demand/model-cards.js';
import { catalogModel } from '../../support/catalog-model.js';
import { FakeClock } from '../../support/fake-clock.js';
import { fixtureModel, fixtureSnapshot } from '../../support/fixture-snapshot.js';

const GiB = 1024 ** 3;

function cards(views: Snapshot['models']) {
  const clock = new FakeClock(undefined, 1_000);
  const activity = new ModelActivity(clock);
  let triggers = 0;
  const parts = modelCards({
    catalog: { models: () => [catalogModel('a', { projectorPath: '/m/mmproj.gguf' }), catalogModel('b', { idleTtlMs: 60_000, embeddings: { modelPools: true } })] },
    readCard: async () => ({ card: null, modifiedAt: 42 }),
    snapshot: () => ({ ...fixtureSnapshot(), models: views, revision: 1 }),
    activity,
    trigger: () => void triggers++,
  });
  return { parts, activity, clock, triggers: () => triggers };
}

const resident = (id: string, overrides: Parameters<typeof fixtureModel>[1] = {}) =>
  fixtureModel(id, {
    inFlight: 0,
    pinned: false,
    placement: { kind: 'partial', devices: [{ index: 0, layers: 20, bytes: 3 * GiB }], cpuMoeLayers: 0, hostBytes: 1 * GiB },
    ...overrides,
    status: { ...fixtureModel(id).status, modelId: id, state: 'ready', phase: 'serving', level: 'full', ...overrides.status },
  });

describe("the gateway's model cards", () => {
  it("gives a model's facts and card: vision from its projector, an embedding model as one, a digest of its definition", async () => {
    const { parts } = cards([]);
    expect(parts.modelFacts('a')).toEqual({ vision: true, contextTokens: 4096 });
    expect(parts.modelFacts('nope')).toBeUndefined();
    const card = await parts.describe('b', { verbose: false });
    expect(card).toMatchObject({ modelId: 'b', modifiedAt: 42, vision: false, embeddingsOnly: true, gguf: null });
    expect(card?.digest).toMatch(/^[0-9a-f]{64}$/);
    expect((await parts.describe('b', { verbose: false }))?.digest).toBe(card?.digest);
    expect((await parts.describe('a', { verbose: false }))?.digest).not.toBe(card?.digest);
  });

  it('lists the resident models with what they hold, expiring at the last use plus the idle TTL an app set', () => {
    const { parts, activity } = cards([resident('b'), fixtureModel('a')]);
    activity.use('b');
    const usedAt = activity.lastUsedAt('b') as number;
    const [only, ...rest] = parts.residents();
    expect(rest).toEqual([]);
    expect(only).toEqual({ modelId: 'b', sizeBytes: 4 * GiB, deviceBytes: 3 * GiB, expiresAt: usedAt + 60_000, contextTokens: 4096 });
    parts.keepAlive('b', 5_000);
    expect(parts.residents()[0]?.expiresAt).toBe(usedAt + 5_000);
  });

  it('says nothing unloads a pinned or busy model, nor one kept for ever', () => {
    const { parts, activity } = cards([resident('a', { pinned: true }), resident('b', { inFlight: 1 })]);
    activity.use('a');
    activity.use('b');
    expect(parts.residents().map((r) => r.expiresAt)).toEqual([null, null]);
    const forever = cards([resident('b')]);
    forever.activity.use('b');
    forever.parts.keepAlive('b', Infinity);
    expect(forever.parts.residents()[0]?.expiresAt).toBeNull();
  });

  it('keeps an app’s keep_alive in the activity and asks the controller to look again', () => {
    const { parts, activity, triggers } = cards([]);
    parts.keepAlive('a', 0);
    expect(activity.idleTtl('a', 600_000)).toBe(0);
    expect(triggers()).toBe(1);
  });

  it("tells a person's pin from the snapshot", () => {
    const { parts } = cards([resident('a', { pinned: true }), resident('b')]);
    expect(parts.isPinned('a')).toBe(true);
    expect(parts.isPinned('b')).toBe(false);
    expect(parts.isPinned('nope')).toBe(false);
  });
});
