// The launch levels: a word the policy decides, the controller and the engines act on, and
// every surface shows (the snapshot, the tray, the dashboard, the CLI, /metrics). Declared in
// the contract, which imports nothing, so that the policy and the surfaces take it from one
// place and the arrows stay one way (policy → contracts, never back).

/**
 * How far a launch shrinks a model to make it run, in climbing order.
 * - full: every layer on the device at the configured context.
 * - smaller-context: every layer on the device at a smaller context (see smallerContext).
 * - partial: the smaller context with part of the layers on the device and the rest in
 *   host RAM (see partialLayers); slower than smaller-context, far faster than the CPU alone.
 * - minimal: CPU only, nothing on the device, at the smaller context; host RAM pays instead.
 * A model at any level but full is degraded (the state word, isDegraded): the level says how far,
 * which is why no level is itself named `degraded`.
 */
export type LaunchLevel = 'full' | 'smaller-context' | 'partial' | 'minimal';

/** The levels from the largest device footprint to the smallest. */
export const LAUNCH_LEVELS: readonly LaunchLevel[] = ['full', 'smaller-context', 'partial', 'minimal'];
