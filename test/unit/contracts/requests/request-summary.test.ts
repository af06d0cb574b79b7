import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentile, summarizeRequests } from '../../../../core/contracts/requests/request-summary.js';
import { requestRecord } from '../../../support/request-records.js';

describe('percentile', () => {
  it('takes the nearest rank: a value that was seen, never one between', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 … 1, unsorted on purpose
    expect(percentile(hundred, 50)).toBe(50);
    expect(percentile(hundred, 95)).toBe(95);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([10, 20], 50)).toBe(10);
    expect(percentile([10, 20], 95)).toBe(20);
    expect(percentile([], 50)).toBeNull();
  });

  it('is a member of the values, at least the minimum and at most the maximum, and grows with p', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 200 }), (values) => {
        const p50 = percentile(values, 50) as number;
        const p95 = percentile(values, 95) as number;
        expect(values).toContain(p50);
        expect(values).toContain(p95);
        expect(p50).toBeLessThanOrEqual(p95);
        expect(p50).toBeGreaterThanOrEqual(Math.min(...values));
        expect(p95).toBeLessThanOrEqual(Math.max(...values));
        // At least half the values are at or below the median.
        expect(values.filter((v) => v <= p50).length * 2).toBeGreaterThanOrEqual(values.length);
      }),
    );
  });
});

describe('summarizeRequests', () => {
  it('summarizes per answering model: counts, failures, p50/p95 first token over those that had one, median speed', () => {
    const records = [
      ...[100, 200, 300, 400].map((firstTokenMs, i) => requestRecord({ servedBy: 'chat', model: 'chat', firstTokenMs, tokensPerSecond: 10 * (i + 1) })),
      requestRecord({ model: 'chat', servedBy: null, status: 429, firstTokenMs: null, tokensPerSecond: null }),
      // A stream the engine ended with an error event: its status line said 200.
      requestRecord({ model: 'chat', servedBy: 'chat', firstTokenMs: null, tokensPerSecond: null, error: 'generation failed: decode' }),
      // A fallback's answer counts for the model that answered it.
      requestRecord({ model: 'big', servedBy: 'small', firstTokenMs: 900, tokensPerSecond: 5 }),
      requestRecord({ model: null, servedBy: null, status: 400, firstTokenMs: null, tokensPerSecond: null }),
    ];
    expect(summarizeRequests(records)).toEqual([
      { model: 'chat', requests: 6, failed: 2, firstTokenP50Ms: 200, firstTokenP95Ms: 400, tokensPerSecondP50: 20 },
      { model: '(none)', requests: 1, failed: 1, firstTokenP50Ms: null, firstTokenP95Ms: null, tokensPerSecondP50: null },
      { model: 'small', requests: 1, failed: 0, firstTokenP50Ms: 900, firstTokenP95Ms: 900, tokensPerSecondP50: 5 },
    ]);
  });

  it('is empty for no records', () => {
    expect(summarizeRequests([])).toEqual([]);
  });
});
