// What running servers hold, and what an engine's runtime costs: the driver's per-process
// figure where there is one, llama.cpp's buffer lines, the process tree's RSS, the estimate.
// Reads only; the model owners and the supervisor ask it.
import type { LaunchSpec } from '../../launch-spec.js';
import type { LaunchLevel } from '../../../contracts/launch-level.js';
import type { Placement } from '../../../contracts/plan.js';
import { treeResidentBytes } from '../process-tree.js';
import type { ServerProcess } from '../server-process.js';
import type { Measurement, SupervisorDeps } from '../supervisor-types.js';

/** A model's running server, as the supervisor's measure() prices it. */
export interface RunningServer {
  modelId: string;
  server: ServerProcess;
}

export class ServerMemory {
  constructor(
    private readonly deps: SupervisorDeps,
    private readonly platform: NodeJS.Platform,
  ) {}

  /**
   * What each of `running` holds on the device, bytes: measured where the driver or llama.cpp's
   * log says, the estimate otherwise. Runs the driver query (nvidia-smi) only when a server is on
   * the device. Never rejects.
   */
  async measure(running: readonly RunningServer[]): Promise<Map<string, number>> {
    if (this.deps.hostIsDevice?.() === true) {
      // Host RAM is the device: what each holds is its process tree's RSS, runtime and all.
      const sizes = await Promise.all(running.map(({ server }) => treeResidentBytes(server.pid, this.platform).catch(() => 0)));
      return new Map(running.map(({ modelId }, i) => [modelId, sizes[i] ?? 0]));
    }
    const onDevice = running.some(({ server }) => server.level !== 'minimal');
    const gpu = onDevice ? await this.gpuUsage() : null;
    return new Map(running.map(({ modelId, server }) => [modelId, this.deviceBytesOf(modelId, server, gpu)]));
  }

  /** What one running server really uses; see Supervisor.measured. */
  async measured(server: ServerProcess): Promise<Measurement> {
    if (server.level !== 'minimal') {
      const device = this.measuredDeviceBytes(server, await this.gpuUsage());
      if (device !== null) return { bytes: device, where: 'device' };
    }
    return { bytes: await treeResidentBytes(server.pid, this.platform), where: 'host' };
  }

  /**
   * The first ready server of an engine kind measures that engine's own cost where it counts:
   * on the CPU its process tree's RSS; on a GPU the driver's figure for it, from a server that
   * sits whole on one device (a split's or a partial launch's share per device is not its model's
   * estimate).
   */
  learnRuntime(modelId: string, spec: LaunchSpec, level: LaunchLevel, server: ServerProcess, placement: Placement | undefined): void {
    const runtime = this.deps.runtime;
    // At full or smaller-context the estimate covers the whole model (at partial or minimal its device figure does not).
    if (runtime === undefined || level === 'partial' || level === 'minimal') return;
    const estimate = this.deps.footprint(modelId, level);
    if (this.deps.hostIsDevice?.() === true) {
      // At its 'ready' a server's RSS holds its runtime, weights and KV cache, but not the
      // compute buffer it has not used yet: counting that in would learn a runtime too small by
      // it (8 MiB of demo-tiny's), and price every model that much under what it holds in use.
      const resident = estimate - (this.deps.computeBytes?.(modelId) ?? 0);
      void treeResidentBytes(server.pid, this.platform)
        .then((rss) => runtime.learn(spec.engine, 'host', rss, resident))
        .catch(() => undefined);
      return;
    }
    if (placement === undefined || placement.kind !== 'gpu' || placement.devices.length !== 1) return;
    void this.gpuUsage().then((byPid) => {
      const held = byPid?.get(server.pid);
      if (held !== undefined) runtime.learn(spec.engine, 'device', held, estimate);
    });
  }

  async gpuUsage(): Promise<ReadonlyMap<number, number> | null> {
    return this.deps.gpuProcessMemory ? this.deps.gpuProcessMemory().catch(() => null) : null;
  }

  /**
   * What the server holds on the device: the driver's figure, which counts everything the
   * process holds; else llama.cpp's buffer lines or the estimate, which count the model only, so
   * its engine's runtime there is added (the plan priced it so, and a picture without it would
   * show a model smaller than what it holds).
   */
  deviceBytesOf(modelId: string, server: ServerProcess, gpu: ReadonlyMap<number, number> | null): number {
    if (server.level === 'minimal') return 0;
    const fromDriver = gpu?.get(server.pid);
    if (fromDriver !== undefined) return fromDriver;
    const runtime = this.deps.runtime?.bytes(server.engine, 'device') ?? 0;
    return (this.measuredDeviceBytes(server, null) ?? this.deps.footprint(modelId, server.level)) + runtime;
  }

  /** Driver accounting first (it sees everything the process holds), then llama.cpp's device buffer lines. */
  private measuredDeviceBytes(server: ServerProcess, gpu: ReadonlyMap<number, number> | null): number | null {
    const fromDriver = gpu?.get(server.pid);
    if (fromDriver !== undefined) return fromDriver;
    return server.buffers.deviceBytes > 0 ? server.buffers.deviceBytes : null;
  }
}
