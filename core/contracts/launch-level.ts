// The launch levels: a word the policy decides, the controller and the engines act on, and
// every surface shows (the snapshot, the tray, the dashboard, the CLI, /metrics). Declared in
// the contract, which imports nothing, so that the policy and the surfaces take it from one
// place and the arrows stay one way (policy → contracts, never back).

/**
 * How far a launch shrinks a model to make it run, in climbing order.
 * - full: every layer on the device at the configured context.
 * - degraded: every layer on the device at a smaller context (see degradedContext).
 * - partial: the degraded context with part of the layers on the device and the rest in
 *   host RAM (see partialLayers); slower than degraded, far faster than the CPU alone.
 * - minimal: CPU only, nothing on the device, at the degraded context; host RAM pays instead.
 */
export type LaunchLevel = 'full' | 'degraded' | 'partial' | 'minimal';

/** The levels from the largest device footprint to the smallest. */
export const LAUNCH_LEVELS: readonly LaunchLevel[] = ['full', 'degraded', 'partial', 'minimal'];
