// The controller's public API. See README.md for the data flow, the invariants and the state machine.
export { ACTIVITY_REFRESH_MS, Controller, DEFAULT_RESYNC_MS, type ControllerOptions } from './controller.js';
export { DEFAULT_HEALTHY_AFTER_MS, ENVIRONMENT_RECHECK_MS } from './recovery-ladder.js';
export { DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
export { MOVE_UP_COOL_DOWN_MS, MOVE_UP_SETTLE_MS } from './move-up.js';
export type {
  Classify,
  Clock,
  DesiredProvider,
  DesiredState,
  Log,
  LogFields,
  ModelDemand,
  ResidentServer,
  ServerControl,
} from './effects.js';
