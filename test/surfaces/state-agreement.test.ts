// @vitest-environment jsdom
// The tray, the dashboard and `llmtray status` read one model's state and must say the same
// thing about it. They once did not: the tray counted problems from a list of state words and
// the dashboard added "a failure on record", so a degraded model that answered a request was a
// problem on the dashboard and all well in the tray. This drives one model through loading,
// degraded, busy (degraded and answering), failed and quarantined with the real controller
// (its statuses come from derive-status, not from a fixture), and at each step reads what each
// surface shows: the real tray menu and tooltip, the rendered Models and Recovery views, and
// the CLI's status text.
import { cleanup } from '@testing-library/react';
import { createElement } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import { statusText } from '../../core/cli/format.js';
import { Controller } from '../../core/controller/index.js';
import type { ModelDemand } from '../../core/controller/effects.js';
import { phaseOfState, type ModelPhase, type ModelStateName, type ModelStatus } from '../../core/contracts/model-status.js';
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { footprintAt } from '../../core/policy/levels.js';
import { buildTrayMenu, trayStatus, type TrayActions } from '../../electron/tray-menu.js';
import { ModelsView } from '../../renderer/src/components/models-view.js';
import { RecoveryView } from '../../renderer/src/components/recovery-view.js';
import { renderWithSnapshot } from '../../renderer/src/test-fixtures/render.js';
import { GiB, model, NOW, snapshot } from '../../renderer/src/test-fixtures/snapshot-builder.js';
import { FakeClock, settle } from '../support/fake-clock.js';
import { FakeDesired, RecordingServer, ScriptedLaunchError } from '../support/recording-server.js';

afterEach(cleanup);

const ID = 'chat';

/** What a surface says about the model, in the same four facts for each. */
interface Reading {
  phase: ModelPhase;
  busy: boolean;
  degraded: boolean;
  needsAttention: boolean;
}

const NO_ACTIONS: TrayActions = { copyText() {}, runCommand() {}, openDashboard() {}, cancelPull() {}, setStartAtLogin() {}, quit() {} };

/** The tray: its menu label's words for the model, and whether its tooltip counts it as a problem. */
function trayReading(shot: Snapshot): Reading {
  const item = buildTrayMenu(shot, NO_ACTIONS, { startAtLogin: false, now: NOW }).find((i) => i.type === 'submenu' && i.label.startsWith(`${ID} — `));
  if (item === undefined || item.type !== 'submenu') throw new Error('the tray has no item for the model');
  const words = item.label.slice(`${ID} — `.length);
  const first = /^[a-z]+/.exec(words)?.[0] ?? '';
  const phase: ModelPhase = first === 'answering' || first === 'ready' || first === 'degraded' ? 'serving' : (first as ModelPhase);
  return { phase, busy: first === 'answering', degraded: words.includes('degraded:'), needsAttention: trayStatus(shot).health === 'problem' };
}

/** The dashboard: the badges on the model's card, and whether the Recovery view lists it. */
function dashboardReading(shot: Snapshot): Reading {
  const models = renderWithSnapshot(createElement(ModelsView), shot);
  const badges = [...models.container.querySelectorAll(`[aria-labelledby="model-${ID}"] .model-title [data-state]`)].map((b) => b.getAttribute('data-state') as ModelStateName);
  models.unmount();
  const recovery = renderWithSnapshot(createElement(RecoveryView), shot);
  const listed = recovery.container.querySelector(`[aria-labelledby="recovery-${ID}"]`) !== null;
  recovery.unmount();
  const [word = 'idle'] = badges;
  return { phase: phaseOfState(word), busy: badges.includes('active'), degraded: badges.includes('degraded'), needsAttention: listed };
}

/** The CLI: the model's STATE column, and its "needs attention" line. */
function cliReading(shot: Snapshot): Reading {
  const text = statusText(shot, NOW);
  const row = text.split('\n').find((line) => line.startsWith(`${ID} `));
  const state = row?.split(/\s+/)[1] as ModelStateName;
  const attention = new RegExp(`^needs attention: .*\\b${ID} \\((\\w+)\\)`, 'm').exec(text)?.[1] ?? null;
  return { phase: phaseOfState(state), busy: state === 'active', degraded: attention === 'degraded', needsAttention: attention !== null };
}

function world() {
  const clock = new FakeClock();
  const demand: ModelDemand = {
    modelId: ID,
    priority: 0,
    pinned: false,
    wanted: true,
    inFlight: 0,
    estimate: { weightsBytes: 4 * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8 },
    definitionHash: 'v1',
  };
  const desired = new FakeDesired({ models: [demand], budgetBytes: 24 * GiB, hostFreeBytes: 64 * GiB });
  const server = new RecordingServer((id, level) => footprintAt(level, desired.model(id).estimate).deviceBytes, () => clock.now());
  const quiet = { info() {}, warn() {}, error() {} };
  const controller = new Controller({ provider: desired, server, clock, log: quiet, classify: (error) => (error instanceof ScriptedLaunchError ? error.kind : 'crash') });
  const abort = new AbortController();
  const running = controller.run(abort.signal);
  const stop = async (): Promise<void> => {
    abort.abort();
    await running;
  };
  return { clock, desired, server, controller, stop };
}

/** The snapshot the daemon would build around the controller's status of the model. */
function snapshotOf(status: ModelStatus, inFlight: number): Snapshot {
  return snapshot({ models: [model(ID, { desired: true, inFlight, status: { ...status, since: NOW - 1_000 } })] });
}

describe('tray, dashboard and CLI agree on a model as it goes through its states', () => {
  it('say the same phase, busy, degraded and needs attention at every step', async () => {
    const w = world();
    const steps: { step: string; status: ModelStatus; readings: Record<'tray' | 'dashboard' | 'cli', Reading> }[] = [];
    const look = (step: string): void => {
      const status = w.controller.status(ID);
      if (status === undefined) throw new Error('no status');
      const shot = snapshotOf(status, w.desired.model(ID).inFlight);
      steps.push({ step, status, readings: { tray: trayReading(shot), dashboard: dashboardReading(shot), cli: cliReading(shot) } });
    };
    try {
      // Loading: its first launch at full is under way, and will run out of memory.
      w.server.failLaunch(ID, { kind: 'oom', reason: 'cudaMalloc failed: out of memory', beforeSpawn: false });
      w.server.hold('launch', ID);
      w.controller.trigger();
      await settle();
      look('loading');

      // Degraded: the ladder relaunches it at a smaller context, which serves.
      w.server.release('launch', ID);
      await settle();
      await w.controller.reconcileNow();
      look('degraded');

      // Busy: degraded and answering a request.
      w.desired.update(ID, { inFlight: 1 });
      await w.controller.reconcileNow();
      look('busy');

      // Failed: its server dies, and every launch after it crashes.
      w.desired.update(ID, { inFlight: 0 });
      w.server.failLaunch(ID, { kind: 'crash', reason: 'segmentation fault', beforeSpawn: false }, 10);
      w.server.die(ID, 'crash');
      await settle();
      await w.controller.reconcileNow();
      look('failed');

      // Quarantined: the backoffs run out.
      for (let i = 0; i < 20 && w.controller.status(ID)?.state !== 'quarantined'; i++) await w.clock.advance(30_000);
      look('quarantined');
    } finally {
      await w.stop();
    }

    // The controller went where the test meant it to.
    expect(steps.map(({ step, status }) => [step, status.state, status.phase, status.level, status.busy])).toEqual([
      ['loading', 'loading', 'loading', 'full', false],
      ['degraded', 'degraded', 'serving', 'smaller-context', false],
      ['busy', 'active', 'serving', 'smaller-context', true],
      ['failed', 'failed', 'failed', expect.any(String), false],
      ['quarantined', 'quarantined', 'quarantined', null, false],
    ]);
    const expected: Record<string, Reading> = {
      loading: { phase: 'loading', busy: false, degraded: false, needsAttention: false },
      degraded: { phase: 'serving', busy: false, degraded: true, needsAttention: true },
      busy: { phase: 'serving', busy: true, degraded: true, needsAttention: true },
      failed: { phase: 'failed', busy: false, degraded: false, needsAttention: true },
      quarantined: { phase: 'quarantined', busy: false, degraded: false, needsAttention: true },
    };
    // One assertion per step over all three surfaces, so a failure names every one that disagrees.
    for (const { step, readings } of steps) {
      expect({ step, ...readings }).toEqual({ step, tray: expected[step], dashboard: expected[step], cli: expected[step] });
    }
  });
});
