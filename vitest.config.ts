import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js';

// One runner for every suite. Integration tests spawn real engine processes from dist/,
// which `npm test` builds first; they get generous timeouts because a 2-core CI machine
// loads models slowly, while nothing asserts a duration (speed lives in `npm run bench`).
// The browser tests (test/e2e, a real daemon and Chromium per file) are their own project
// for their longer bounds (a file's daemon, browser and model loads share one hook) and for
// their global setup, which picks the Chromium once per run (test/e2e/support/chromium.ts).
//
// Every test process runs with --unhandled-rejections=strict: a promise that rejects with no
// handler anywhere in the code under test is raised as an exception in the test that caused
// it, so a new `void somethingAsync()` that can fail fails a test instead of passing silently
// (or, in the daemon, ending the process). test/support/daemon-process.ts starts the real
// daemon with the same flag.
//
// The files that run for minutes start first (test/support/slow-first-sequencer.ts), so that on
// a first run, when vitest knows no durations, the longest does not run alone at the end.
//
// Three workers on the 2-core machines this runs on: most integration files wait on processes
// and timers (engines loading, budget samples, backoffs), so two workers kept the CPU ~60 % busy;
// measured on one machine, 529 s with two against 413 s with three, the suite otherwise the same.
// The short soak is its own project: `npm test` runs the others (unit, integration, e2e), and
// `npm run test:all` runs it after them, as `.ci/run` does. Why apart: it is a minute and a
// half of one worker and a sixth of the suite's CPU time on its own, and `npm test` is the
// check a person runs between edits, on 2 cores, in under 5 minutes.
const SHORT_SOAK = 'test/integration/soak.test.ts';
const RUN_CACHE_SETUP = 'test/support/run-cache-dir.ts';
const UNIT_FILES = ['test/unit/**/*.test.ts', 'test/renderer/**/*.test.tsx'];
/**
 * Unit files that load node-llama-cpp's native binding in the test process: it is one per
 * process, with one log callback, so a file that shares a process with another gets none of
 * llama.cpp's lines (seen: demo-models' "not within the file bounds" empty after gguf-writer's
 * getLlama in the same worker). They run isolated, with the integration files.
 */
const OWN_PROCESS_UNIT_FILES = ['test/unit/demo/demo-models.test.ts', 'test/unit/demo/gguf-writer.test.ts'];

export default defineConfig({
  test: {
    sequence: { sequencer: SlowFirstSequencer },
    pool: 'forks',
    maxWorkers: 3,
    execArgv: ['--unhandled-rejections=strict'],
    // XDG_CACHE_HOME is a folder of the run's own (test/support/run-cache-dir.ts).
    globalSetup: [RUN_CACHE_SETUP],
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT_FILES,
          exclude: ['node_modules', 'dist', ...OWN_PROCESS_UNIT_FILES],
          // One worker process serves many files: each file in a fresh process cost a third of
          // these files' CPU time in Node starts and module imports (102 s → 68 s, measured).
          // They keep no state in modules that outlives a file, and the children some start end
          // with their test.
          isolate: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts', 'test/surfaces/**/*.test.ts', ...OWN_PROCESS_UNIT_FILES],
          exclude: ['node_modules', 'dist', SHORT_SOAK],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: { name: 'soak', include: [SHORT_SOAK] },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/e2e/**/*.e2e.test.ts'],
          globalSetup: [RUN_CACHE_SETUP, 'test/e2e/support/global-setup.ts'],
          testTimeout: 90_000,
          hookTimeout: 90_000,
        },
      },
    ],
  },
});
