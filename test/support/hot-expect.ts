// Assertions for a property's hot loop: each checks its condition in plain JavaScript and asks
// vitest's `expect` only when it fails, so a failure reads exactly as the `expect` it stands for
// (and fast-check shrinks on it), while a pass costs a comparison. Why: the property tests run
// 10,000 to 100,000 cases with dozens of checks each, and building an `expect` for every check
// was about half of their CPU time (place.property: 100,000 cases).
//
// Each is the matcher's own verdict: toBe is Object.is; toEqual is implied by a deep strict
// equality (what is strictly equal is equal), and asked of vitest whenever that does not hold.
import { isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';

/** expect(actual, what).toBe(expected). */
export function same(actual: unknown, expected: unknown, what?: string): void {
  if (!Object.is(actual, expected)) expect(actual, what).toBe(expected);
}

/** expect(actual, what).toEqual(expected). */
export function equal(actual: unknown, expected: unknown, what?: string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, what).toEqual(expected);
}

/** expect(actual, what).toBeLessThanOrEqual(bound). */
export function atMost(actual: number, bound: number, what?: string): void {
  if (!(actual <= bound)) expect(actual, what).toBeLessThanOrEqual(bound);
}

/** expect(actual, what).toBeLessThan(bound). */
export function below(actual: number, bound: number, what?: string): void {
  if (!(actual < bound)) expect(actual, what).toBeLessThan(bound);
}

/** expect(actual, what).toBeGreaterThanOrEqual(bound). */
export function atLeast(actual: number, bound: number, what?: string): void {
  if (!(actual >= bound)) expect(actual, what).toBeGreaterThanOrEqual(bound);
}

/** expect(actual, what).toBeGreaterThan(bound). */
export function above(actual: number, bound: number, what?: string): void {
  if (!(actual > bound)) expect(actual, what).toBeGreaterThan(bound);
}
