import { expect, test } from 'vitest';
import { progressLine, pullsText } from '../../../core/cli/pull-command.js';
import type { PullView } from '../../../core/contracts/hub/pulls.js';

const view = (over: Partial<PullView>): PullView => ({
  id: 'hf.co/o/r:Q4_K_M', repo: 'o/r', state: 'downloading', files: [], receivedBytes: 0, totalBytes: 100 * 1024 * 1024,
  bytesPerSecond: 0, secondsLeft: null, message: '', startedAt: 0, ...over,
});

test('a downloading pull is a bar with its share, bytes, rate and time left', () => {
  expect(progressLine(view({ receivedBytes: 45 * 1024 * 1024, bytesPerSecond: 5 * 1024 * 1024, secondsLeft: 11 }), 10)).toBe(
    'hf.co/o/r:Q4_K_M  [####······]  45 %  45 MiB of 100 MiB  5 MiB/s  11 s left',
  );
  expect(progressLine(view({ secondsLeft: 3600 * 2 }), 4)).toBe('hf.co/o/r:Q4_K_M  [····]  0 %  0 B of 100 MiB  2.0 h left');
});

test('another state is its word and its message; no pulls is said with how to pull', () => {
  expect(progressLine(view({ state: 'failed', message: 'o/r has no Q9 quant' }))).toBe('hf.co/o/r:Q4_K_M  failed: o/r has no Q9 quant');
  expect(pullsText([])).toBe('No pulls since llmtray started. Pull a model: llmtray pull hf.co/OWNER/REPO:QUANT');
});
