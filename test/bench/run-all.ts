// `npm run bench`: every benchmark in turn. Benchmarks print; they never fail a build, because
// timings on a shared 2-core machine are evidence to read, not a gate.
// `node dist/test/bench/run-all.js router memory` runs only the benchmarks named.
import { availableParallelism, cpus, loadavg } from 'node:os';
import { runActivationBench } from './activation-bench.js';
import { runColdStartBench } from './cold-start-bench.js';
import { runGrammarBench } from './grammar-bench.js';
import { runEngineRaceBench } from './engine-race-bench.js';
import { removeBenchFiles } from './bench-models.js';
import { runIdleBench } from './idle-bench.js';
import { runMemoryBench } from './memory-bench.js';
import { runQueueingBench } from './queueing-bench.js';
import { runReadinessBench } from './readiness-bench.js';
import { runReturningConversationBench } from './returning-conversation-bench.js';
import { runRouterBench } from './router-bench.js';
import { runSwapBench } from './swap-bench.js';
import { runPlaceBench, runScheduleBench } from './schedule-bench.js';

const benches: Record<string, () => Promise<void>> = {
  schedule: runScheduleBench,
  place: runPlaceBench,
  router: runRouterBench,
  readiness: runReadinessBench,
  activation: runActivationBench,
  memory: runMemoryBench,
  idle: runIdleBench,
  'cold-start': runColdStartBench,
  swap: runSwapBench,
  queueing: () => runQueueingBench(),
  grammar: runGrammarBench,
  'engine-race': runEngineRaceBench,
  'returning-conversation': runReturningConversationBench,
};

const chosen = process.argv.slice(2);
const unknown = chosen.filter((name) => !(name in benches));
if (unknown.length > 0) {
  console.error(`unknown benchmark(s): ${unknown.join(', ')}; the benchmarks are: ${Object.keys(benches).join(', ')}`);
  process.exit(2);
}

// Every figure below depends on what else the machine was doing: say so next to them.
const load = (): string => loadavg().map((n) => n.toFixed(2)).join(' ');
console.log(`node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model.trim() ?? 'unknown CPU'}), load average ${load()}`);
console.log();
try {
  for (const [name, bench] of Object.entries(benches)) {
    if (chosen.length > 0 && !chosen.includes(name)) continue;
    await bench();
    console.log(`(load average after ${name}: ${load()})`);
    console.log();
  }
} finally {
  await removeBenchFiles();
}
