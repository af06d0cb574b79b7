// Start-up step: the live memory budget, sampled once before anything plans on it.
import type { Log } from '../../controller/effects.js';
import { realClock } from '../../common/clock.js';
import { errorMessage } from '../../contracts/error-message.js';
import { formatBytes } from '../../contracts/format-bytes.js';
import type { Catalog } from '../../catalog/catalog.js';
import { queryComputeApps, sharedComputeAppsReader, type ComputeAppsReader } from '../../gpu/compute-apps.js';
import { execFileText } from '../../gpu/exec-file.js';
import type { GpuProbe } from '../../gpu/gpu-probe.js';
import { createLiveBudget, DEFAULT_BUDGET_CONFIG, type BudgetSample, type LiveBudget } from '../../gpu/live-budget.js';
import { createOwnUsageProvider } from '../../gpu/own-usage.js';

export interface MemoryBudget {
  budget: LiveBudget;
  /** One per-process GPU query for the budget's own-usage and the supervisor's measurements. */
  computeApps: ComputeAppsReader;
  /** The last sample (the first one until the sampler has taken another). */
  current(): BudgetSample;
  /** Whether models run in host RAM now (no GPU whose memory can be measured). */
  cpuOnly(): boolean;
  gpuMode(): boolean;
}

/** `enginePids`: our engines' pids, to count what they hold as ours (none before the supervisor exists). */
export async function openMemoryBudget(deps: { probe: GpuProbe; catalog: Catalog; enginePids: () => readonly number[]; log: Log }): Promise<MemoryBudget> {
  const computeApps = sharedComputeAppsReader(() => queryComputeApps(execFileText), realClock);
  const budget = createLiveBudget({
    probe: deps.probe,
    ownUsage: createOwnUsageProvider({ pids: deps.enginePids, computeApps }),
    config: () => {
      const { budget } = deps.catalog.config();
      return { reserveBytes: budget.reserveBytes, limitBytes: budget.limitBytes ?? null, unifiedShare: budget.unifiedShare ?? DEFAULT_BUDGET_CONFIG.unifiedShare };
    },
    onError: (error) => deps.log.warn(`memory probe failed; keeping the last budget: ${errorMessage(error)}`),
  });
  const firstSample = await budget.sampleNow();
  deps.log.info(`memory budget: ${firstSample.mode} mode, ${formatBytes(firstSample.totalBytes)}${firstSample.reason ? ` (${firstSample.reason})` : ''}`);
  const current = (): BudgetSample => budget.current() ?? firstSample;
  return { budget, computeApps, current, cpuOnly: () => current().mode === 'cpu', gpuMode: () => current().mode === 'gpu' };
}
