// The order `vitest run` starts test files in: vitest's own (failed first, then the longest of
// the last run; without a record of a last run, the largest file first), with the files known to
// run for minutes moved to the front.
//
// Why: on a checkout's first run (a newcomer's, a fresh CI machine) vitest has no durations and
// orders by file size, and the short soak, a 2 KB file that runs for 2–4 minutes, came 171st of
// 193: it started when the other files were nearly done and ran alone at the end, with the
// second worker idle for most of its run. Started first, it runs beside everything else. The
// soak is its own project now (vitest.config.ts); the placement file, two minutes of timers and
// loads, is the longest of `npm test`. The list decides only the order, never what runs, so a
// stale entry costs nothing but that.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Files that run for minutes, longest first (paths from the repository root). */
export const SLOW_FILES: readonly string[] = ['test/integration/daemon-placement.test.ts', 'test/integration/daemon-machine-faults.test.ts'];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const at = SLOW_FILES.indexOf(relative(spec.project.config.root, spec.moduleId).split('\\').join('/'));
      return at === -1 ? SLOW_FILES.length : at;
    };
    // Array.prototype.sort is stable: every other file keeps vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
