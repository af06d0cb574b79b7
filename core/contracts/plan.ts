// What the policy decides, in the shapes every surface shows: where a model's bytes are, and
// why a model was left out. core/policy computes these (place.ts, schedule.ts); the
// controller, the engines' argv and the snapshot carry them. Declared here, in the layer that
// imports nothing, so the snapshot does not reach into the policy for its own fields.

/** Where a model's bytes are. */
export interface Placement {
  /**
   * gpu: one device holds it all; split: a layer split over devices of one class; mixed: over
   * devices of several classes; partial: some layers (or a mixture of experts' expert tensors)
   * in host RAM; cpu: nothing on a device.
   */
  kind: 'gpu' | 'split' | 'mixed' | 'partial' | 'cpu';
  /**
   * The devices it uses, the main one first: it holds the draft, the output tensors and the
   * projector (in a split, the last device in index order, where llama.cpp puts the output).
   */
  devices: { index: number; layers: number; bytes: number }[];
  /** Layers whose expert tensors stay in host RAM (`--n-cpu-moe`); 0 for a dense model. */
  cpuMoeLayers: number;
  /** Bytes in host RAM. */
  hostBytes: number;
}

/** A desired model the plan left out, and why. */
export interface LeftOut {
  modelId: string;
  reason: string;
  /**
   * True when it cannot fit even if every model that may be evicted were gone: what pinned
   * models hold stays, and so does what other programs use (the budget already leaves that
   * out). Then asking again will not help until a person unpins something or the budget
   * grows. False when it fits once busy, loading or higher-ranked models make room: a request
   * for it waits rather than being refused.
   */
  strict: boolean;
}
