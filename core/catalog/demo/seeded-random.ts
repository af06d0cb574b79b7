// A small deterministic PRNG for generated model weights.
//
// Why not Math.random: the demo models must be byte-identical from run to run (the demo set
// is skipped when a file of the right size is already present, and tests compare bytes).
// Why mulberry32: one 32-bit state, fast enough to fill tens of millions of weights in well
// under a second, and statistically plenty for weights that only have to look random.

/** A source of uniform numbers in [0, 1), fully determined by its seed. */
export interface SeededRandom {
  next(): number;
  /** Fills `out` with uniform values in [-amplitude, amplitude). */
  fillUniform(out: Float32Array, amplitude: number, from?: number, to?: number): void;
}

export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    fillUniform(out, amplitude, from = 0, to = out.length) {
      for (let i = from; i < to; i++) out[i] = (next() * 2 - 1) * amplitude;
    },
  };
}

/** Mixes a base seed with a tensor's name so each tensor gets its own independent stream. */
export function seedFor(baseSeed: number, label: string): number {
  let h = (baseSeed ^ 0x811c9dc5) >>> 0;
  for (let i = 0; i < label.length; i++) {
    h ^= label.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}
