import { defineConfig } from 'vitest/config';

// One runner for every suite. Integration tests spawn real engine processes from dist/,
// which `npm test` builds first; they get generous timeouts because a 2-core CI machine
// loads models slowly, while nothing asserts a duration (speed lives in `npm run bench`).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'renderer/**/*.test.tsx'],
    exclude: ['node_modules', 'dist', 'test/e2e/**'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
