// Turns what a pass observed into the policy's inputs. Pure: the pass calls it once, and the
// tests can read the mapping rules here rather than infer them from behaviour.
//
// The rules:
// - a model is desired when it is wanted or pinned, unless its ladder says quarantine;
// - a model in fallback hands its want (pinned, priority, lastUsed) to the model that serves
//   for it, so a pinned model that falls back keeps its fallback hot in its place;
// - a desired model is priced at the level it runs at if resident, else at the level its
//   recovery state asks for, draft included (one footprintAt for plan and launch); at full
//   and smaller-context with its cost per layer too, so `place` may split it or keep part on the CPU;
// - a model whose engine cannot be told a split's shares (`oneGpu`: the embedded engine) is
//   never priced as a split, so that what runs is what was priced;
// - a resident model costs what the server reports, and is in use (`inUse`) while it decodes or while
//   it loads (the controller's launch in flight, or a spawned server not ready yet): a load is
//   finished before it is judged, never evicted halfway (that would waste the load and race
//   the supervisor); and while its turn holds it idle for its client's next request
//   (`heldForTurn`, core/demand/turns.ts), so a waiting model does not evict it in that moment;
// - a model that failed since its last success is `retrying`: admitted last and not forced by
//   its pin, so its retries never push out a model that is wanted. One exception: a model whose
//   server died after it had been ready (killed, crashed or hung while serving) while requests
//   are waiting for it now. It loaded and served with this definition, and someone is asking for
//   it: kept to unwanted memory it would never come back while another model is in use, those
//   requests refused for as long as that lasts and its ladder never climbing (the soak found
//   this: one SIGKILL, then every request for it a 503 for minutes). It competes as any waited-for
//   model does, and the ladder still counts each death and quarantines a model that keeps dying.
//   With nobody waiting it is `retrying` like any failed model, its pin included;
// - the arrival of a model's oldest waiting request is its `waitingSince`, so waiting requests
//   are served a model at a time in the order they came.
import { footprintAt, layerCostAt, type FootprintEstimate } from '../policy/levels.js';
import { launchLevelAfter } from '../policy/recover.js';
import type { PlacedDesired, PlacedResident } from '../policy/place.js';
import type { Draft } from '../policy/plan-types.js';
import type { ModelDemand, ResidentServer } from './effects.js';
import { NO_FAILURE, servingModelOf, verdictOf, type Demands, type Records } from './model-record.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { Placement } from '../contracts/plan.js';

/** A desired model's device cost at a level, split into its own bytes and its draft's, as `schedule` wants it. */
export function costAt(level: LaunchLevel, demand: ModelDemand): { footprint: number; draft?: Draft } {
  const { draft, ...primary } = demand.estimate;
  const total = footprintAt(level, demand.estimate).deviceBytes;
  if (draft === undefined) return { footprint: total };
  const own = footprintAt(level, primary).deviceBytes;
  return { footprint: own, draft: { modelId: demand.draftId ?? `${demand.modelId}'s draft`, footprint: total - own } };
}

function withoutDraft(estimate: FootprintEstimate): FootprintEstimate {
  const { draft: _draft, ...primary } = estimate;
  return primary;
}

interface Want {
  priority: number;
  pinned: boolean;
  lastUsed?: number;
  waitingSince?: number;
}

function merge(into: Want | undefined, demand: ModelDemand): Want {
  if (into === undefined) return { priority: demand.priority, pinned: demand.pinned, lastUsed: demand.lastUsed, waitingSince: demand.waitingSince };
  return {
    priority: Math.max(into.priority, demand.priority),
    pinned: into.pinned || demand.pinned,
    lastUsed: pick(Math.max, into.lastUsed, demand.lastUsed),
    waitingSince: pick(Math.min, into.waitingSince, demand.waitingSince),
  };
}

function pick(choose: (a: number, b: number) => number, a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined ? b : b === undefined ? a : choose(a, b);
}

export interface PolicyInputs {
  desired: PlacedDesired[];
  resident: PlacedResident[];
  /** The residents that are in use because they are loading (not because they decode). */
  loadingIds: ReadonlySet<string>;
}

export function policyInputs(observed: {
  demands: Demands;
  records: Records;
  running: readonly ResidentServer[];
  /** Models loading (the controller's launch in flight, or a server spawned and not ready), with their level and placement. */
  loading: ReadonlyMap<string, Loading>;
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
  const desired: PlacedDesired[] = [];
  for (const [modelId, want] of wants) {
    const demand = demands.get(modelId);
    if (demand === undefined) continue;
    const record = records.get(modelId);
    const recovery = record?.recovery ?? NO_FAILURE;
    const level = runningById.get(modelId)?.level ?? loading.get(modelId)?.level ?? launchLevelAfter(recovery);
    const entry: PlacedDesired = { modelId, priority: want.priority, pinned: want.pinned, lastUsed: want.lastUsed, ...costAt(level, demand) };
    // At full or smaller-context `place` chooses where its layers go; at partial or minimal the
    // recovery ladder already did (fewer layers, or none, after an out-of-memory), and the
    // model is the one piece its level costs.
    const layerCost = level === 'full' || level === 'smaller-context' ? layerCostAt(level, withoutDraft(demand.estimate)) : undefined;
    if (layerCost !== undefined) entry.layerCost = layerCost;
    if (demand.mixedSplit === true) entry.mixedSplit = true;
    if (demand.oneGpu === true) entry.oneGpu = true;
    if (want.waitingSince !== undefined) entry.waitingSince = want.waitingSince;
    // A failing model whose relaunched server is up, on trial, holds its place as any resident.
    if (recovery.attempts > 0 && record?.server?.phase !== 'ready' && !(record?.diedWhileServing === true && want.waitingSince !== undefined)) entry.retrying = true;
    desired.push(entry);
  }

  const resident: PlacedResident[] = running.map((r) =>
    residentEntry(r.modelId, r.deviceBytes, r.placement ?? loading.get(r.modelId)?.placement, loading.has(r.modelId), wants, demands),
  );
  for (const [modelId, { level, placement }] of loading) {
    if (runningById.has(modelId)) continue;
    const demand = demands.get(modelId);
    const bytes = demand === undefined ? 0 : footprintAt(level, demand.estimate).deviceBytes;
    resident.push(residentEntry(modelId, bytes, placement, true, wants, demands));
  }
  return { desired, resident, loadingIds: new Set(loading.keys()) };
}

/** A model loading: the level it launches at and where it was placed (absent: all on the first device). */
export interface Loading {
  level: LaunchLevel;
  placement?: Placement;
}

function residentEntry(
  modelId: string,
  deviceBytes: number,
  placement: Placement | undefined,
  loading: boolean,
  wants: Map<string, Want>,
  demands: Demands,
): PlacedResident {
  const want = wants.get(modelId);
  const demand = demands.get(modelId);
  const entry: PlacedResident = {
    modelId,
    footprint: deviceBytes,
    pinned: want?.pinned ?? false,
    inUse: loading || (demand?.inFlight ?? 0) > 0 || demand?.heldForTurn === true,
    lastUsed: want?.lastUsed ?? demand?.lastUsed ?? 0,
  };
  if (placement !== undefined) entry.placement = placedAt(placement, deviceBytes);
  return entry;
}

/** Where a resident holding `deviceBytes` is: on one device its figure is the truth; a split keeps its per-device estimate. */
export function placedAt(placement: Placement, deviceBytes: number): Placement {
  const onOneDevice = placement.kind === 'gpu' && placement.devices.length === 1;
  return onOneDevice ? { ...placement, devices: [{ ...(placement.devices[0] as Placement['devices'][number]), bytes: deviceBytes }] } : placement;
}
