import { describe, expect, it } from 'vitest';
import { droppedMarker, linesAfter } from '../../../core/contracts/log-lines.js';

describe('linesAfter', () => {
  it('takes a first batch as it is, wherever it starts', () => {
    expect(linesAfter(null, 40, ['a', 'b'])).toEqual({ append: ['a', 'b'], next: 42 });
  });

  it('appends a batch that continues where the reader is', () => {
    expect(linesAfter(2, 2, ['c'])).toEqual({ append: ['c'], next: 3 });
  });

  it('skips the lines a reader already holds, even when their text repeats', () => {
    expect(linesAfter(3, 1, ['idle', 'idle', 'idle'])).toEqual({ append: ['idle'], next: 4 });
    expect(linesAfter(5, 1, ['idle', 'idle'])).toEqual({ append: [], next: 5 });
  });

  it('puts one counted marker where lines were left out', () => {
    expect(linesAfter(10, 13, ['x'])).toEqual({ append: ['… 3 lines dropped', 'x'], next: 14 });
    expect(droppedMarker(1)).toBe('… 1 line dropped');
  });
});
