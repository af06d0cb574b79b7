// What an engine process costs before any model, where it counts against the budget.
//
// In host RAM (no GPU): Node, node-llama-cpp and its backend for the embedded engine; the binary
// and its threads for llama-server. A model "of 9.9 MiB" ran in a process of 106 MiB; the plan
// counted the first figure and the memory picture the second, so they disagreed by ten times.
//
// On a GPU: the backend's context in each process that uses the device — CUDA's primary context
// and library workspaces, 107 MiB on an RTX 4060 Ti to 555 MiB on an RTX PRO 6000 (measured in
// llama.cpp PR #20595/#23604: the cost grows with the number of SMs); Ollama budgets a fixed
// minimum for it (ollama PR #2114). The driver counts it in the process's figure, so a plan
// that leaves it out admits models the card cannot hold, one context per resident model.
//
// Each figure is measured once per engine kind and place, from the first server of that kind to
// become ready there at a level whose estimate covers the whole model: on the CPU its RSS less
// its model's estimate without the compute buffer (not resident until used), on a GPU the
// driver's per-process figure less its model's estimate. Until then these priors
// stand in. The host ones were measured here on the demo models (Linux x86_64, node-llama-cpp
// 3.21.1, llama.cpp 80fb11a): the embedded engine ~99 MiB over demo-tiny's estimate and
// ~105 MiB over demo-chat's; llama-server ~13 MiB. The device one is the upper half of the
// range above: pricing a model too high leaves it out until the first measurement corrects
// the figure; pricing it too low is an out-of-memory launch.

import { Emitter, type Event } from '../common/emitter.js';
import type { EngineKind } from '../contracts/snapshot.js';

const MIB = 1024 * 1024;

/** Host RAM (no GPU: the host is the device), or a GPU's memory. */
export type RuntimePlace = 'host' | 'device';

export const RUNTIME_PRIOR_BYTES: Readonly<Record<RuntimePlace, Readonly<Record<EngineKind, number>>>> = {
  host: { embedded: 100 * MIB, 'llama-server': 14 * MIB },
  device: { embedded: 512 * MIB, 'llama-server': 512 * MIB },
};

/** The engines' runtime figures as measured so far, priors where none was yet. */
export class RuntimeOverhead {
  private readonly measured = new Map<string, number>();
  private readonly learned = new Emitter<void>('the runtime figures');

  /**
   * `configuredDeviceBytes`: what the person configured each engine process to hold on a GPU
   * (the config's budget.engineOverhead, read at each call so a reload applies); where set, it
   * stands for every engine there.
   */
  constructor(private readonly configuredDeviceBytes: () => number | undefined = () => undefined) {}

  /**
   * Learns `engine`'s runtime at `place` from one server: what it holds there (RSS, or the
   * driver's per-process figure) less what its model was estimated to hold. Only the first
   * measurement of a kind counts (one process's own allocations would otherwise keep moving the
   * figure every model is priced with).
   */
  learn(engine: EngineKind, place: RuntimePlace, heldBytes: number, modelEstimateBytes: number): void {
    const key = `${place}:${engine}`;
    if (this.measured.has(key)) return;
    const bytes = heldBytes - modelEstimateBytes;
    if (bytes <= 0) return;
    this.measured.set(key, bytes);
    this.learned.fire();
  }

  /** The runtime of an engine of this kind at `place`, bytes: measured, else the prior. */
  bytes(engine: EngineKind, place: RuntimePlace): number {
    const configured = place === 'device' ? this.configuredDeviceBytes() : undefined;
    if (configured !== undefined) return configured;
    return this.measured.get(`${place}:${engine}`) ?? RUNTIME_PRIOR_BYTES[place][engine];
  }

  /** Whether the figure was measured here (false: the prior stands in). */
  isMeasured(engine: EngineKind, place: RuntimePlace): boolean {
    return this.measured.has(`${place}:${engine}`);
  }

  /** Fires each time a figure is learned (the demo sizes its limit with it). */
  readonly onLearned: Event<void> = this.learned.event;
}
