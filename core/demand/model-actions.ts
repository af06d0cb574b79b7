// What a person's commands do (tray, dashboard, CLI, HTTP all end here). Each changes an
// input of the desired state and asks the controller to look again; none launches or stops
// a server itself, so the controller stays the single owner of what runs.
import type { CatalogModel } from '../catalog/catalog.js';
import type { CommandResult } from '../contracts/commands.js';
import { isResident, isServing, needsAttention, type ModelStatus } from '../contracts/model-status.js';
import type { ModelActions } from '../admin/admin-service.js';
import type { PinStore } from '../admin/pin-store.js';
import type { ModelActivity } from './activity.js';

export interface ActionParts {
  resolve(id: string): CatalogModel | undefined;
  pins: Pick<PinStore, 'isPinned' | 'setPinned'>;
  activity: ModelActivity;
  /** Requests claimed on the model's server now. */
  inFlight(modelId: string): number;
  controller: {
    trigger(): void;
    retry(modelId: string): boolean;
    whyUnservable(modelId: string): { code: string; reason: string } | null;
    /** The model's state as the last pass left it; a reply says what a command did from it (undefined: never seen). */
    status(modelId: string): ModelStatus | undefined;
  };
  /**
   * The wanted models in fallback that `modelId` answers for. A model in fallback hands its want
   * to the model that serves for it (core/controller/policy-inputs.ts), so unloading that one
   * forgets only its own want: it stays while any of these is wanted. Default: none.
   */
  answersFor?(modelId: string): string[];
}

/**
 * A model pinned in the config (`pinned: true`) is pinned by default; a person may unpin it
 * for this run. The override lives in memory only: the config file is the person's own
 * text, and rewriting it behind their back would be worse than a pin that comes back on restart.
 */
export class PinPolicy {
  private readonly unpinnedDefaults = new Set<string>();

  constructor(private readonly pins: Pick<PinStore, 'isPinned'>) {}

  isPinned(model: CatalogModel): boolean {
    if (this.pins.isPinned(model.id)) return true;
    return model.pinnedByDefault && !this.unpinnedDefaults.has(model.id);
  }

  overrideDefault(modelId: string, pinned: boolean): void {
    if (pinned) this.unpinnedDefaults.delete(modelId);
    else this.unpinnedDefaults.add(modelId);
  }
}

export function createModelActions(parts: ActionParts, pinPolicy: PinPolicy): ModelActions {
  const model = (id: string): CatalogModel => {
    const found = parts.resolve(id);
    if (found === undefined) throw new Error(`'${id}' is not in the catalog`);
    return found;
  };
  const stateOf = (id: string): ModelStatus['state'] => parts.controller.status(id)?.state ?? 'idle';
  /**
   * What keeps a model resident once no pin does: a request in flight or waiting, or use within
   * its idle time; the same test the desired state makes on its next pass (desired-state.ts), so
   * the reply predicts that pass instead of hoping.
   */
  const keptByUse = (m: CatalogModel): boolean => parts.inFlight(m.id) > 0 || parts.activity.recentlyUsed(m.id, m.idleTtlMs);
  const idleTime = (m: CatalogModel): string => `${Math.round(m.idleTtlMs / 1000)} s`;
  const setPinned = async (id: string, pinned: boolean): Promise<CommandResult> => {
    const m = model(id);
    const was = pinPolicy.isPinned(m);
    pinPolicy.overrideDefault(m.id, pinned);
    await parts.pins.setPinned(m.id, pinned);
    parts.controller.trigger();
    if (was === pinned) return { ok: true, message: `${m.id} was already ${pinned ? 'pinned' : 'unpinned'}` };
    if (pinned) {
      // A pin does not lift a quarantine: "it loads now" would not come true until a retry.
      if (stateOf(m.id) === 'quarantined') return { ok: true, message: `${m.id} pinned, but it is quarantined: it loads once retried (llmtray retry ${m.id}), then stays resident` };
      return { ok: true, message: isServing(stateOf(m.id)) ? `${m.id} pinned: it is loaded and stays resident` : `${m.id} pinned: it loads now and stays resident` };
    }
    const defaultNote = m.pinnedByDefault ? ' (pinned again at the next start by the config file; set pinned: false there to keep it off)' : '';
    return { ok: true, message: `${m.id} unpinned: ${unpinnedFate(m)}${defaultNote}` };
  };
  /**
   * What happens to a model that lost its pin, as the next pass will do it: a resident model
   * nobody uses is evicted at once (the plan keeps only wanted models, core/policy/place.ts);
   * "it may be evicted when idle" was said of one evicted half a second later (issue 35).
   */
  const unpinnedFate = (m: CatalogModel): string => {
    const answering = parts.answersFor?.(m.id) ?? [];
    if (answering.length > 0) return `it stays loaded while it answers for ${answering.join(' and ')}, in fallback`;
    if (!isResident(stateOf(m.id))) return 'it was not loaded and is no longer wanted';
    if (keptByUse(m)) return `it stays while used and is evicted once unused for ${idleTime(m)}`;
    return `nothing has used it within its idle time (${idleTime(m)}), so it is being evicted now`;
  };
  return {
    pin: (id) => setPinned(id, true),
    unpin: (id) => setPinned(id, false),
    async load(id) {
      const m = model(id);
      // Loading a quarantined model would only keep it wanted until a retry relaunches it by
      // surprise; say what is wrong and what to do instead.
      const why = parts.controller.whyUnservable(m.id);
      if (why?.code === 'model_quarantined') {
        return { ok: false, message: `${m.id} is quarantined; retry it first (llmtray retry ${m.id}): ${why.reason}` };
      }
      parts.activity.use(m.id);
      parts.controller.trigger();
      if (isServing(stateOf(m.id))) return { ok: true, message: `${m.id} is already loaded: it stays for its idle time (${idleTime(m)}) from now` };
      return { ok: true, message: `${m.id} requested: it loads now and stays for its idle time (${idleTime(m)})` };
    },
    async unload(id) {
      const m = model(id);
      const state = stateOf(m.id);
      const wasPinned = pinPolicy.isPinned(m);
      if (wasPinned) {
        pinPolicy.overrideDefault(m.id, false);
        await parts.pins.setPinned(m.id, false);
      }
      parts.activity.forget(m.id);
      parts.controller.trigger();
      const unpinned = wasPinned ? ' (and is no longer pinned)' : '';
      // Saying "unloads now" for a model that stays was the bug a new user hit (issue 13).
      const kept = parts.answersFor?.(m.id) ?? [];
      if (kept.length > 0) {
        const them = kept.join(' and ');
        return {
          ok: true,
          message: `${m.id} stays loaded${unpinned}: it answers for ${them}, in fallback and still wanted; it unloads once ${them} ${kept.length === 1 ? 'is' : 'are'} unloaded or retried`,
        };
      }
      // "demo-tiny unloads now" was said of a model that was not loaded (issue 35).
      if (state === 'fallback') return { ok: true, message: `${m.id} was not loaded (${parts.controller.status(m.id)?.servedBy ?? 'its fallback'} answered for it): it is no longer wanted${unpinned}` };
      if (state === 'queued') return { ok: true, message: `${m.id} was not loaded yet: it no longer waits to load${unpinned}` };
      if (!isResident(state)) return { ok: true, message: `${m.id} was not loaded: nothing to unload${unpinned}` };
      const busy = parts.inFlight(m.id);
      const when = busy > 0 ? `after its ${busy} request(s) in flight finish` : 'now';
      return { ok: true, message: `${m.id} unloads ${when}${unpinned}` };
    },
    async retry(id) {
      const m = model(id);
      // A healthy model has no failures to forget: "recovery starts over" said of one was not true (issue 35).
      const status = parts.controller.status(m.id);
      if (status === undefined || !needsAttention(status)) {
        return { ok: true, message: `${m.id} has not failed: nothing needed retrying` };
      }
      const known = parts.controller.retry(m.id);
      if (!known) parts.controller.trigger();
      return { ok: true, message: `${m.id}: its failures are forgotten and recovery starts over; it loads when next wanted` };
    },
  };
}
