// The suite's file order: on a first run (no durations known, vitest orders by file size) the
// short soak, a small file that runs for minutes, comes first instead of near the end, and every
// other file keeps vitest's order.
import { describe, expect, it } from 'vitest';
import type { TestSpecification, Vitest } from 'vitest/node';
import { SlowFirstSequencer } from '../support/slow-first-sequencer.js';

const ROOT = '/repo';
const project = { name: 'unit+integration', config: { root: ROOT, isolate: true, sequence: { groupOrder: 0 } } };
const spec = (path: string) => ({ project, moduleId: `${ROOT}/${path}` }) as unknown as TestSpecification;

/** A vitest with no results from a last run, and these file sizes. */
function firstRun(sizes: Record<string, number>): Vitest {
  return {
    config: { root: ROOT },
    cache: {
      getFileTestResults: () => undefined,
      getFileStats: (key: string) => {
        const size = sizes[key.slice(key.indexOf(':') + 1)];
        return size === undefined ? undefined : { size };
      },
    },
  } as unknown as Vitest;
}

describe('SlowFirstSequencer', () => {
  it('starts the short soak first on a first run, the rest largest first as vitest orders them', async () => {
    const sizes = { 'test/integration/supervisor.test.ts': 44_700, 'test/unit/a.test.ts': 3_000, 'test/integration/soak.test.ts': 2_213, 'test/unit/b.test.ts': 900 };
    const order = await new SlowFirstSequencer(firstRun(sizes)).sort(Object.keys(sizes).reverse().map(spec));
    expect(order.map((s) => s.moduleId.slice(ROOT.length + 1))).toEqual([
      'test/integration/soak.test.ts',
      'test/integration/supervisor.test.ts',
      'test/unit/a.test.ts',
      'test/unit/b.test.ts',
    ]);
  });
});
