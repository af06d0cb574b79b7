// Turns what a pass observed into the policy's inputs. Pure: the pass calls it once, and the
// tests can read the mapping rules here rather than infer them from behaviour.
//
// The rules:
// - a model is desired when it is wanted or pinned, unless its ladder says quarantine;
// - a model in fallback hands its want (pinned, priority, lastUsed) to the model that serves
//   for it, so a pinned model that falls back keeps its fallback hot in its place;
// - a desired model is priced at the level it runs at if resident, else at the level its
//   recovery state asks for, draft included (one footprintAt for plan and launch);
// - a resident model costs what the server reports, and is active while it decodes or while
//   the controller's own launch of it is in flight: a load is finished before it is judged,
//   never evicted halfway (that would waste the load and race the supervisor).
import { footprintAt, type LaunchLevel } from '../policy/levels.js';
import { launchLevelAfter } from '../policy/recover.js';
import type { Desired, Draft, Resident } from '../policy/schedule.js';
import type { ModelDemand, ResidentServer } from './effects.js';
import { NO_FAILURE, servingModelOf, verdictOf, type Demands, type Records } from './model-record.js';

/** A desired model's device cost at a level, split into its own bytes and its draft's, as `schedule` wants it. */
export function costAt(level: LaunchLevel, demand: ModelDemand): { footprint: number; draft?: Draft } {
  const { draft, ...primary } = demand.estimate;
  const total = footprintAt(level, demand.estimate).deviceBytes;
  if (draft === undefined) return { footprint: total };
  const own = footprintAt(level, primary).deviceBytes;
  return { footprint: own, draft: { modelId: demand.draftId ?? `${demand.modelId}'s draft`, footprint: total - own } };
}

interface Want {
  priority: number;
  pinned: boolean;
  lastUsed?: number;
}

function merge(into: Want | undefined, demand: ModelDemand): Want {
  if (into === undefined) return { priority: demand.priority, pinned: demand.pinned, lastUsed: demand.lastUsed };
  const lastUsed = [into.lastUsed, demand.lastUsed].filter((t): t is number => t !== undefined);
  return {
    priority: Math.max(into.priority, demand.priority),
    pinned: into.pinned || demand.pinned,
    lastUsed: lastUsed.length === 0 ? undefined : Math.max(...lastUsed),
  };
}

export interface PolicyInputs {
  desired: Desired[];
  resident: Resident[];
}

export function policyInputs(observed: {
  demands: Demands;
  records: Records;
  running: readonly ResidentServer[];
  /** The controller's launches in flight when the pass read the world, with their level. */
  loading: ReadonlyMap<string, LaunchLevel>;
}): PolicyInputs {
  const { demands, records, running, loading } = observed;
  const wants = new Map<string, Want>();
  for (const demand of demands.values()) {
    if (!demand.wanted && !demand.pinned) continue;
    const target = servingModelOf(demand.modelId, records, demands);
    const record = records.get(target);
    const verdict = record === undefined ? null : verdictOf(record, demands);
    // 'fallback' here means a cycle of fallbacks: nothing in it can be launched.
    if (verdict === 'quarantine' || verdict === 'fallback' || !demands.has(target)) continue;
    wants.set(target, merge(wants.get(target), demand));
  }

  const runningById = new Map(running.map((r) => [r.modelId, r]));
  const desired: Desired[] = [];
  for (const [modelId, want] of wants) {
    const demand = demands.get(modelId);
    if (demand === undefined) continue;
    const record = records.get(modelId);
    const level = runningById.get(modelId)?.level ?? loading.get(modelId) ?? launchLevelAfter(record?.recovery ?? NO_FAILURE);
    desired.push({ modelId, priority: want.priority, pinned: want.pinned, lastUsed: want.lastUsed, ...costAt(level, demand) });
  }

  const resident: Resident[] = running.map((r) => residentEntry(r.modelId, r.deviceBytes, loading.has(r.modelId), wants, demands));
  for (const [modelId, level] of loading) {
    if (runningById.has(modelId)) continue;
    const demand = demands.get(modelId);
    const bytes = demand === undefined ? 0 : footprintAt(level, demand.estimate).deviceBytes;
    resident.push(residentEntry(modelId, bytes, true, wants, demands));
  }
  return { desired, resident };
}

function residentEntry(modelId: string, deviceBytes: number, loading: boolean, wants: Map<string, Want>, demands: Demands): Resident {
  const want = wants.get(modelId);
  const demand = demands.get(modelId);
  return {
    modelId,
    footprint: deviceBytes,
    pinned: want?.pinned ?? false,
    active: loading || (demand?.inFlight ?? 0) > 0,
    lastUsed: want?.lastUsed ?? demand?.lastUsed ?? 0,
  };
}
