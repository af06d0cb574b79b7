import { EventEmitter } from 'node:events';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { judgeStopSignal, SAME_REQUEST_WINDOW_MS, stopOnSignals, type StopSignal } from '../../../core/cli/stop-on-signals.js';
import { FakeClock, settle } from '../../support/fake-clock.js';

describe('judgeStopSignal', () => {
  const first = 10_000;
  it.each([
    ['the first signal', null, first, 'graceful'],
    ['a copy at the same instant', first, first, 'same-request'],
    ['a copy forwarded a few ms later', first, first + 3, 'same-request'],
    ['a copy just inside the window', first, first + SAME_REQUEST_WINDOW_MS - 1, 'same-request'],
    ['a repeat at the end of the window', first, first + SAME_REQUEST_WINDOW_MS, 'force'],
    ['a person\'s second press a second later', first, first + 1000, 'force'],
  ] as const)('%s', (_name, firstAt, now, expected) => {
    expect(judgeStopSignal(firstAt, now)).toBe(expected);
  });

  it('forces exactly when the repeat is at least the window after the first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 5000 }), (firstAt, gap, windowMs) => {
        expect(judgeStopSignal(firstAt, firstAt + gap, windowMs)).toBe(gap >= windowMs ? 'force' : 'same-request');
      }),
    );
  });
});

describe('stopOnSignals', () => {
  function setUp(stopOutcome: () => Promise<void> = () => new Promise(() => undefined)) {
    const clock = new FakeClock();
    const signals = new EventEmitter();
    const said: string[] = [];
    const exits: number[] = [];
    let stops = 0;
    const stopFor = stopOnSignals({
      stop: () => {
        stops++;
        return stopOutcome();
      },
      signals,
      now: () => clock.now(),
      say: (line) => said.push(line),
      exit: (code) => exits.push(code),
    });
    const send = (signal: StopSignal) => signals.emit(signal, signal);
    return { clock, send, stopFor, said, exits, stops: () => stops };
  }

  it('stops gracefully on the first signal and takes its copies as the same press', async () => {
    const run = setUp();
    run.send('SIGINT');
    await run.clock.advance(2);
    run.send('SIGINT');
    await run.clock.advance(40);
    run.send('SIGINT');
    expect(run.stops()).toBe(1);
    expect(run.said).toEqual(['SIGINT: stopping every model server (Ctrl-C again to force)']);
    expect(run.exits).toEqual([]);
  });

  it('forces with 130 on a press after the window, without a second stop', async () => {
    const run = setUp();
    run.send('SIGINT');
    await run.clock.advance(1000);
    run.send('SIGINT');
    expect(run.stops()).toBe(1);
    expect(run.said.at(-1)).toBe('SIGINT again: exiting now; model servers are killed with the process');
    expect(run.exits).toEqual([130]);
  });

  it('takes any stop signal as a copy or a repeat of the first, whichever it is', async () => {
    const run = setUp();
    run.send('SIGTERM');
    run.send('SIGHUP');
    expect(run.said).toEqual(['SIGTERM: stopping every model server (SIGTERM again to force)']);
    await run.clock.advance(SAME_REQUEST_WINDOW_MS);
    run.send('SIGINT');
    expect(run.exits).toEqual([130]);
  });

  it('exits 0 once the stop is done', async () => {
    const run = setUp(() => Promise.resolve());
    run.send('SIGHUP');
    await settle();
    expect(run.exits).toEqual([0]);
  });

  it('exits 1 and says why when the stop fails', async () => {
    const run = setUp(() => Promise.reject(new Error('engines.json is read-only')));
    run.send('SIGTERM');
    await settle();
    expect(run.said.at(-1)).toBe('stopping failed: engines.json is read-only');
    expect(run.exits).toEqual([1]);
  });

  it('stops gracefully once when asked for another reason, saying it, and exits 0', async () => {
    const run = setUp(() => Promise.resolve());
    run.stopFor('the process that started llmtray (pid 41) has ended');
    run.stopFor('the process that started llmtray (pid 41) has ended');
    await settle();
    expect(run.stops()).toBe(1);
    expect(run.said).toEqual(['the process that started llmtray (pid 41) has ended: stopping every model server']);
    expect(run.exits).toEqual([0]);
  });

  it('after a stop asked for another reason, a signal a second later forces and a signal stop is not started twice', async () => {
    const run = setUp();
    run.stopFor('the parent has ended');
    await run.clock.advance(1000);
    run.send('SIGTERM');
    expect(run.stops()).toBe(1);
    expect(run.exits).toEqual([130]);
  });

  it('asked for another reason while a signal stop runs, does nothing', () => {
    const run = setUp();
    run.send('SIGINT');
    run.stopFor('the parent has ended');
    expect(run.stops()).toBe(1);
    expect(run.said).toEqual(['SIGINT: stopping every model server (Ctrl-C again to force)']);
  });
});
