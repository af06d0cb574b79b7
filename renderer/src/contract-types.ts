// The policy's small unions, reached through the contract types that carry them.
//
// Why not `import type { LaunchLevel } from '../../core/policy/levels.js'`: the layering lint
// lets the renderer see core/contracts only. Deriving the unions from the contract's fields
// gives the same types, and a new level or failure kind still breaks every exhaustive Record
// below at compile time.
import type { ModelStatus, RecoveryView } from '../../core/contracts/model-status.js';

export type LaunchLevel = NonNullable<ModelStatus['level']>;
export type FailureKind = RecoveryView['kind'];
export type RecoveryAction = NonNullable<RecoveryView['nextAction']>;
