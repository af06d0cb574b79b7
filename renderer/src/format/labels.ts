// The words and tones the dashboard uses for the contract's unions. Records over the unions,
// so a state, level or failure kind added to the contract is a compile error here rather than
// a blank badge.
import type { ModelStateName } from '../../../core/contracts/model-status.js';
import type { LaunchLevel } from '../../../core/contracts/launch-level.js';
import type { FailureKind, RecoveryAction } from '../../../core/contracts/recovery.js';

/** The colour family of a badge; CSS maps each to light and dark values. */
export type Tone = 'neutral' | 'info' | 'busy' | 'good' | 'live' | 'warn' | 'alt' | 'bad';

export const STATE_LABEL: Record<ModelStateName, { label: string; tone: Tone }> = {
  idle: { label: 'Idle', tone: 'neutral' },
  queued: { label: 'Queued', tone: 'info' },
  loading: { label: 'Loading', tone: 'busy' },
  ready: { label: 'Ready', tone: 'good' },
  active: { label: 'Decoding', tone: 'live' },
  evicting: { label: 'Evicting', tone: 'warn' },
  failed: { label: 'Failed', tone: 'bad' },
  degraded: { label: 'Degraded', tone: 'warn' },
  fallback: { label: 'Fallback', tone: 'alt' },
  quarantined: { label: 'Quarantined', tone: 'bad' },
};

export const LEVEL_LABEL: Record<LaunchLevel, string> = {
  full: 'Full',
  'smaller-context': 'Smaller context',
  partial: 'Part on CPU',
  minimal: 'CPU only',
};

export const FAILURE_LABEL: Record<FailureKind, string> = {
  none: 'No failure',
  crash: 'Crashed',
  oom: 'Out of memory',
  hang: 'Hung (no progress)',
  invalid: 'Cannot be loaded (bad file)',
  environment: 'Waiting on the machine',
};

export const ACTION_LABEL: Record<RecoveryAction, string> = {
  retry: 'Retry unchanged',
  degrade: 'Relaunch smaller',
  fallback: 'Serve the fallback model',
  quarantine: 'Quarantine until you retry',
};
