// What an engine process costs in host RAM before any model: Node, node-llama-cpp and its
// backend for the embedded engine; the binary and its threads for llama-server.
//
// Why it matters: on a machine without a GPU, host RAM is the budget, and a model "of 9.9 MiB"
// ran in a process of 106 MiB; the plan counted the first figure and the memory picture the
// second, so they disagreed by ten times. Counting the runtime in every model's footprint there
// makes the estimate and the measurement agree (within ±10 % on the demo models).
//
// The figure is measured once per engine kind, from the first server of that kind to become
// ready on the CPU (its RSS less its model's estimate); until then these priors stand in,
// measured here on the demo models (Linux x86_64, node-llama-cpp 3.21.1, llama.cpp 80fb11a):
// the embedded engine ~99 MiB over demo-tiny's estimate and ~105 MiB over demo-chat's;
// llama-server ~13 MiB.

const MIB = 1024 * 1024;

export type EngineKind = 'embedded' | 'llama-server';

export const RUNTIME_PRIOR_BYTES: Readonly<Record<EngineKind, number>> = {
  embedded: 100 * MIB,
  'llama-server': 14 * MIB,
};

/** The engines' runtime figures as measured so far, priors where none was yet. */
export class RuntimeOverhead {
  private readonly measured = new Map<EngineKind, number>();

  /**
   * Learns `engine`'s runtime from one server on the CPU: its RSS less what its model was
   * estimated to hold. Only the first measurement of a kind counts (one process's own
   * allocations would otherwise keep moving the figure every model is priced with).
   */
  learn(engine: EngineKind, rssBytes: number, modelEstimateBytes: number): void {
    if (this.measured.has(engine)) return;
    const bytes = rssBytes - modelEstimateBytes;
    if (bytes > 0) this.measured.set(engine, bytes);
  }

  /** The runtime of an engine of this kind on the CPU, bytes: measured, else the prior. */
  bytes(engine: EngineKind): number {
    return this.measured.get(engine) ?? RUNTIME_PRIOR_BYTES[engine];
  }
}
