// The state words' one source: the summary word from phase × level × busy, and "needs
// attention". Every surface reads these two, so a wrong case here is a wrong word everywhere.
import { describe, expect, it } from 'vitest';
import { attentionWord, MODEL_STATE_NAMES, phaseOfState, stateWord, type ModelPhase, type ModelStatus } from '../../../core/contracts/model-status.js';
import type { LaunchLevel } from '../../../core/contracts/launch-level.js';
import type { FailureKind } from '../../../core/contracts/recovery.js';

const recovery = (kind: FailureKind): ModelStatus['recovery'] => ({ kind, attempts: kind === 'none' ? 0 : 1, nextAction: null, nextAttemptAt: null, lastError: null });

describe('stateWord', () => {
  it.each<[ModelPhase, LaunchLevel | null, boolean, string]>([
    ['serving', 'full', false, 'ready'],
    ['serving', 'partial', false, 'degraded'],
    ['serving', 'full', true, 'active'],
    // Busy wins the one word; the level stays in the status for surfaces that say both.
    ['serving', 'minimal', true, 'active'],
    ['loading', 'smaller-context', false, 'loading'],
    ['failed', 'smaller-context', false, 'failed'],
    ['quarantined', null, false, 'quarantined'],
  ])('%s at %s, busy %s, is %s', (phase, level, busy, word) => {
    expect(stateWord(phase, level, busy)).toBe(word);
  });

  it('is undone by phaseOfState for every state word', () => {
    for (const state of MODEL_STATE_NAMES) {
      const phase = phaseOfState(state);
      const level = state === 'degraded' ? 'smaller-context' : 'full';
      expect(stateWord(phase, level, state === 'active')).toBe(state);
    }
  });
});

describe('attentionWord', () => {
  it.each<[ModelPhase, LaunchLevel | null, FailureKind, string | null]>([
    ['serving', 'full', 'none', null],
    ['loading', 'full', 'none', null],
    ['idle', null, 'none', null],
    ['serving', 'partial', 'none', 'degraded'],
    ['loading', 'smaller-context', 'oom', 'recovering'],
    ['queued', null, 'environment', 'recovering'],
    ['failed', 'smaller-context', 'crash', 'failed'],
    ['fallback', null, 'oom', 'fallback'],
    ['quarantined', null, 'invalid', 'quarantined'],
  ])('%s at %s after %s: %s', (phase, level, kind, word) => {
    expect(attentionWord({ phase, level, recovery: recovery(kind) })).toBe(word);
  });
});
