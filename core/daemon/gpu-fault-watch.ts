// A fault of the card in an engine's log (core/engine/gpu-fault.ts) makes that GPU suspect in
// the live budget (core/gpu/live-budget.ts): the relaunch the ladder orders is planned without
// it, and its vendor tool's next measurement offers it again if it is healthy. Without this,
// the relaunch went back to the card that had just faulted, until nvidia-smi happened to
// notice it was gone, and each relaunch there counted as one more crash of the model.
import type { Log } from '../controller/effects.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { LiveBudget } from '../gpu/live-budget.js';

/** Suspects the card of every fault reported in a ServerExited. Returns the unsubscribe. */
export function suspectFaultyGpus(supervisor: Pick<Supervisor, 'onServerEvent'>, budget: Pick<LiveBudget, 'current' | 'suspect'>, log: Log): () => void {
  return supervisor.onServerEvent((event) => {
    if (event.type !== 'ServerExited' || event.gpuFault === undefined) return;
    const { gpuFault } = event;
    const gpus = budget.current()?.perGpu ?? [];
    const gpu = gpuFault.busAddress !== null ? gpus.find((g) => g.busAddress === gpuFault.busAddress) : gpus.find((g) => g.index === gpuFault.gpu);
    if (gpu?.busAddress == null) {
      log.warn(`${event.modelId}'s engine reported a fault of a GPU the budget cannot tell (${gpuFault.line}); no GPU is suspected`);
      return;
    }
    const why = `${event.modelId}'s engine said: ${gpuFault.line}`;
    if (budget.suspect(gpu.busAddress, why)) log.warn(`GPU ${gpu.index} ${gpu.name} (${gpu.busAddress}) is suspect: ${why}; its models run elsewhere until its vendor tool measures it again`);
  });
}
