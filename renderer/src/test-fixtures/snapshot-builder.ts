// Typed builders for realistic snapshots. Each takes only what a case is about and fills the
// rest with what the daemon would send, so a fixture reads as the situation it describes and a
// field added to the contract is filled in one place (test/support/fixture-snapshot.ts and the
// Electron tests build on these too).
import { phaseOfState, type ModelStatus, type RecoveryView } from '../../../core/contracts/model-status.js';
import type { BudgetView, GpuView, MemoryHolder, ModelView, PlanView, Snapshot } from '../../../core/contracts/snapshot.js';

export const MiB = 1024 ** 2;
export const GiB = 1024 ** 3;

/** The fixed "now" of every fixture and of the tests' clock: 2025-11-29 14:03:41 UTC. */
export const NOW = Date.UTC(2025, 10, 29, 14, 3, 41);

export interface ModelOverrides extends Partial<Omit<ModelView, 'status'>> {
  status?: Partial<Omit<ModelStatus, 'recovery'>> & { recovery?: Partial<RecoveryView> };
}

/** A model that is idle and healthy unless told otherwise; estimates scale with `sizeGiB`. */
export function model(id: string, overrides: ModelOverrides = {}, sizeGiB = 4): ModelView {
  const { status = {}, ...rest } = overrides;
  const { recovery = {}, ...statusRest } = status;
  return {
    id,
    aliases: [],
    path: `/home/ada/models/${id}.gguf`,
    engine: 'embedded',
    priority: 0,
    pinned: false,
    desired: false,
    draftId: null,
    fallbackId: null,
    contextTokens: 8192,
    limits: {},
    layerCount: 32,
    estimateBytes: { full: sizeGiB * GiB, 'smaller-context': sizeGiB * 0.8 * GiB, partial: sizeGiB * 0.4 * GiB, minimal: 0 },
    measuredBytes: null,
    inFlight: 0,
    waiting: 0,
    lastUsed: null,
    loading: null,
    placement: null,
    upstream: null,
    catalogError: null,
    savedConversations: { count: 0, bytes: 0 },
    ...rest,
    status: {
      modelId: id,
      state: 'idle',
      level: null,
      servedBy: null,
      unschedulableReason: null,
      next: null,
      since: NOW - 60_000,
      ...statusRest,
      // A scenario names the summary word; the phase and busy it implies are filled in unless given.
      phase: statusRest.phase ?? phaseOfState(statusRest.state ?? 'idle'),
      busy: statusRest.busy ?? statusRest.state === 'active',
      recovery: { kind: 'none', attempts: 0, nextAction: null, nextAttemptAt: null, lastError: null, ...recovery },
    },
  };
}

/** One GPU; `holders` are what our models hold, other programs and the reserve are added from the arguments. */
export function gpu(
  index: number,
  options: { name?: string; totalGiB: number; othersGiB?: number; reserveGiB?: number; holders?: MemoryHolder[] },
): GpuView {
  const holders = options.holders ?? [];
  const others = (options.othersGiB ?? 0) * GiB;
  const reserve = (options.reserveGiB ?? 1) * GiB;
  const ours = holders.reduce((sum, holder) => sum + holder.bytes, 0);
  return {
    index,
    name: options.name ?? 'NVIDIA GeForce RTX 4090',
    totalBytes: options.totalGiB * GiB,
    usedByOthersBytes: others,
    usedByUsBytes: ours,
    reserveBytes: reserve,
    budgetBytes: options.totalGiB * GiB - others - reserve,
    holders: [
      ...holders,
      ...(others > 0 ? [{ kind: 'other-programs' as const, modelId: null, bytes: others }] : []),
      { kind: 'reserve', modelId: null, bytes: reserve },
    ],
  };
}

export function holder(kind: 'model' | 'draft', modelId: string, bytes: number): MemoryHolder {
  return { kind, modelId, bytes };
}

/** A budget over the given GPUs (none: CPU mode with 64 GiB of host RAM). */
export function budget(gpus: GpuView[], overrides: Partial<BudgetView> = {}): BudgetView {
  const sum = (pick: (g: GpuView) => number): number => gpus.reduce((total, g) => total + pick(g), 0);
  const view: BudgetView = {
    mode: gpus.length === 0 ? 'cpu' : 'gpu',
    budgetBytes: gpus.length === 0 ? 48 * GiB : sum((g) => g.budgetBytes),
    usedBytes: sum((g) => g.usedByUsBytes),
    limitBytes: null,
    gpus,
    holders: gpus
      .flatMap((g) => g.holders)
      .filter((h) => h.kind === 'model' || h.kind === 'draft')
      .sort((a, b) => b.bytes - a.bytes),
    hostTotalBytes: 64 * GiB,
    hostAvailableBytes: 40 * GiB,
    savedConversationsBytes: 0,
    sampledAt: NOW,
    ...overrides,
  };
  return view;
}

export function plan(overrides: Partial<PlanView> = {}): PlanView {
  return { at: NOW - 5_000, launch: [], evict: [], unschedulable: [], ...overrides };
}

export function snapshot(overrides: Partial<Snapshot> = {}): Snapshot {
  return {
    revision: 7,
    startedAt: NOW - 3_600_000,
    endpoint: 'http://127.0.0.1:9137/v1',
    networkEndpoints: [],
    keysRequired: false,
    clientKeyNames: [],
    models: [],
    budget: budget([gpu(0, { totalGiB: 24 })]),
    plan: null,
    configErrors: [],
    configInForce: 'file',
    configPath: '/home/ada/.config/llmtray/config.yaml',
    modelDirs: ['/home/ada/models'],
    lostOutputs: [],
    ...overrides,
  };
}
