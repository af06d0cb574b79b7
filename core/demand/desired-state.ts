// The controller's view of what should be resident, assembled fresh on every pass from the
// four sources that own a piece of it: the catalog (what exists and what it costs), the
// person's pins, the router's activity (requests in flight, recent use) and the live budget.
import type { DesiredProvider, DesiredState, ModelDemand } from '../controller/effects.js';
import type { CatalogModel } from '../catalog/catalog.js';
import { estimateOnCpu, type FootprintEstimate } from '../policy/levels.js';
import type { Device } from '../policy/place.js';
import type { BudgetSample } from '../gpu/live-budget.js';
import type { ModelActivity } from './activity.js';

export interface DesiredSources {
  models(): readonly CatalogModel[];
  isPinned(model: CatalogModel): boolean;
  activity: ModelActivity;
  /** Requests claimed on the model's server now (the supervisor's count). */
  inFlight(modelId: string): number;
  /** Whether its turn holds the idle model for its client's next request (core/demand/turns.ts); default false. */
  heldForTurn?(modelId: string): boolean;
  /**
   * What the model's engine process itself costs where it counts against the budget: its
   * runtime in host RAM, or its backend's context on a GPU (see core/engine/runtime-overhead.ts).
   * Default 0.
   */
  runtimeBytes?(model: CatalogModel): number;
  /** Whether the model's engine can keep a mixture of experts' expert tensors on the CPU (--n-cpu-moe); default true. */
  keepsExpertsOnCpu?(model: CatalogModel): boolean;
  /**
   * Whether the model's engine splits a model over GPUs by the plan's shares (llama-server's
   * --tensor-split); default true. The embedded engine cannot (node-llama-cpp 3.21 takes no
   * tensorSplit): its models are planned on one GPU at most.
   */
  splitsOverGpus?(model: CatalogModel): boolean;
  /** Whether the models' "device" is the CPU (no GPU: host RAM is the budget), so their weights take the CPU's extra buffers; default false. */
  weightsOnCpu?(): boolean;
  /** What a warm spare holds or would, while the config allows one; null when it does not. Default null. */
  warmSpareBytes?(): number | null;
  /** The latest budget sample; samples now when there is none yet. */
  budget(): Promise<BudgetSample>;
}

/**
 * A model whose metadata cannot be read still takes part, at zero cost: when someone asks
 * for it, its launch fails with the catalog's reason and the recovery ladder quarantines it,
 * so the person sees why in every surface instead of the model silently missing.
 */
const UNREADABLE: FootprintEstimate = { weightsBytes: 0, kvBytesPerToken: 0, contextTokens: 0, computeBytes: 0 };

/**
 * The model's estimate as the plan prices it: the catalog's, with its engine's own cost added
 * (paid once per process, per device a split uses, at any context), and without expert tensors
 * to leave on the CPU where its engine cannot (`keepsExpertsOnCpu` false: no --n-cpu-moe); where
 * the weights run on the CPU (`weightsOnCpu`), with the CPU's extra weight buffers beside them
 * (estimateOnCpu). Null when the catalog has no estimate.
 */
export function pricedEstimate(model: CatalogModel, runtimeBytes: number, keepsExpertsOnCpu = true, weightsOnCpu = false): FootprintEstimate | null {
  if (model.estimate === null) return null;
  const own = weightsOnCpu ? estimateOnCpu(model.estimate) : model.estimate;
  const priced: FootprintEstimate = runtimeBytes > 0 ? { ...own, runtimeBytes } : own;
  return keepsExpertsOnCpu || (priced.expertBytesPerBlock ?? 0) <= 0 ? priced : { ...priced, expertBytesPerBlock: 0 };
}

export function demandOf(
  model: CatalogModel,
  sources: Pick<DesiredSources, 'isPinned' | 'activity' | 'inFlight' | 'heldForTurn' | 'runtimeBytes' | 'keepsExpertsOnCpu' | 'weightsOnCpu' | 'splitsOverGpus'>,
): ModelDemand {
  const pinned = sources.isPinned(model);
  const inFlight = sources.inFlight(model.id);

  const demand: ModelDemand = {
    modelId: model.id,
    priority: model.priority,
    pinned,
    wanted: pinned || inFlight > 0 || sources.activity.recentlyUsed(model.id, model.idleTtlMs),
    inFlight,
    estimate: pricedEstimate(model, sources.runtimeBytes?.(model) ?? 0, sources.keepsExpertsOnCpu?.(model) ?? true, sources.weightsOnCpu?.() ?? false) ?? UNREADABLE,
    definitionHash: model.definitionHash,
  };
  const lastUsed = sources.activity.lastUsed(model.id);
  if (lastUsed !== undefined) demand.lastUsed = lastUsed;
  const waitingSince = sources.activity.waitingSince(model.id);
  if (waitingSince !== undefined) demand.waitingSince = waitingSince;
  if (inFlight === 0 && sources.heldForTurn?.(model.id) === true) demand.heldForTurn = true;
  if (model.draftId !== undefined) demand.draftId = model.draftId;
  if (model.fallbackId !== undefined) demand.fallbackId = model.fallbackId;
  if (model.mixedSplit) demand.mixedSplit = true;
  if (sources.splitsOverGpus?.(model) === false) demand.oneGpu = true;
  return demand;
}

/**
 * Each GPU as its own budget, in GPU mode; one pool otherwise (host RAM, unified memory). A
 * configured limit below the machine's caps every GPU in proportion, so the sum is the limit.
 */
export function devicesToPlanOn(budget: BudgetSample): Device[] {
  if (budget.mode !== 'gpu' || budget.perGpu.length === 0) return [{ index: 0, name: budget.mode === 'cpu' ? 'host RAM' : 'unified memory', deviceClass: budget.mode, budgetBytes: budget.totalBytes }];
  const machine = budget.perGpu.reduce((sum, gpu) => sum + gpu.budgetBytes, 0);
  const scale = machine > budget.totalBytes && machine > 0 ? budget.totalBytes / machine : 1;
  return budget.perGpu.map((gpu) => ({
    index: gpu.index,
    name: gpu.name,
    deviceClass: gpu.deviceClass,
    budgetBytes: Math.floor(gpu.budgetBytes * scale),
  }));
}

export class DaemonDesiredState implements DesiredProvider {
  private wantedIds: ReadonlySet<string> = new Set();

  constructor(private readonly sources: DesiredSources) {}

  async read(): Promise<DesiredState> {
    const budget = await this.sources.budget();
    const models = this.sources.models().map((model) => demandOf(model, this.sources));
    this.wantedIds = new Set(models.filter((m) => m.wanted).map((m) => m.modelId));
    // Host RAM is a place of its own only beside a GPU: without one (or on unified memory) it is
    // the device itself, already the budget.
    const state: DesiredState = { models, budgetBytes: budget.totalBytes, hostFreeBytes: budget.mode === 'gpu' ? budget.hostAvailableBytes : 0, devices: devicesToPlanOn(budget) };
    // A spare starts a CPU backend (core/engine/embedded/spare-mode.ts): only where the models' memory is host RAM.
    const spareBytes = budget.mode === 'cpu' ? (this.sources.warmSpareBytes?.() ?? null) : null;
    if (spareBytes !== null) state.warmSpare = { bytes: spareBytes };
    return state;
  }

  /** Whether the last pass wanted the model resident (for the snapshot and /metrics). */
  wanted(modelId: string): boolean {
    return this.wantedIds.has(modelId);
  }
}
