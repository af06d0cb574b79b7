// `npm run soak [-- --short]`: builds core/ and this folder, runs the soak against the real
// daemon, prints the summary table, and exits 1 when an invariant broke (2 on bad arguments).
import { parseSoakArgs, SOAK_USAGE, SoakUsageError, type SoakOptions } from './profiles.js';
import { runSoak } from './run-soak.js';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(SOAK_USAGE);
  process.exit(0);
}
let options: SoakOptions;
try {
  options = parseSoakArgs(argv);
} catch (error) {
  if (!(error instanceof SoakUsageError)) throw error;
  console.error(error.message);
  process.exit(2);
}

const started = Date.now();
const stamp = () => `[${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s]`;
console.log(`${stamp()} soak, ${options.profile.name} profile: ${options.profile.clients} clients, ${options.profile.targetSwaps} swaps`);
const result = await runSoak(options, (line) => console.log(`${stamp()} ${line}`));
console.log();
console.log(result.summary);
process.exit(result.pass ? 0 : 1);
