// The parent watch is what ends the launcher and the headless daemon when whatever started them
// is gone (npm's shell killed by a forwarded SIGTERM, a SIGKILL): these pin down when it fires.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PARENT_PID_ENV, takeParentPid, watchParent } from '../../../core/common/parent-watch.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('watchParent', () => {
  it('fires once, at the first poll after the parent pid changes, and never while it stays', () => {
    vi.useFakeTimers();
    let parent = 4321;
    const gone = vi.fn();
    watchParent({ parentPid: 4321, currentParent: () => parent, onGone: gone, pollMs: 100 });
    vi.advanceTimersByTime(1000);
    expect(gone).not.toHaveBeenCalled();
    parent = 1; // reparented to init: the parent died
    vi.advanceTimersByTime(100);
    expect(gone).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1000);
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('fires at once when the parent was already gone before the watch began', () => {
    const gone = vi.fn();
    watchParent({ parentPid: 4321, currentParent: () => 1, onGone: gone });
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('stops watching when told to', () => {
    vi.useFakeTimers();
    let parent = 4321;
    const gone = vi.fn();
    const stop = watchParent({ parentPid: 4321, currentParent: () => parent, onGone: gone, pollMs: 100 });
    stop();
    parent = 1;
    vi.advanceTimersByTime(1000);
    expect(gone).not.toHaveBeenCalled();
  });
});

describe('takeParentPid', () => {
  it('reads the pid and removes the variable, so the processes started next do not inherit it', () => {
    const env: NodeJS.ProcessEnv = { [PARENT_PID_ENV]: '987', OTHER: 'kept' };
    expect(takeParentPid(env)).toBe(987);
    expect(env).toEqual({ OTHER: 'kept' });
  });

  it('is null when unset or empty', () => {
    expect(takeParentPid({})).toBeNull();
    expect(takeParentPid({ [PARENT_PID_ENV]: '' })).toBeNull();
  });

  it.each(['abc', '0', '-4', '1.5'])('refuses %s by naming the variable', (value) => {
    expect(() => takeParentPid({ [PARENT_PID_ENV]: value })).toThrow(`${PARENT_PID_ENV} must be a process id (a positive integer), got '${value}'`);
  });
});
