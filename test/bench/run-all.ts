// `npm run bench`: every benchmark in turn. Benchmarks print; they never fail a build, because
// timings on a shared 2-core machine are evidence to read, not a gate.
import { runScheduleBench } from './schedule-bench.js';

const benches: (() => Promise<void>)[] = [runScheduleBench];

for (const bench of benches) {
  await bench();
  console.log();
}
