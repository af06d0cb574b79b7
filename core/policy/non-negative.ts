// Every size the policy reads (footprint, budget, context) goes through this one clamp.
// Negative or NaN means a bad estimate or a failed probe; counting it as zero keeps the
// arithmetic total (nothing throws inside a reconcile pass) and deterministic (a NaN would
// poison every comparison it touches). `value > 0` is false for NaN.
export function nonNegative(value: number): number {
  return value > 0 ? value : 0;
}
