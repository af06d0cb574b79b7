// The recovery ladder's words: why a launch failed and what comes next. The policy decides
// them (core/policy/recover.ts), the controller and the supervisor report them, and the
// snapshot, the tray and the dashboard show them; declared here so all of them take the words
// from the contract, the layer that imports nothing.

/**
 * Why the last launch failed ('none': it did not).
 * - crash: the process exited or failed to start with no sign that memory was the cause.
 * - oom: an allocation failed on the device or the host (or the OOM killer ended it).
 * - hang: it started but never became ready within the load timeout, or stopped making progress.
 * - invalid: a load error no retry can fix (a corrupt or truncated file, an unknown
 *   architecture, a draft whose vocabulary does not match its primary).
 * - environment: the machine is in the way, not the model: the data dir's disk is full or
 *   read-only, the working directory is gone, the model file is missing (its drive unplugged),
 *   the engine binary is missing or not executable. It never quarantines: the model waits, and
 *   is tried again at short intervals until the condition has cleared.
 */
export type FailureKind = 'none' | 'crash' | 'oom' | 'hang' | 'invalid' | 'environment';

/**
 * The next step for a failing model, in increasing severity.
 * - retry: the same launch again.
 * - degrade: relaunch smaller (core/policy/recover.ts's launchLevelAfter says how small).
 * - fallback: serve the model's configured smaller fallback in its place; with none
 *   configured the controller treats it as quarantine.
 * - quarantine: do not launch again until a person retries it or its definition changes.
 */
export type RecoveryAction = 'retry' | 'degrade' | 'fallback' | 'quarantine';
