// Which models stay resident, and where: `schedule` generalised to the workstation's GPUs, each
// its own budget. Pure, like `schedule`, and called on every pass.
//
// Why per GPU: a model "fits" in 24 + 12 GiB only if one card, or a split across cards, can
// really hold it; the sum says nothing (seeds/003: filter on what each node can hold and name
// what was short there). llama.cpp's `--fit` sizes one process against the free memory at load
// time, Ollama spreads one model's layers; neither plans the whole set of models against each
// card, which is where their users' OOMs and wrong estimates come from.
//
// How: the same candidates in the same admission order as `schedule` (candidates.ts). Forced
// models are held first where they are (nothing pinned or busy is moved). Then each other model,
// in order, gets the fastest placement that fits — one GPU; a layer split over GPUs of one class,
// shares in proportion to their room; over mixed classes where its config allows; `partial`
// (as many layers as fit on one GPU, the rest in host RAM; a mixture of experts first leaves its
// expert tensors on the CPU, --n-cpu-moe, which keeps attention on the GPU); CPU only. Each
// placement is tried first in the room nobody holds, then in the room it would have after
// evicting the models that rank below it, before a slower placement is tried: an idle,
// lower-ranked model is evicted before a requested model is slowed, and only on the GPU that
// needs the room. A running model that fits where it is stays there (moving an idle one up to a
// faster placement once room comes back is the controller's call: core/controller/move-up.ts). A model
// without a layer cost is one indivisible footprint on one GPU, exactly
// as `schedule` treats it; with one device and no host RAM to spare, `place` gives `schedule`'s
// very plan (property-tested against it).
import { candidatesOf, compareIds, leastRecentlyUsedFirst, needOf, type Candidate } from './candidates.js';
import { nonNegative } from './non-negative.js';
import { needs, reasonWriter, withHolder, type Holder, type HoldReason, type ReasonWriter, type Room } from './reasons.js';
import type { Desired, Plan, Resident } from './schedule.js';
import { formatBytes } from '../contracts/format-bytes.js';
import type { LeftOut, Placement } from '../contracts/plan.js';

/** One GPU as a budget. */
export interface Device {
  /** The engine's device index (what `-dev`, `--main-gpu` and `--tensor-split` positions name). */
  index: number;
  /** For reasons: "RTX 4090". */
  name: string;
  /** Devices of one class (same make and model) may share a layer split; others only where a model allows mixed splits. */
  deviceClass: string;
  /** What our models may hold on it: its total less what other programs use and the reserve, bytes. */
  budgetBytes: number;
}

/** How a model's footprint divides into layers, so that any split and any `-ngl N` can be costed. */
export interface LayerCost {
  /** Repeating blocks that may sit on a device (llama.cpp's block count). */
  layers: number;
  /** One block: its weights and its KV cache at the launch context, bytes. */
  perLayerBytes: number;
  /** Of perLayerBytes, the expert tensors a mixture of experts may leave on the CPU (0 for a dense model). */
  expertBytesPerLayer: number;
  /** What goes on the main device whatever the split: the output and embedding tensors, a projector, bytes. */
  mainBytes: number;
  /** The compute buffer each device that holds layers reserves, and the engine's runtime there, bytes. */
  computeBytesPerDevice: number;
  /**
   * What each device of a split reserves on top, bytes: llama.cpp runs a layer split over
   * several devices as a pipeline (pipeline parallelism), which keeps a compute buffer per stage
   * in flight; measured 1.8–1.9× one device's compute buffer per device (BENCHMARKS §6), so a
   * split pays it once more. Absent: 0.
   */
  pipelineComputeBytes?: number;
}

/** A desired model as `place` sees it: `schedule`'s, with what it takes to split it. */
export interface PlacedDesired extends Desired {
  /** Absent: one indivisible footprint (plus draft) that goes on one device whole. */
  layerCost?: LayerCost;
  /** Its config allows a layer split across GPUs of different classes (slower, and not every build handles it well). */
  mixedSplit?: boolean;
  /** Its engine cannot be told a split's shares (node-llama-cpp has no tensorSplit): one GPU, part on the CPU, or the CPU, never a split. */
  oneGpu?: boolean;
}

/** A running model server and where it is. */
export interface PlacedResident extends Resident {
  /** Absent: all of it on the first device (the one-device case). */
  placement?: Placement;
}

export interface PlacePlan extends Plan {
  /** Where every model kept or launched is (or will be): the argv of each launch comes from here. */
  placements: Record<string, Placement>;
}

type Tier = Placement['kind'];
const TIERS: readonly Tier[] = ['gpu', 'split', 'mixed', 'partial', 'cpu'];

/** Per device: what is held, and by whom, as the reasons will tell it. */
interface DeviceRoom {
  device: Device;
  budget: number;
  held: number;
  named: readonly Holder[];
  holderCount: number;
  pinnedHeld: number;
  pinnedNamed: readonly Holder[];
  pinnedCount: number;
  /** Held by residents not decided yet (evictable by a model that ranks above them). */
  undecided: number;
  /**
   * Those residents in admission order (a larger rank is less important), with their bytes
   * here. Models are decided in that same order, so the decided ones are always a prefix:
   * `firstUndecided` skips it, and the least important are read from the end, no sort needed.
   */
  undecidedBy: { rank: number; bytes: number }[];
  firstUndecided: number;
  /**
   * bytesFrom[i]: the bytes of undecidedBy[i] and every entry after it, filled once all are
   * in (sealUndecided), so that mostImportantToGo can binary-search instead of summing from
   * the end on every call (that scan made a crowded pass quadratic). exactSums: every entry is a
   * whole number and their total a safe integer, so any order of adding them gives the same
   * number (see mostImportantToGo).
   */
  bytesFrom: number[];
  exactSums: boolean;
  /** This device's sentences; its Room snapshots below are worded once each (see reasonWriter). */
  writer: ReasonWriter;
  /** What held it when a model was last turned away, until the next hold: shared by every model turned away meanwhile. */
  heldRoom: Room | null;
  pinnedRoom: Room | null;
}

/** The devices as one pass sees them: fixed for the pass, their rooms filled as models are held. */
interface Layout {
  rooms: Map<number, DeviceRoom>;
  /** In index order. */
  devices: readonly Device[];
  /** The groups a same-class split may use, computed once per pass. */
  classGroups: readonly (readonly Device[])[];
  /** The one group a mixed split may use: every device. */
  mixedGroups: readonly (readonly Device[])[];
  /**
   * A device's room of each kind (see available). Made once per pass rather than per
   * placement tried: a closure per try was a third of what a crowded pass allocated.
   */
  free: Readonly<Record<RoomKind, (device: Device) => number>>;
  /**
   * "GPU 0 RTX 4090: 24 GiB budget, … free; GPU 1 …": every GPU's room as it stands, or with
   * only the pinned models in it (strict). Worded once between two holds, however many models
   * are turned away meanwhile.
   */
  roomsWords(strict: boolean): string;
  /** formatBytes of the host RAM free, worded once for each amount (it changes only when a launch takes some). */
  hostWords(hostFree: number): string;
}

/**
 * The launches, evictions and placements that bring `resident` to the chosen set within each
 * device's budget and `hostFreeBytes` of host RAM. See the header for the rules; `schedule`'s
 * invariants hold per device. Deterministic and independent of input order; a fixed point.
 * Throws only on a caller bug (an id twice, or no device).
 */
export function place(desired: readonly PlacedDesired[], resident: readonly PlacedResident[], devices: readonly Device[], hostFreeBytes = 0): PlacePlan {
  if (devices.length === 0) throw new Error('place: there must be at least one device (the CPU pool counts as one)');
  const sortedDevices = [...devices].sort((a, b) => a.index - b.index);
  const rooms = new Map<number, DeviceRoom>(
    sortedDevices.map((device) => [
      device.index,
      { device, budget: nonNegative(device.budgetBytes), held: 0, named: [], holderCount: 0, pinnedHeld: 0, pinnedNamed: [], pinnedCount: 0, undecided: 0, undecidedBy: [], firstUndecided: 0, bytesFrom: [], exactSums: false, writer: reasonWriter(nonNegative(device.budgetBytes)), heldRoom: null, pinnedRoom: null },
    ]),
  );
  const { candidates, undesired } = candidatesOf('place', desired, resident);
  const wordsCache: { held: string | null; pinned: string | null } = { held: null, pinned: null };
  const hostWordsCache = { bytes: Number.NaN, words: '' };
  const layout: Layout = {
    rooms,
    devices: sortedDevices,
    classGroups: classGroups(sortedDevices),
    mixedGroups: [sortedDevices],
    free: {
      free: (device) => available(rooms.get(device.index) as DeviceRoom, 'free'),
      room: (device) => available(rooms.get(device.index) as DeviceRoom, 'room'),
      pinned: (device) => available(rooms.get(device.index) as DeviceRoom, 'pinned'),
    },
    roomsWords(strict) {
      const cached = strict ? wordsCache.pinned : wordsCache.held;
      if (cached !== null) return cached;
      const words = sortedDevices
        .map((device) => {
          const room = rooms.get(device.index) as DeviceRoom;
          return `GPU ${device.index} ${device.name}: ${room.writer.roomWords(strict ? pinnedRoomOf(room) : heldRoomOf(room))}`;
        })
        .join('; ');
      if (strict) wordsCache.pinned = words;
      else wordsCache.held = words;
      return words;
    },
    hostWords(hostFree) {
      if (hostWordsCache.bytes !== hostFree) hostWordsCache.words = formatBytes(Math.max(0, hostFree));
      hostWordsCache.bytes = hostFree;
      return hostWordsCache.words;
    },
  };
  const first = sortedDevices[0] as Device;
  const placementOf = (r: PlacedResident): Placement =>
    r.placement ?? { kind: 'gpu', devices: [{ index: first.index, layers: 0, bytes: nonNegative(r.footprint) }], cpuMoeLayers: 0, hostBytes: 0 };
  let hostFree = nonNegative(hostFreeBytes);

  // `hostFreeBytes` is what is free now: a running server's host share is already outside it,
  // so only a new placement's host share is taken from it.
  const hold = (modelId: string, at: Placement, why: HoldReason, priority: number, running: boolean): void => {
    if (!running) hostFree -= at.hostBytes;
    for (const part of at.devices) {
      const room = rooms.get(part.index);
      if (room === undefined || part.bytes <= 0) continue;
      room.held += part.bytes;
      room.holderCount++;
      room.named = withHolder(room.named, { modelId, bytes: part.bytes, why, priority });
      room.heldRoom = null;
      wordsCache.held = null;
      if (why === 'pinned') {
        room.pinnedRoom = null;
        wordsCache.pinned = null;
        room.pinnedHeld += part.bytes;
        room.pinnedCount++;
        room.pinnedNamed = withHolder(room.pinnedNamed, { modelId, bytes: part.bytes, why, priority });
      }
    }
  };
  const setUndecided = (at: Placement, rank: number, sign: 1 | -1): void => {
    for (const part of at.devices) {
      const room = rooms.get(part.index);
      if (room === undefined) continue;
      room.undecided += sign * nonNegative(part.bytes);
      if (sign > 0) room.undecidedBy.push({ rank, bytes: nonNegative(part.bytes) });
      else while (room.firstUndecided < room.undecidedBy.length && (room.undecidedBy[room.firstUndecided] as { rank: number }).rank <= rank) room.firstUndecided++;
    }
  };

  // Forced residents first, desired or not, where they are: nothing pinned or busy is moved.
  const { forced: forcedUndesired, toEvict } = undesired;
  for (const r of forcedUndesired) hold(r.modelId, placementOf(r), r.pinned ? 'pinned' : 'active', 0, true);

  const placements: Record<string, Placement> = {};
  // Every candidate's desired entry is a copy of the caller's PlacedDesired, layerCost and all (see candidatesOf).
  const placedOf = (c: Candidate): PlacedDesired => c.desired as PlacedDesired;

  // Forced desired models: running ones stay where they are (re-priced at what they cost now);
  // pinned ones to launch take the fastest placement that fits, else the roomiest GPU, over budget.
  for (const c of candidates) {
    if (c.forcedBy === null) continue;
    const at = c.running !== undefined ? repriced(placementOf(c.running), c.cost) : placeOne(c, placedOf(c).layerCost, placedOf(c), layout, hostFree, ROOM_ONLY) ?? overBudget(c, layout);
    placements[c.modelId] = at;
    hold(c.modelId, at, c.forcedBy, c.priority, c.running !== undefined);
  }

  // The other residents hold their room until their turn comes: a model ranked above them may
  // take it only when it cannot fit in the room nobody holds.
  const runningAt: (Placement | undefined)[] = candidates.map((c, rank) => {
    if (c.forcedBy !== null || c.running === undefined) return undefined;
    const where = repriced(placementOf(c.running), c.cost);
    setUndecided(where, rank, 1);
    return where;
  });
  for (const room of rooms.values()) sealUndecided(room);

  const launch: string[] = [];
  const evictMoved: PlacedResident[] = [];
  const unschedulable: LeftOut[] = [];
  for (let rank = 0; rank < candidates.length; rank++) {
    const c = candidates[rank] as Candidate;
    if (c.forcedBy !== null) {
      if (c.running === undefined) launch.push(c.modelId);
      continue;
    }
    const d = placedOf(c);
    const cost = d.layerCost;
    const where = runningAt[rank];
    if (where !== undefined) {
      setUndecided(where, rank, -1);
      if (fitsWhereItIs(where, rooms, hostFree + where.hostBytes)) {
        placements[c.modelId] = where;
        hold(c.modelId, where, 'admitted', c.priority, true);
        continue;
      }
    }
    const at = placeOne(c, cost, d, layout, hostFree, FREE_THEN_ROOM);
    if (at === null) {
      unschedulable.push(leftOutReason(c, cost, d, layout, hostFree));
      if (c.running !== undefined) toEvict.push(c.running);
      continue;
    }
    placements[c.modelId] = at;
    hold(c.modelId, at, 'admitted', c.priority, false);
    // A resident that could not stay where it was moves: stopped there, started here.
    if (c.running !== undefined) evictMoved.push(c.running);
    launch.push(c.modelId);
  }

  toEvict.push(...evictMoved);
  return {
    launch,
    evict: leastRecentlyUsedFirst(toEvict),
    unschedulable,
    placements,
  };
}

/**
 * A running model's placement, priced for this pass. On one device it costs what the model
 * costs now (its desired footprint and draft), as `schedule` prices a running desired model; a
 * split or a partial placement keeps its own per-device bytes, which are what its launch holds
 * (a split pays a compute buffer on every device, so it is not the one-device cost spread out).
 */
function repriced(at: Placement, cost: number): Placement {
  if (at.kind !== 'gpu' || at.devices.length !== 1 || (at.devices[0] as Placement['devices'][number]).bytes === cost) return at;
  return { ...at, devices: [{ ...(at.devices[0] as Placement['devices'][number]), bytes: cost }] };
}

function fitsWhereItIs(at: Placement, rooms: Map<number, DeviceRoom>, hostFree: number): boolean {
  if (at.hostBytes > hostFree) return false;
  return at.devices.every((part) => {
    const room = rooms.get(part.index);
    return room !== undefined && part.bytes <= room.budget - room.held;
  });
}

/**
 * How much a device can give a new placement: 'free' is what nobody holds (the undecided
 * residents keep theirs); 'room' is what it has once every model ranked below is evicted;
 * 'pinned' is what it would have with every evictable model gone (for `strict`).
 */
type RoomKind = 'free' | 'room' | 'pinned';
/** The rooms placeOne tries, narrow to wide: for a model that earns its place, a pinned one to launch, and `strict`. */
const FREE_THEN_ROOM: readonly RoomKind[] = ['free', 'room'];
const ROOM_ONLY: readonly RoomKind[] = ['room'];
const PINNED_ONLY: readonly RoomKind[] = ['pinned'];

function available(room: DeviceRoom, kind: RoomKind): number {
  if (kind === 'pinned') return room.budget - room.pinnedHeld;
  return room.budget - room.held - (kind === 'free' ? room.undecided : 0);
}

/** Sums `undecidedBy` from each entry to the end, once every running candidate is in it. */
function sealUndecided(room: DeviceRoom): void {
  const { undecidedBy } = room;
  const bytesFrom = new Array<number>(undecidedBy.length);
  let sum = 0;
  let whole = true;
  for (let i = undecidedBy.length - 1; i >= 0; i--) {
    const { bytes } = undecidedBy[i] as { bytes: number };
    sum += bytes;
    whole &&= Number.isInteger(bytes);
    bytesFrom[i] = sum;
  }
  room.bytesFrom = bytesFrom;
  room.exactSums = whole && sum <= Number.MAX_SAFE_INTEGER;
}

/**
 * The rank of the most important resident that must go from `room` for `need` bytes, evicting
 * the least important first; Infinity when none must go.
 *
 * Evicting from the end, the room grows by bytesFrom[i] once entry i and all after it are gone,
 * and that only grows as i falls: the answer is the last i at which `need` fits, found by a
 * binary search. Why the scan stays as the fallback: it adds the bytes one at a time from the
 * end, and with fractional bytes floating point may round that sum differently from bytesFrom;
 * with whole numbers below 2^53 every partial sum is exact, so both give the same answer and
 * the plan does not depend on which ran.
 */
function mostImportantToGo(room: DeviceRoom, need: number): number {
  let free = room.budget - room.held - room.undecided;
  if (need <= free) return Infinity;
  const { undecidedBy, bytesFrom, firstUndecided } = room;
  if (room.exactSums && Number.isInteger(free) && Math.abs(free) + (bytesFrom[firstUndecided] ?? 0) <= Number.MAX_SAFE_INTEGER) {
    if (firstUndecided >= undecidedBy.length || need > free + (bytesFrom[firstUndecided] as number)) return -1;
    // Invariant: need fits at `lo`, and does not at `hi` (or hi is past the end).
    let lo = firstUndecided;
    let hi = undecidedBy.length;
    while (hi - lo > 1) {
      const mid = (lo + hi) >>> 1;
      if (need <= free + (bytesFrom[mid] as number)) lo = mid;
      else hi = mid;
    }
    return (undecidedBy[lo] as { rank: number }).rank;
  }
  for (let i = undecidedBy.length - 1; i >= firstUndecided; i--) {
    const { rank, bytes } = undecidedBy[i] as { rank: number; bytes: number };
    free += bytes;
    if (need <= free) return rank;
  }
  return -1;
}

/**
 * The fastest placement that fits, or null. Each tier is tried in every kind of room, in the
 * order given, before the next (slower) tier: a placement is made slower only when the faster
 * one does not fit even with the models ranked below evicted.
 */
function placeOne(
  c: Candidate,
  cost: LayerCost | undefined,
  d: PlacedDesired | undefined,
  layout: Layout,
  hostFree: number,
  kinds: readonly RoomKind[],
): Placement | null {
  if (cannotFitAnywhere(c, cost, layout, hostFree, kinds[kinds.length - 1] as RoomKind)) return null;
  for (const tier of TIERS) {
    for (const kind of kinds) {
      const at = tryTier(tier, c, cost, d, layout, hostFree, kind);
      if (at !== null) return at;
    }
  }
  return null;
}

/**
 * True when no tier can hold it even in the widest room (the kinds are ordered narrow to wide):
 * most of the models left out on a crowded workstation, answered without trying every tier. An
 * indivisible model needs one device with room for it all; a layered one at least its smallest
 * form (all on the CPU) across every device's room and the host RAM together.
 */
function cannotFitAnywhere(c: Candidate, cost: LayerCost | undefined, layout: Layout, hostFree: number, widest: RoomKind): boolean {
  let largest = 0;
  let total = 0;
  for (const device of layout.devices) {
    const room = Math.max(0, available(layout.rooms.get(device.index) as DeviceRoom, widest));
    if (room > largest) largest = room;
    total += room;
  }
  if (cost === undefined || !(cost.layers >= 1)) return c.cost > largest;
  const smallest = Math.min(c.cost, layeredTotal(cost, c.draftBytes, cost.layers) - nonNegative(cost.computeBytesPerDevice));
  return smallest > total + Math.max(0, hostFree);
}

function tryTier(
  tier: Tier,
  c: Candidate,
  cost: LayerCost | undefined,
  d: PlacedDesired | undefined,
  layout: Layout,
  hostFree: number,
  kind: RoomKind,
): Placement | null {
  const { rooms, devices } = layout;
  if (tier === 'gpu') {
    // Where models must make way, the device whose most important one to go is least
    // important (the least recently used go first, as on one device); then best fit: the
    // device with the least room that still holds it, so the roomy ones stay for big models.
    let best: Device | null = null;
    let bestRoom = 0;
    let bestVictim = 0;
    for (const device of devices) {
      const deviceRoom = rooms.get(device.index) as DeviceRoom;
      const room = available(deviceRoom, kind);
      if (c.cost > room) continue;
      const victim = kind === 'room' ? mostImportantToGo(deviceRoom, c.cost) : Infinity;
      if (best === null || victim > bestVictim || (victim === bestVictim && room < bestRoom)) {
        best = device;
        bestRoom = room;
        bestVictim = victim;
      }
    }
    return best === null ? null : { kind: 'gpu', devices: [{ index: best.index, layers: cost?.layers ?? 0, bytes: c.cost }], cpuMoeLayers: 0, hostBytes: 0 };
  }
  if (cost === undefined || !(cost.layers >= 1)) return null;
  const free = layout.free[kind];
  if (tier === 'split' || tier === 'mixed') {
    if (d?.oneGpu === true || (tier === 'mixed' && d?.mixedSplit !== true)) return null;
    const groups = tier === 'split' ? layout.classGroups : layout.mixedGroups;
    let best: Placement | null = null;
    for (const group of groups) {
      if (group.length < 2) continue;
      const at = split(tier, group, free, cost, c.draftBytes);
      if (at !== null && (best === null || at.devices.length < best.devices.length)) best = at;
    }
    return best;
  }
  if (tier === 'partial') return partial(devices, free, cost, c.draftBytes, hostFree);
  // With no host RAM to spare (hostFree 0) there is no CPU placement at all, as for `schedule`.
  const all = layeredTotal(cost, c.draftBytes, cost.layers) - nonNegative(cost.computeBytesPerDevice);
  return hostFree > 0 && all <= hostFree ? { kind: 'cpu', devices: [], cpuMoeLayers: 0, hostBytes: all } : null;
}

/** Devices grouped by class, each group in device order; groups in class order. */
function classGroups(devices: readonly Device[]): Device[][] {
  const byClass = new Map<string, Device[]>();
  for (const device of devices) {
    const group = byClass.get(device.deviceClass);
    if (group === undefined) byClass.set(device.deviceClass, [device]);
    else group.push(device);
  }
  return [...byClass.entries()].sort(([a], [b]) => compareIds(a, b)).map(([, group]) => group);
}

/** A whole model on one device with `layers` of its blocks there: main + draft + compute + blocks. */
function layeredTotal(cost: LayerCost, draftBytes: number, layers: number): number {
  return nonNegative(cost.mainBytes) + draftBytes + nonNegative(cost.computeBytesPerDevice) + layers * nonNegative(cost.perLayerBytes);
}

/**
 * A layer split over the fewest of `group`'s devices that holds the model, shares in proportion
 * to their room; the last of them in device order holds the output and the draft (the main
 * device). Among the splits over that many devices, the roomiest. Null when none can.
 *
 * Why every device is tried as the main one, not only the last of the k roomiest: the main
 * device needs room for the output and the draft too, and a nearly full device of high index
 * among the roomiest made the split fail where another set of devices held it. Worse, that was
 * not monotonic: once another model filled that device, the next pass found the split, so the
 * plan was not a fixed point (the property test found it). For a given main device and number
 * of devices, the roomiest devices before it are the best company; with room only growing the
 * answer, a split that fits in less room always fits in more.
 */
function split(tier: 'split' | 'mixed', group: readonly Device[], free: (d: Device) => number, cost: LayerCost, draftBytes: number): Placement | null {
  const perLayer = nonNegative(cost.perLayerBytes);
  const compute = nonNegative(cost.computeBytesPerDevice) + nonNegative(cost.pipelineComputeBytes ?? 0);
  const main = nonNegative(cost.mainBytes) + draftBytes;
  // Even every device of the group together is short: the common case on a full workstation,
  // answered before anything is sorted or allocated.
  let together = -main;
  for (const device of group) together += Math.max(0, free(device) - compute);
  if (together < cost.layers * perLayer) return null;
  // A room below 0 is a device that cannot even take the compute buffer (or the output): no layer.
  const layersIn = (room: number): number => (room < 0 ? 0 : perLayer > 0 ? Math.floor(room / perLayer) : cost.layers);
  // group is in device order: position i is the i-th lowest index. The positions that can hold
  // a layer as a plain member of a split, roomiest first (ties to the lower index): the
  // roomiest before a given main device are the first of these with a lower position.
  const members: number[] = [];
  for (let i = 0; i < group.length; i++) if (layersIn(free(group[i] as Device) - compute) >= 1) members.push(i);
  members.sort((a, b) => free(group[b] as Device) - free(group[a] as Device) || a - b);
  // Each device of a split holds at least one layer.
  for (let k = 2; k <= Math.min(members.length + 1, cost.layers); k++) {
    let bestMain = -1;
    let bestRoom = -Infinity;
    for (let m = k - 1; m < group.length; m++) {
      const mainRoom = free(group[m] as Device) - compute - main;
      let layers = layersIn(mainRoom);
      if (layers < 1) continue;
      let room = mainRoom;
      let company = 0;
      for (let j = 0; j < members.length && company < k - 1; j++) {
        const i = members[j] as number;
        if (i >= m) continue;
        const memberRoom = free(group[i] as Device) - compute;
        layers += layersIn(memberRoom);
        room += memberRoom;
        company++;
      }
      if (company < k - 1 || layers < cost.layers || room <= bestRoom) continue;
      bestMain = m;
      bestRoom = room;
    }
    if (bestMain < 0) continue;
    // The chosen devices in device order: llama.cpp assigns a split's layers by device index and
    // puts the output layer after the last block, on the last device; the draft goes with it here.
    const chosen = members.filter((i) => i < bestMain).slice(0, k - 1);
    chosen.sort((a, b) => a - b);
    chosen.push(bestMain);
    const last = chosen.length - 1;
    const rooms = chosen.map((i, at) => free(group[i] as Device) - compute - (at === last ? main : 0));
    const shares = proportionalShares(cost.layers, rooms, rooms.map(layersIn)) as number[];
    const parts = chosen.map((i, at) => ({ index: (group[i] as Device).index, layers: shares[at] as number, bytes: compute + (at === last ? main : 0) + (shares[at] as number) * perLayer }));
    // The device holding the output (and the draft) is the main one, listed first.
    return { kind: tier, devices: [parts[last] as Placement['devices'][number], ...parts.slice(0, last)], cpuMoeLayers: 0, hostBytes: 0 };
  }
  return null;
}

/**
 * `total` layers over devices: one each first (every device in a split pays a compute buffer, so
 * one holding no layer has no place in it), the rest in proportion to `weights` (largest
 * remainders, ties to the earlier device), never more on a device than its `capacity`. Null when
 * a device cannot take even one, or all together cannot take them all.
 */
function proportionalShares(total: number, weights: readonly number[], capacity: readonly number[]): number[] | null {
  if (capacity.some((c) => c < 1) || total < capacity.length || capacity.reduce((a, b) => a + b, 0) < total) return null;
  const rest = total - capacity.length;
  const weightSum = weights.reduce((a, b) => a + b, 0);
  const exact = weights.map((w) => (weightSum > 0 ? (rest * w) / weightSum : rest / weights.length));
  const shares = exact.map((x, i) => 1 + Math.min(Math.floor(x), (capacity[i] as number) - 1));
  let left = total - shares.reduce((a, b) => a + b, 0);
  const order = exact.map((x, i) => ({ i, rest: x - Math.floor(x) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  while (left > 0) {
    for (const { i } of order) {
      if (left === 0) break;
      if ((shares[i] as number) < (capacity[i] as number)) {
        shares[i] = (shares[i] as number) + 1;
        left--;
      }
    }
  }
  return shares;
}

/**
 * As much of the model as fits on the roomiest device, the rest in host RAM. A mixture of
 * experts first leaves the expert tensors of as few layers as needed on the CPU (attention
 * stays on the GPU, which is often the fastest way to run one too big for it); then, or for a
 * dense model, whole layers go to the CPU. Null when not even one layer fits on the device, or
 * the host share does not fit the free RAM.
 */
function partial(devices: readonly Device[], free: (d: Device) => number, cost: LayerCost, draftBytes: number, hostFree: number): Placement | null {
  let device: Device | undefined;
  let room = -Infinity;
  // The roomiest; ties to the lower index (devices come in index order).
  for (const candidate of devices) {
    const its = free(candidate);
    if (its > room) [device, room] = [candidate, its];
  }
  if (device === undefined) return null;
  const perLayer = nonNegative(cost.perLayerBytes);
  const expert = Math.min(perLayer, nonNegative(cost.expertBytesPerLayer));
  const full = layeredTotal(cost, draftBytes, cost.layers);
  if (expert > 0) {
    const cpuMoeLayers = Math.ceil((full - room) / expert);
    if (cpuMoeLayers >= 1 && cpuMoeLayers <= cost.layers && cpuMoeLayers * expert <= hostFree) {
      return { kind: 'partial', devices: [{ index: device.index, layers: cost.layers, bytes: full - cpuMoeLayers * expert }], cpuMoeLayers, hostBytes: cpuMoeLayers * expert };
    }
  }
  const fixed = layeredTotal(cost, draftBytes, 0);
  if (fixed > room) return null;
  const onDevice = perLayer > 0 ? Math.min(cost.layers - 1, Math.floor((room - fixed) / perLayer)) : cost.layers - 1;
  if (onDevice < 1) return null;
  const hostBytes = (cost.layers - onDevice) * perLayer;
  if (hostBytes > hostFree) return null;
  return { kind: 'partial', devices: [{ index: device.index, layers: onDevice, bytes: fixed + onDevice * perLayer }], cpuMoeLayers: 0, hostBytes };
}

/** A pinned model that fits nowhere still launches, on the roomiest device, over its budget (as `schedule` holds it). */
function overBudget(c: Candidate, layout: Layout): Placement {
  let device = layout.devices[0] as Device;
  // The roomiest; ties to the lower index (devices come in index order).
  for (const candidate of layout.devices) {
    if (available(layout.rooms.get(candidate.index) as DeviceRoom, 'room') > available(layout.rooms.get(device.index) as DeviceRoom, 'room')) device = candidate;
  }
  return { kind: 'gpu', devices: [{ index: device.index, layers: 0, bytes: c.cost }], cpuMoeLayers: 0, hostBytes: 0 };
}

function heldRoomOf(room: DeviceRoom): Room {
  return (room.heldRoom ??= { heldBytes: room.held, named: room.named, holderCount: room.holderCount });
}

function pinnedRoomOf(room: DeviceRoom): Room {
  return (room.pinnedRoom ??= { heldBytes: room.pinnedHeld, named: room.pinnedNamed, holderCount: room.pinnedCount });
}

/**
 * Why it was left out, and whether for good. With one device it is `schedule`'s own sentence;
 * with several, each GPU considered and what was short there.
 */
function leftOutReason(
  c: Candidate,
  cost: LayerCost | undefined,
  d: PlacedDesired | undefined,
  layout: Layout,
  hostFree: number,
): LeftOut {
  const { rooms, devices } = layout;
  const need = needOf(c);
  if (devices.length === 1) {
    const room = rooms.get((devices[0] as Device).index) as DeviceRoom;
    if (c.cost > room.budget) return { modelId: c.modelId, reason: room.writer.overWholeBudget(need), strict: true };
    if (c.cost > room.budget - room.pinnedHeld) return { modelId: c.modelId, reason: room.writer.pinnedOut(need, pinnedRoomOf(room)), strict: true };
    return { modelId: c.modelId, reason: room.writer.noRoom(need, heldRoomOf(room)), strict: false };
  }
  const strict = placeOne(c, cost, d, layout, hostFree, PINNED_ONLY) === null;
  // The notes joined by "; ", added one by one: a join would copy the long words about the
  // rooms into every reason, where `+` only links them.
  let reason = `${needs(need)}; ${layout.roomsWords(strict)}`;
  if (cost === undefined) reason += '; it cannot be split (its layers are unknown)';
  else {
    if (d?.oneGpu === true) reason += '; its engine runs it on one GPU (the embedded engine cannot split a model by shares)';
    else if (layout.classGroups.length > 1 && d?.mixedSplit !== true) reason += '; a split across mixed GPUs is off for this model (mixedSplit)';
    reason += `; part on the CPU needs host RAM, ${layout.hostWords(hostFree)} free`;
  }
  const pinnedSomewhere = devices.some((device) => (rooms.get(device.index) as DeviceRoom).pinnedHeld > 0);
  if (strict) reason += pinnedSomewhere ? ': it fits only if a pinned model is unpinned' : ': it does not fit even with nothing else loaded';
  return { modelId: c.modelId, reason, strict };
}
