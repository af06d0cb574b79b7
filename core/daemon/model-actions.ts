// What a person's commands do (tray, dashboard, CLI, HTTP all end here). Each changes an
// input of the desired state and asks the controller to look again; none launches or stops
// a server itself, so the controller stays the single owner of what runs.
import type { CatalogModel } from '../catalog/catalog.js';
import type { CommandResult } from '../contracts/commands.js';
import type { ModelActions } from '../admin/admin-service.js';
import type { PinStore } from '../admin/pin-store.js';
import type { ModelActivity } from './activity.js';

export interface ActionParts {
  resolve(id: string): CatalogModel | undefined;
  pins: Pick<PinStore, 'isPinned' | 'setPinned'>;
  activity: ModelActivity;
  /** Requests claimed on the model's server now. */
  inFlight(modelId: string): number;
  controller: { trigger(): void; retry(modelId: string): boolean; whyUnservable(modelId: string): { code: string; reason: string } | null };
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
  const setPinned = async (id: string, pinned: boolean): Promise<CommandResult> => {
    const m = model(id);
    const was = pinPolicy.isPinned(m);
    pinPolicy.overrideDefault(m.id, pinned);
    await parts.pins.setPinned(m.id, pinned);
    parts.controller.trigger();
    if (was === pinned) return { ok: true, message: `${m.id} was already ${pinned ? 'pinned' : 'unpinned'}` };
    const defaultNote = !pinned && m.pinnedByDefault ? ' (pinned again at the next start by the config file; set pinned: false there to keep it off)' : '';
    return { ok: true, message: pinned ? `${m.id} pinned: it loads now and stays resident` : `${m.id} unpinned: it may be evicted when idle${defaultNote}` };
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
      return { ok: true, message: `${m.id} requested: it loads now and stays for its idle time (${Math.round(m.idleTtlMs / 1000)} s)` };
    },
    async unload(id) {
      const m = model(id);
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
      const busy = parts.inFlight(m.id);
      const when = busy > 0 ? `after its ${busy} request(s) in flight finish` : 'now';
      return { ok: true, message: `${m.id} unloads ${when}${unpinned}` };
    },
    async retry(id) {
      const m = model(id);
      const known = parts.controller.retry(m.id);
      if (!known) parts.controller.trigger();
      return { ok: true, message: `${m.id}: recovery starts over; it loads when next wanted` };
    },
  };
}
