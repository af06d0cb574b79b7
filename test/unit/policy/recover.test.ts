import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { launchLevelAfter, recover, severity } from '../../../core/policy/index.js';
import { LAUNCH_LEVELS, type LaunchLevel } from '../../../core/contracts/launch-level.js';
import type { FailureKind, RecoveryAction } from '../../../core/contracts/recovery.js';

const FAILURES = ['oom', 'hang', 'crash', 'invalid'] as const;
const RUNS = { numRuns: 10_000 };

// The ladder as DESIGN.md states it, attempts 1 to 5; 5 stands for "5 and more".
const LADDER: Record<(typeof FAILURES)[number], RecoveryAction[]> = {
  oom: ['degrade', 'degrade', 'degrade', 'fallback', 'quarantine'],
  hang: ['retry', 'degrade', 'degrade', 'fallback', 'quarantine'],
  crash: ['retry', 'retry', 'retry', 'retry', 'quarantine'],
  invalid: ['quarantine', 'quarantine', 'quarantine', 'quarantine', 'quarantine'],
};

const LEVELS: Record<(typeof FAILURES)[number], LaunchLevel[]> = {
  oom: ['smaller-context', 'partial', 'minimal', 'minimal', 'minimal'],
  hang: ['full', 'smaller-context', 'smaller-context', 'smaller-context', 'smaller-context'],
  crash: ['full', 'full', 'full', 'full', 'full'],
  invalid: ['full', 'full', 'full', 'full', 'full'],
};

const ladderCases = FAILURES.flatMap((kind) => LADDER[kind].map((action, i) => ({ kind, attempts: i + 1, action })));
const levelCases = FAILURES.flatMap((kind) => LEVELS[kind].map((level, i) => ({ kind, attempts: i + 1, level })));

describe('recover', () => {
  it.each(ladderCases)('$kind attempt $attempts → $action', ({ kind, attempts, action }) => {
    expect(recover({ kind, attempts })).toBe(action);
  });

  it.each([6, 7, 50, 1e9])('quarantines every kind at attempt %d', (attempts) => {
    for (const kind of FAILURES) expect(recover({ kind, attempts })).toBe('quarantine');
  });

  it.each<[FailureKind, number]>([
    ['none', 0],
    ['none', 3],
    ['oom', 0],
    ['crash', -2],
    ['hang', Number.NaN],
  ])('answers retry when there is nothing to escalate (%s, %d attempts)', (kind, attempts) => {
    expect(recover({ kind, attempts })).toBe('retry');
    expect(launchLevelAfter({ kind, attempts })).toBe('full');
  });

  it('never quarantines, degrades or falls back for the machine in the way, however often, and launches at full', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1e9 }), (attempts) => {
        expect(recover({ kind: 'environment', attempts })).toBe('retry');
        expect(launchLevelAfter({ kind: 'environment', attempts })).toBe('full');
      }),
      RUNS,
    );
  });

  it('orders severity retry < degrade < fallback < quarantine', () => {
    const order: RecoveryAction[] = ['retry', 'degrade', 'fallback', 'quarantine'];
    for (let i = 1; i < order.length; i++) expect(severity(order[i - 1]!)).toBeLessThan(severity(order[i]!));
  });

  it('never lowers severity as attempts grow, for every kind', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FAILURES), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (kind, a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        expect(severity(recover({ kind, attempts: lo }))).toBeLessThanOrEqual(severity(recover({ kind, attempts: hi })));
      }),
      RUNS,
    );
  });

  it('never answers an out-of-memory failure with a plain retry', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), (attempts) => {
        expect(recover({ kind: 'oom', attempts })).not.toBe('retry');
      }),
      RUNS,
    );
  });
});

describe('launchLevelAfter', () => {
  it.each(levelCases)('$kind attempt $attempts → $level', ({ kind, attempts, level }) => {
    expect(launchLevelAfter({ kind, attempts })).toBe(level);
  });

  it('walks an out-of-memory model down every level, one per degrade, before it falls back', () => {
    // Each degrade must change the launch, or the next attempt repeats the one that failed.
    const degrades = [1, 2, 3, 4, 5].filter((attempts) => recover({ kind: 'oom', attempts }) === 'degrade');
    expect(degrades.map((attempts) => launchLevelAfter({ kind: 'oom', attempts }))).toEqual(LAUNCH_LEVELS.slice(1));
  });

  it('never climbs back to a larger level as attempts grow', () => {
    fc.assert(
      fc.property(fc.constantFrom(...FAILURES), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), (kind, a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a];
        const rank = (attempts: number): number => LAUNCH_LEVELS.indexOf(launchLevelAfter({ kind, attempts }));
        expect(rank(lo)).toBeLessThanOrEqual(rank(hi));
      }),
      RUNS,
    );
  });
});
