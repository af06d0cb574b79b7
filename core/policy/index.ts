// The policy's public API: pure decisions, no I/O. See README.md for the data flow and invariants.
// The words it decides in (LaunchLevel, FailureKind, RecoveryAction, Placement, LeftOut) and
// formatBytes are core/contracts', which every layer imports from directly.
export type { Desired, Draft, Plan, Resident } from './plan-types.js';
export {
  recover,
  launchLevelAfter,
  severity,
  RECOVERY_SEVERITY,
  type RecoveryState,
} from './recover.js';
export {
  smallerContext,
  footprintAt,
  layerCostAt,
  partialLayers,
  type FootprintEstimate,
  type LevelFootprint,
} from './levels.js';
export {
  hostMemoryReason,
  reasonWriter,
  type Holder,
  type HoldReason,
  type Need,
  type ReasonWriter,
  type Room,
} from './reasons.js';
