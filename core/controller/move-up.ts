// Moving a model back up to a faster placement once what displaced it is idle or gone.
//
// Why: `place` puts a model partly (or wholly) on the CPU when the GPUs are full, and keeps a
// running model where it is as long as it fits there, which is what makes its plan a fixed
// point. But once the memory comes back (another model unloaded, another program closed), or
// the model that took the GPU while it was busy has gone idle, a model left on the CPU would
// stay several times slower for as long as it runs. So the controller asks, when the plan is at
// rest: would `place`, with this model not running, put it somewhere faster? Then it evicts it
// (and the models `place` would evict for it), and the next pass launches it there.
//
// Whom it may evict: only idle, unpinned models of strictly lower priority (a model of equal
// priority could take the GPU back the same way: the two would trade it for ever). Only idle,
// unpinned models move (a request is never cut for it), one per pass.
//
// Hysteresis, on the clock's elapsed():
// - settle: a model it evicts must have been idle for MOVE_UP_SETTLE_MS. A client that pauses
//   between the turns of a conversation is not "gone": without it every pause would cost that
//   model its GPU and its next request a relaunch on the CPU.
// - cool-down: a model a move-up moved (up, or out to make room) is not moved by another within
//   MOVE_UP_COOL_DOWN_MS, so a placement that does not stick (the budget dipped again, the
//   evicted model came back and another wants its room) cannot stop and relaunch it over and over.
// While a move-up waits for either, the model's status says for what (`note`).
import { place, type Device, type PlacePlan } from '../policy/place.js';
import type { PolicyInputs } from './policy-inputs.js';
import type { Placement } from '../contracts/plan.js';
import { seconds } from './derive-status.js';

/** How long a model must have been idle before a move-up evicts it, ms. */
export const MOVE_UP_SETTLE_MS = 10_000;
/** How long after a move-up the models it moved are not moved by another, ms. */
export const MOVE_UP_COOL_DOWN_MS = 60_000;

const SPEED: Readonly<Record<Placement['kind'], number>> = { cpu: 0, partial: 1, mixed: 2, split: 3, gpu: 4 };

/** What a pass decides: the model to move now (with the models to evict for it), and why each other one waits. */
export interface MoveUpDecision {
  move: { modelId: string; to: Placement; evict: readonly string[] } | null;
  /** Per model that would move up but waits: the sentence for its status. */
  waiting: ReadonlyMap<string, string>;
  /** The earliest elapsed() at which a waiting model may move with nothing else changing; null when none can by time alone. */
  wakeAt: number | null;
}

export interface MoveUpHistory {
  /** Per resident: since when (elapsed()) it has been idle; absent while it is in use. */
  idleSince: ReadonlyMap<string, number>;
  /** Per model: when (elapsed()) a move-up last moved it, up or out. */
  movedAt: ReadonlyMap<string, number>;
}

/** The move-up of this pass, if any, and the ones that wait. Pure; calls `place` once per candidate. */
export function moveUpOf(
  plan: PlacePlan,
  inputs: PolicyInputs,
  devices: readonly Device[],
  hostFreeBytes: number,
  history: MoveUpHistory,
  now: number,
  priorityOf: (modelId: string) => number,
): MoveUpDecision {
  const waiting = new Map<string, string>();
  let wakeAt: number | null = null;
  // Only at rest: while anything launches or stops, the room it would move into is not settled.
  if (plan.launch.length > 0 || plan.evict.length > 0) return { move: null, waiting, wakeAt };
  const desiredIds = new Set(inputs.desired.map((d) => d.modelId));
  // Busy models are counted idle here, so that a model waiting for one to idle can say so;
  // the settle time below keeps them, and models loading stay as they are.
  const relaxed = inputs.resident.map((r) => (r.inUse && !inputs.loadingIds.has(r.modelId) ? { ...r, inUse: false } : r));
  const inUseIds = new Set(inputs.resident.filter((r) => r.inUse).map((r) => r.modelId));
  for (const resident of inputs.resident) {
    const modelId = resident.modelId;
    const at = plan.placements[modelId];
    if (at === undefined || at.kind === 'gpu') continue;
    if (resident.inUse || resident.pinned || !desiredIds.has(modelId)) continue;
    // Its host share is freed only once it has stopped: not counted back, as `place` does.
    const without = place(inputs.desired, relaxed.filter((r) => r.modelId !== modelId), devices, hostFreeBytes);
    const to = without.placements[modelId];
    if (to === undefined || !without.launch.includes(modelId) || SPEED[to.kind] <= SPEED[at.kind]) continue;
    const evict = without.evict;
    // Anything else it would launch is one of the evicted, placed anew beside it.
    if (without.launch.some((id) => id !== modelId && !evict.includes(id))) continue;
    const priority = priorityOf(modelId);
    if (evict.some((id) => priorityOf(id) >= priority)) continue;
    const readyAt = Math.max(coolDownEnd([modelId, ...evict], history), ...evict.map((id) => settledAt(id, history, inUseIds)));
    if (readyAt <= now) return { move: { modelId, to, evict }, waiting, wakeAt };
    waiting.set(modelId, waitingNote(modelId, to, evict, history, inUseIds, now));
    if (Number.isFinite(readyAt)) wakeAt = wakeAt === null ? readyAt : Math.min(wakeAt, readyAt);
  }
  return { move: null, waiting, wakeAt };
}

/** When the last of these models' cool-downs ends (elapsed()); -Infinity when none is cooling down. */
function coolDownEnd(modelIds: readonly string[], history: MoveUpHistory): number {
  return Math.max(-Infinity, ...modelIds.map((id) => (history.movedAt.get(id) ?? -Infinity) + MOVE_UP_COOL_DOWN_MS));
}

/** When the model will have been idle for the settle time; Infinity while it is busy. */
function settledAt(modelId: string, history: MoveUpHistory, inUseIds: ReadonlySet<string>): number {
  const since = inUseIds.has(modelId) ? undefined : history.idleSince.get(modelId);
  return since === undefined ? Infinity : since + MOVE_UP_SETTLE_MS;
}

/** "moving up to GPU 0 when tiny has been idle 10 s": worded without a countdown, so it does not change every second. */
function waitingNote(modelId: string, to: Placement, evict: readonly string[], history: MoveUpHistory, inUseIds: ReadonlySet<string>, now: number): string {
  const where = `moving up to ${destination(to)}`;
  const cooling = [modelId, ...evict].filter((id) => (history.movedAt.get(id) ?? -Infinity) + MOVE_UP_COOL_DOWN_MS > now);
  if (cooling.length > 0) {
    const who = cooling.map((id) => (id === modelId ? 'its' : `${id}'s`));
    return `${where} when ${who.join(' and ')} last move is ${seconds(MOVE_UP_COOL_DOWN_MS)} old`;
  }
  const unsettled = evict.filter((id) => settledAt(id, history, inUseIds) > now);
  return `${where} when ${unsettled.join(' and ')} ${unsettled.length === 1 ? 'has' : 'have'} been idle ${seconds(MOVE_UP_SETTLE_MS)}`;
}

/** "GPU 0", "GPUs 0 and 1", "5 layers on GPU 0". */
function destination(to: Placement): string {
  const ids = to.devices.map((d) => d.index);
  switch (to.kind) {
    case 'gpu':
      return `GPU ${ids[0] ?? 0}`;
    case 'split':
    case 'mixed':
      return `GPUs ${ids.join(' and ')}`;
    case 'partial':
      return `${to.devices[0]?.layers ?? 0} layers on GPU ${ids[0] ?? 0}`;
    case 'cpu':
      return 'the CPU';
  }
}
