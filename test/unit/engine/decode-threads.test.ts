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
