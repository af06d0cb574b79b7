// Time, injected: the supervisor's waits (load timeout, memory wait) follow this clock so
// that tests can step a fake one instead of sleeping.

/** The supervisor's clock: the same shape as the controller's, so one fake drives both. */
export interface SupervisorClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const realClock: SupervisorClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
