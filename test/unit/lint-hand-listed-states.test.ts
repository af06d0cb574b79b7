// The lint that keeps state words in one place: a surface that lists states by hand makes a
// meaning of its own (the tray counted problems from one list and the dashboard from another,
// and they disagreed about a degraded model). Test that it catches both shapes of a list,
// leaves the contract and other words alone, and knows every state the contract has.
import { describe, expect, it } from 'vitest';
import { MODEL_STATE_NAMES } from '../../core/contracts/model-status.js';
// @ts-expect-error -- a plain .mjs script without type declarations
import { handListedStates, STATE_NAMES } from '../../scripts/lint-layers.mjs';

const check = handListedStates as (file: string, source: string) => string[];

describe('lint: states listed by hand', () => {
  it('knows the same states as the contract', () => {
    expect(STATE_NAMES).toEqual(MODEL_STATE_NAMES);
  });

  it.each([
    ['electron/tray-menu.ts', "const loading = count(['loading', 'queued', 'evicting']);"],
    ['renderer/src/components/models-view.tsx', "type Up = 'ready' | 'active' | 'degraded';"],
    ['core/cli/format.ts', "const problems = [\n  'quarantined',\n  'failed',\n];"],
    ['core/router/llama/routes.ts', 'type Loaded =\n  | "ready"\n  | "active";'],
  ])('%s: %j is refused', (file, source) => {
    const found = check(file, source);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(/lists states by hand .* use core\/contracts\/model-status\.ts/);
  });

  it.each([
    ['core/contracts/model-status.ts', "export const SERVING_STATES = ['ready', 'active', 'degraded'] as const;"],
    ['electron/tray-menu.test.ts', "for (const state of ['quarantined', 'failed'] as const) {}"],
    ['core/contracts/launch-level.ts', "export type LaunchLevel = 'full' | 'smaller-context' | 'partial' | 'minimal';"],
    ['core/policy/levels.ts', "const ladder = ['full', 'smaller-context'];"],
    ['electron/tray-menu.ts', "if (state === 'failed' || state === 'quarantined') return;"],
    ['electron/tray-menu.ts', "export type TrayHealth = 'ok' | 'loading' | 'problem';"],
    ['renderer/src/format/labels.ts', "const STATE_LABEL: Record<ModelStateName, string> = { ready: 'Ready', active: 'Decoding' };"],
  ])('%s: %j is allowed', (file, source) => {
    expect(check(file, source)).toEqual([]);
  });
});
