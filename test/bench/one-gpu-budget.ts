// A budget sample of one GPU with `budgetBytes` of room and nothing else on it: the world in
// which the swap benchmarks and the swap tests run a daemon core (two models that do not fit
// together), so a switch between them is a swap.
import type { BudgetSample } from '../../core/gpu/live-budget.js';

export function oneGpuBudget(budgetBytes: number, hostBytes: number, sampledAt: number): BudgetSample {
  return {
    mode: 'gpu',
    totalBytes: budgetBytes,
    perGpu: [
      {
        index: 0,
        name: 'test GPU',
        vendor: 'nvidia',
        busAddress: null,
        deviceClass: 'nvidia:test',
        totalBytes: budgetBytes,
        usedBytes: 0,
        usedByOthersBytes: 0,
        usedByUsBytes: 0,
        reserveBytes: 0,
        budgetBytes,
      },
    ],
    hostTotalBytes: hostBytes,
    hostAvailableBytes: hostBytes,
    sampledAt,
  };
}
