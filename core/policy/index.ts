// The policy's public API: pure decisions, no I/O. See README.md for the data flow and invariants.
export { schedule, type Desired, type Draft, type LeftOut, type Plan, type Resident } from './schedule.js';
export {
  recover,
  launchLevelAfter,
  severity,
  RECOVERY_SEVERITY,
  type FailureKind,
  type RecoveryAction,
  type RecoveryState,
} from './recover.js';
export {
  degradedContext,
  footprintAt,
  LAUNCH_LEVELS,
  layerCostAt,
  partialLayers,
  type FootprintEstimate,
  type LaunchLevel,
  type LevelFootprint,
} from './levels.js';
export {
  formatBytes,
  hostMemoryReason,
  reasonWriter,
  type Holder,
  type HoldReason,
  type Need,
  type ReasonWriter,
  type Room,
} from './reasons.js';
