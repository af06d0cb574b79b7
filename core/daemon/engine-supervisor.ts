// Start-up step: the supervisor, with what it asks of the rest: each model's launch spec, its
// footprint and compute buffer for the budget's arithmetic, the memory probe it waits on after an
// eviction, the driver's per-process figures, and the warm spare's engine.
import type { Log } from '../controller/effects.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { RuntimeOverhead } from '../engine/runtime-overhead.js';
import { defaultEngineCommand, embeddedEngineCommand } from '../engine/supervisor/engine-command.js';
import { Supervisor } from '../engine/supervisor/supervisor.js';
import { engineIdentities } from '../gpu/engine-identity.js';
import { estimateOnCpu, footprintAt } from '../policy/levels.js';
import type { EnginesAndCatalog } from './engines-and-catalog.js';
import { launchSpecFor } from './launch-specs.js';
import { savedConversationsFor } from './saved-conversations-view.js';
import type { MemoryBudget } from './memory/memory-budget.js';

export async function startSupervisor(deps: {
  dataDir: string;
  engines: EnginesAndCatalog;
  memory: MemoryBudget;
  runtime: RuntimeOverhead;
  engineEnv: Record<string, string> | undefined;
  threads: number | undefined;
  /** The warm spare started, ended or was measured. Must not throw. */
  spareChanged: () => void;
  log: Log;
}): Promise<Supervisor> {
  const { catalog, llamaServer, llamaServerPath } = deps.engines;
  const { budget, cpuOnly, gpuMode, computeApps } = deps.memory;
  const supervisor = await Supervisor.start({
    dataDir: deps.dataDir,
    specFor: (modelId) =>
      launchSpecFor(modelId, {
        resolve: (id) => catalog.resolve(id),
        cpuOnly,
        llamaServerPath,
        ...(llamaServer.found ? {} : { noLlamaServer: llamaServer.reason }),
        ...(deps.engineEnv === undefined ? {} : { engineEnv: deps.engineEnv }),
        ...(deps.threads === undefined ? {} : { threads: deps.threads }),
        // Saved on the embedded engine when a slot goes idle, restored when the model is back;
        // read per launch, so a config change applies to the next launch.
        savedConversations: savedConversationsFor(catalog.config(), deps.dataDir),
      }),
    engineCommand: defaultEngineCommand({ llamaServerPath }),
    footprint: (modelId: string, level: LaunchLevel): number => {
      const estimate = catalog.resolve(modelId)?.estimate;
      return estimate == null ? 0 : footprintAt(level, cpuOnly() ? estimateOnCpu(estimate) : estimate).deviceBytes;
    },
    computeBytes: (modelId: string) => {
      const estimate = catalog.resolve(modelId)?.estimate;
      return estimate == null ? 0 : estimate.computeBytes + (estimate.draft?.computeBytes ?? 0);
    },
    hostIsDevice: cpuOnly,
    runtime: deps.runtime,
    memoryProbe: async () => {
      if (!gpuMode()) return Number.POSITIVE_INFINITY; // host memory is back when the process is gone
      const sample = await budget.sampleNow();
      return sample.perGpu.reduce((sum, gpu) => sum + Math.max(0, gpu.totalBytes - gpu.usedBytes), 0);
    },
    gpuProcessMemory: async () => {
      const byPid = new Map<number, number>();
      if (!gpuMode()) return byPid;
      for (const app of await computeApps().catch(() => [])) {
        if (app.usedBytes !== null) byPid.set(app.pid, (byPid.get(app.pid) ?? 0) + app.usedBytes);
      }
      return byPid;
    },
    // The warm spare runs under the engines' common environment, so a launch with no env of its own can adopt it.
    warmSpare: { command: async () => embeddedEngineCommand(), env: deps.engineEnv ?? {}, note: (line) => deps.log.info(line) },
    onSpareChange: deps.spareChanged,
    gpuIdentity: engineIdentities(deps.memory.current),
  });
  if (supervisor.orphans.ended.length > 0) deps.log.warn(`ended ${supervisor.orphans.ended.length} model server(s) left by an earlier run`);
  return supervisor;
}
