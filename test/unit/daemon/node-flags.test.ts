// The daemon's V8 flags: the `llmtray` bin's shebang carries the same ones (it cannot import
// them), and this Node honours them: the young generation stays within its cap however fast a
// process allocates.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DAEMON_NODE_FLAGS } from '../../../core/daemon/node-flags.js';

describe('the daemon’s Node flags', () => {
  it('are the flags of the llmtray bin’s shebang, which runs the daemon for `llmtray serve`', () => {
    const shebang = readFileSync(new URL('../../../core/cli.ts', import.meta.url), 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${DAEMON_NODE_FLAGS.join(' ')}`);
  });

  it('keep the young generation within 8 MB in a process that allocates fast, where Node alone lets it grow past that', () => {
    // Allocates ~400 MB of short-lived objects while keeping some alive, then reports the new space.
    const allocate = `
      const v8 = require('node:v8');
      let keep = [];
      for (let i = 0; i < 4e6; i++) { const o = { i, s: 'x' + i, a: [i, i] }; if (i % 100 === 0) keep.push(o); if (keep.length > 2e4) keep = []; }
      const space = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
      process.stdout.write(String(space.space_size));`;
    const newSpace = (flags: readonly string[]): number => {
      const run = spawnSync(process.execPath, [...flags, '-e', allocate], { encoding: 'utf8' });
      expect(run.status, run.stderr).toBe(0);
      return Number(run.stdout);
    };
    const MiB = 1024 * 1024;
    expect(newSpace(DAEMON_NODE_FLAGS)).toBeLessThanOrEqual(8 * MiB);
    expect(newSpace([])).toBeGreaterThan(8 * MiB);
  }, 60_000);
});

describe('every launch of the daemon passes them', () => {
  it('npm run serve runs the CLI under Node with them', () => {
    const scripts = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')).scripts as Record<string, string>;
    // scripts/build-and-run.mjs runs the CLI in its own process, so the flags go to its Node.
    expect(scripts.serve).toContain(`node ${DAEMON_NODE_FLAGS.join(' ')} scripts/build-and-run.mjs serve`);
  });
});
