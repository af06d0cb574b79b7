// The hot-loop assertions give the verdict of the matcher each stands for, on the cases where a
// plain comparison and vitest's matcher could part: NaN, -0, undefined properties, class
// instances, sparse arrays, and a failure's message naming what was compared.
import { describe, expect, it } from 'vitest';
import { above, atLeast, atMost, below, equal, same } from '../support/hot-expect.js';

class Point {
  constructor(readonly x: number) {}
}

const verdict = (check: () => void): boolean => {
  try {
    check();
    return true;
  } catch {
    return false;
  }
};

describe('hot-expect', () => {
  it('same and equal pass and fail where toBe and toEqual do', () => {
    const pairs: [unknown, unknown][] = [
      [1, 1], [1, 2], [NaN, NaN], [0, -0], ['a', 'a'], [undefined, null], [true, false],
      [{ a: 1, b: undefined }, { a: 1 }], [{ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] }], [{ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] }],
      [new Point(1), { x: 1 }], [[1, , 3], [1, undefined, 3]], [[], []], [['m1', 'm2'], ['m2', 'm1']], [new Set([1]), new Set([1])], [new Set([1]), new Set([2])],
    ];
    for (const [a, b] of pairs) {
      expect(verdict(() => same(a, b)), `same(${String(a)}, ${String(b)})`).toBe(verdict(() => expect(a).toBe(b)));
      expect(verdict(() => equal(a, b)), `equal(${JSON.stringify(a)}, ${JSON.stringify(b)})`).toBe(verdict(() => expect(a).toEqual(b)));
    }
  });

  it('the bounds pass and fail where the matchers do, NaN failing all of them', () => {
    const pairs: [number, number][] = [[1, 2], [2, 2], [3, 2], [NaN, 2], [2, NaN], [-0, 0], [Infinity, 1]];
    for (const [a, b] of pairs) {
      expect(verdict(() => atMost(a, b))).toBe(verdict(() => expect(a).toBeLessThanOrEqual(b)));
      expect(verdict(() => below(a, b))).toBe(verdict(() => expect(a).toBeLessThan(b)));
      expect(verdict(() => above(a, b))).toBe(verdict(() => expect(a).toBeGreaterThan(b)));
      expect(verdict(() => atLeast(a, b))).toBe(verdict(() => expect(a).toBeGreaterThanOrEqual(b)));
    }
  });

  it("fails with vitest's own message and the label given", () => {
    expect(() => equal({ launch: ['m1'] }, { launch: [] }, 'the second plan')).toThrow(/the second plan/);
    expect(() => same(3, 4)).toThrow(/expected 3 to be 4/);
  });
});
