import { describe, expect, it } from 'vitest';
import { sizeClassOf, ThreadChooser } from '../../../core/engine/embedded/runtime/decode-threads.js';

/** Runs `batches` small batches through `chooser`, each costing what `costOf(threads)` says; returns the thread counts used. */
function drive(chooser: ThreadChooser, batches: number, costOf: (threads: number) => number): number[] {
  const used: number[] = [];
  for (let i = 0; i < batches; i++) {
    const threads = chooser.next();
    used.push(threads);
    chooser.record(threads, costOf(threads));
  }
  return used;
}

describe('ThreadChooser (a size class of batches: -t threads or one, whichever is faster)', () => {
  it('leaves the spinning -t threads for one when they are slower (a contended machine)', () => {
    const chooser = new ThreadChooser(2);
    const used = drive(chooser, 2000, (t) => (t === 2 ? 500 : 5));
    // After the first tries, one thread almost always; the losing -t is re-tried ever more rarely.
    const late = used.slice(100);
    expect(late.filter((t) => t === 1).length).toBeGreaterThan(late.length * 0.99);
    expect(used.filter((t) => t === 2).length).toBeLessThan(12);
  });

  it('keeps -t threads when they are faster (a quiet machine, a big model)', () => {
    const chooser = new ThreadChooser(8);
    const used = drive(chooser, 2000, (t) => (t === 8 ? 20 : 90));
    expect(used.slice(100).filter((t) => t === 8).length).toBeGreaterThan(1900 * 0.99);
  });

  it('switches back when the load goes away', () => {
    const chooser = new ThreadChooser(2);
    drive(chooser, 500, (t) => (t === 2 ? 500 : 5));
    // The machine is now quiet: -t is faster again; found within one retry interval (1024 at most).
    const used = drive(chooser, 3000, (t) => (t === 2 ? 3 : 5));
    const late = used.slice(1500);
    expect(late.filter((t) => t === 2).length).toBeGreaterThan(late.length * 0.99);
  });

  it('keeps a prompt batch on -t without trying one thread while nothing says the machine is contended', () => {
    // A quiet machine: -t twice as fast. A try of one thread would cost a whole batch at half speed.
    const chooser = new ThreadChooser(2, () => false);
    expect(drive(chooser, 200, (t) => (t === 2 ? 10 : 19)).every((t) => t === 2)).toBe(true);
  });

  it('tries one thread for a prompt batch once the generation steps have gone to one thread', () => {
    let stepsOnOne = false;
    const chooser = new ThreadChooser(2, () => stepsOnOne);
    expect(drive(chooser, 20, (t) => (t === 2 ? 10 : 19)).every((t) => t === 2)).toBe(true);
    stepsOnOne = true;
    // Contended now: -t per token 30, one thread 20. The next batch tries one at once; it wins
    // once -t's running mean has caught up with the load, and keeps it.
    const used = drive(chooser, 60, (t) => (t === 2 ? 30 : 20));
    expect(used[0]).toBe(1);
    // -t re-tried now and then (how a load going away is found), one thread otherwise.
    expect(used.slice(-30).filter((t) => t === 1).length).toBeGreaterThanOrEqual(27);
  });

  it('tries one thread for a prompt batch when its own -t batches slow down by more than 30 %', () => {
    const chooser = new ThreadChooser(2, () => false);
    drive(chooser, 20, (t) => (t === 2 ? 10 : 19));
    // The first slow batch on -t is the sign; the one after it tries one thread, which wins
    // once -t's running mean has caught up, and keeps it.
    const used = drive(chooser, 60, (t) => (t === 2 ? 14 : 12));
    expect(used.slice(0, 2)).toEqual([2, 1]);
    expect(used.slice(-30).filter((t) => t === 1).length).toBeGreaterThanOrEqual(27);
  });

  it('reports whether it runs on one thread, for the prompt batches to ask', () => {
    const chooser = new ThreadChooser(2);
    expect(chooser.onOneThread).toBe(false);
    drive(chooser, 10, (t) => (t === 2 ? 500 : 5));
    expect(chooser.onOneThread).toBe(true);
    expect(new ThreadChooser(1).onOneThread).toBe(false);
  });

  it('never leaves one thread when -t is one', () => {
    const chooser = new ThreadChooser(1);
    expect(drive(chooser, 50, () => 1).every((t) => t === 1)).toBe(true);
  });
});

describe('sizeClassOf (which batches share a measurement)', () => {
  it('tells generation steps apart by exact size and groups prompt batches by powers of two', () => {
    expect([1, 4, 8, 16].map(sizeClassOf)).toEqual([1, 4, 8, 16]);
    expect([17, 32, 300, 476, 512].map(sizeClassOf)).toEqual([32, 32, 512, 512, 512]);
  });
});
