import { describe, expect, it } from 'vitest';
import { createQuitCoordinator } from '../../../electron/quit-coordinator.js';
import { FakeClock, settle } from '../../support/fake-clock.js';

function harness(stopBehaviour: 'resolve-later' | 'reject' | 'never') {
  const clock = new FakeClock();
  const exits: number[] = [];
  const logs: string[] = [];
  let stops = 0;
  let finishStop: () => void = () => {};
  const coordinator = createQuitCoordinator({
    stop: () => {
      stops++;
      if (stopBehaviour === 'reject') return Promise.reject(new Error('engine 4242 ignored SIGKILL'));
      return new Promise<void>((resolve) => {
        if (stopBehaviour === 'resolve-later') finishStop = resolve;
      });
    },
    exit: (code) => exits.push(code),
    clock,
    graceMs: 20_000,
    log: (message) => logs.push(message),
  });
  const quitEvent = () => {
    const event = { prevented: false, preventDefault() { event.prevented = true; } };
    coordinator.onBeforeQuit(event);
    return event;
  };
  return { clock, exits, logs, coordinator, quitEvent, stops: () => stops, finishStop: () => finishStop() };
}

describe('createQuitCoordinator', () => {
  it('holds the quit until the daemon has stopped, then exits 0', async () => {
    const h = harness('resolve-later');
    expect(h.coordinator.quitting).toBe(false);
    expect(h.quitEvent().prevented).toBe(true);
    expect(h.coordinator.quitting).toBe(true);
    await settle();
    expect(h.exits).toEqual([]);
    h.finishStop();
    await settle();
    expect(h.exits).toEqual([0]);
    expect(h.clock.pendingDelays()).toEqual([]);
  });

  it('exits 1 after the stop when the quit is a failure (the app could not run)', async () => {
    const h = harness('resolve-later');
    h.coordinator.markFailed();
    expect(h.quitEvent().prevented).toBe(true);
    h.finishStop();
    await settle();
    expect(h.exits).toEqual([1]);
  });

  it('holds later quit requests too, without stopping twice', async () => {
    const h = harness('resolve-later');
    h.quitEvent();
    expect(h.quitEvent().prevented).toBe(true);
    expect(h.stops()).toBe(1);
    h.finishStop();
    await settle();
    expect(h.exits).toEqual([0]);
  });

  it('exits 1 and says why when stopping fails', async () => {
    const h = harness('reject');
    h.quitEvent();
    await settle();
    expect(h.exits).toEqual([1]);
    expect(h.logs).toEqual(['llmtray: stopping the model servers failed: engine 4242 ignored SIGKILL']);
  });

  it('exits anyway after the grace period when stopping never finishes', async () => {
    const h = harness('never');
    h.quitEvent();
    await h.clock.advance(19_999);
    expect(h.exits).toEqual([]);
    await h.clock.advance(1);
    expect(h.exits).toEqual([1]);
    expect(h.logs).toEqual(['llmtray: the model servers did not stop within 20 s; exiting anyway']);
  });
});
