// The suite's file order: on a first run (no durations known, vitest orders by file size) the
// files that run for minutes come first, longest first, instead of where their size puts them,
// and every other file keeps vitest's order.
import { describe, expect, it } from 'vitest';
import type { TestSpecification, Vitest } from 'vitest/node';
import { SLOW_FILES, SlowFirstSequencer } from '../support/slow-first-sequencer.js';

const ROOT = '/repo';
const project = { name: 'integration', config: { root: ROOT, isolate: true, sequence: { groupOrder: 0 } } };
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
  it('starts the slow files first on a first run, in their order, the rest largest first as vitest orders them', async () => {
    const [longest, next] = SLOW_FILES as [string, string];
    const sizes = { 'test/integration/supervisor.test.ts': 44_700, 'test/unit/a.test.ts': 3_000, [next]: 2_400, [longest]: 2_213, 'test/unit/b.test.ts': 900 };
    const order = await new SlowFirstSequencer(firstRun(sizes)).sort(Object.keys(sizes).reverse().map(spec));
    expect(order.map((s) => s.moduleId.slice(ROOT.length + 1))).toEqual([
      longest,
      next,
      'test/integration/supervisor.test.ts',
      'test/unit/a.test.ts',
      'test/unit/b.test.ts',
    ]);
  });
});
