// Assembles the admin snapshot from the daemon's parts. Synchronous and cheap (map lookups
// and a few sums): the admin service calls it on every change, throttled.
import type { Catalog, CatalogModel } from '../catalog/catalog.js';
import type { Controller } from '../controller/controller.js';
import type { MemoryHolder, ModelView, Snapshot, BudgetView, GpuView } from '../contracts/snapshot.js';
import type { ModelStatus } from '../contracts/model-status.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { BudgetSample } from '../gpu/live-budget.js';
import { footprintAt, type FootprintEstimate } from '../policy/levels.js';
import type { ModelActivity } from './activity.js';
import { LAUNCH_LEVELS, type LaunchLevel } from '../contracts/launch-level.js';

export interface SnapshotParts {
  startedAt: number;
  endpoint: () => string;
  catalog: Pick<Catalog, 'models' | 'problems' | 'config'>;
  controller: Pick<Controller, 'status' | 'lastPlan' | 'placement'>;
  supervisor: Pick<Supervisor, 'status' | 'endpointFor' | 'inFlight'>;
  activity: ModelActivity;
  isPinned(model: CatalogModel): boolean;
  wanted(modelId: string): boolean;
  engineOf(model: CatalogModel): 'embedded' | 'llama-server';
  measuredBytes(modelId: string): number | null;
  budget(): BudgetSample | null;
  limitBytes: number | null;
  configPath: string;
}

function idleStatus(modelId: string, since: number): ModelStatus {
  return {
    modelId,
    state: 'idle',
    level: null,
    recovery: { kind: 'none', attempts: 0, nextAction: null, nextAttemptAt: null, lastError: null },
    servedBy: null,
    unschedulableReason: null,
    next: null,
    since,
  };
}

function estimatesOf(model: CatalogModel): Record<LaunchLevel, number> {
  const out = { full: 0, degraded: 0, partial: 0, minimal: 0 } as Record<LaunchLevel, number>;
  if (model.estimate === null) return out;
  for (const level of LAUNCH_LEVELS) out[level] = footprintAt(level, model.estimate).deviceBytes;
  return out;
}

/**
 * A resident model's share of memory, split into the model and its draft. Measured bytes,
 * when known, replace the estimate for the whole process; the draft keeps its estimated
 * share of it, since one process cannot be measured per model. The draft's share is the pair
 * less the primary alone, not the draft's own footprintAt: in a pair the draft runs at the
 * primary's context and stays on the device at 'partial', neither of which its own estimate
 * knows.
 */
function holdersOf(model: CatalogModel, level: LaunchLevel, measured: number | null): MemoryHolder[] {
  if (model.estimate === null) return [];
  const { draft, ...primary } = model.estimate;
  const held = (estimate: FootprintEstimate): number => {
    const footprint = footprintAt(level, estimate);
    return level === 'minimal' ? footprint.hostBytes : footprint.deviceBytes;
  };
  const estimated = held(model.estimate);
  const bytes = measured ?? estimated;
  const draftShare = draft === undefined ? 0 : estimated - held(primary);
  const draftBytes = estimated > 0 ? Math.round((bytes * draftShare) / estimated) : 0;
  const holders: MemoryHolder[] = [{ kind: 'model', modelId: model.id, bytes: bytes - draftBytes }];
  if (draftBytes > 0) holders.push({ kind: 'draft', modelId: model.draftId ?? null, bytes: draftBytes });
  return holders;
}

export function buildSnapshot(parts: SnapshotParts): Omit<Snapshot, 'revision'> {
  const models: ModelView[] = [];
  const residentHolders: MemoryHolder[] = [];
  for (const model of parts.catalog.models()) {
    const server = parts.supervisor.status(model.id);
    const endpoint = parts.supervisor.endpointFor(model.id);
    const measured = parts.measuredBytes(model.id);
    if (endpoint !== null) residentHolders.push(...holdersOf(model, endpoint.level, measured));
    const lastUsed = parts.activity.lastUsed(model.id);
    models.push({
      id: model.id,
      aliases: model.aliases,
      path: model.path,
      engine: parts.engineOf(model),
      priority: model.priority,
      pinned: parts.isPinned(model),
      desired: parts.wanted(model.id),
      draftId: model.draftId ?? null,
      fallbackId: model.fallbackId ?? null,
      contextTokens: model.ctx,
      estimateBytes: estimatesOf(model),
      measuredBytes: measured,
      inFlight: parts.supervisor.inFlight(model.id),
      lastUsed: lastUsed ?? null,
      status: parts.controller.status(model.id) ?? idleStatus(model.id, parts.startedAt),
      loading: server !== null && server.phase === 'loading' ? { fraction: server.loadProgress, startedAt: server.startedAt } : null,
      placement: parts.controller.placement(model.id),
      upstream: endpoint === null ? null : { baseUrl: `http://127.0.0.1:${endpoint.port}`, pid: endpoint.pid },
      catalogError: model.metadataError,
    });
  }
  residentHolders.sort((a, b) => b.bytes - a.bytes);
  const config = parts.catalog.config();
  return {
    startedAt: parts.startedAt,
    endpoint: parts.endpoint(),
    models,
    budget: budgetView(parts.budget(), residentHolders, parts.limitBytes),
    plan: parts.controller.lastPlan(),
    configErrors: parts.catalog.problems(),
    configPath: parts.configPath,
    modelDirs: config.modelDirs,
  };
}

/**
 * Per GPU, each model's bytes are shown split in proportion to each card's budget, which is
 * how llama.cpp splits layers by default (by free memory) when no tensor split is given.
 */
function budgetView(sample: BudgetSample | null, holders: MemoryHolder[], limitBytes: number | null): BudgetView {
  const usedBytes = holders.reduce((sum, h) => sum + h.bytes, 0);
  if (sample === null) {
    return { mode: 'cpu', budgetBytes: 0, usedBytes, limitBytes, gpus: [], holders, hostTotalBytes: 0, hostAvailableBytes: 0, sampledAt: 0 };
  }
  const totalBudget = sample.perGpu.reduce((sum, g) => sum + g.budgetBytes, 0);
  const gpus: GpuView[] = sample.perGpu.map((gpu) => {
    const share = totalBudget > 0 ? gpu.budgetBytes / totalBudget : 0;
    const own: MemoryHolder[] = holders.map((h) => ({ ...h, bytes: Math.round(h.bytes * share) }));
    return {
      index: gpu.index,
      name: gpu.name,
      totalBytes: gpu.totalBytes,
      usedByOthersBytes: gpu.usedByOthersBytes,
      usedByUsBytes: gpu.usedByUsBytes,
      reserveBytes: gpu.reserveBytes,
      budgetBytes: gpu.budgetBytes,
      holders: [
        ...own,
        { kind: 'other-programs', modelId: null, bytes: gpu.usedByOthersBytes },
        { kind: 'reserve', modelId: null, bytes: gpu.reserveBytes },
      ],
    };
  });
  return {
    mode: sample.mode,
    budgetBytes: sample.totalBytes,
    usedBytes,
    limitBytes,
    gpus,
    holders,
    hostTotalBytes: sample.hostTotalBytes,
    hostAvailableBytes: sample.hostAvailableBytes,
    sampledAt: sample.sampledAt,
  };
}
