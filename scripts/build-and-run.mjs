// `npm start` (`build-and-run.mjs launch --demo`) and `npm run serve` (`build-and-run.mjs
// serve`): refuse when an llmtray already runs on the data dir, build dist/, then run the
// launcher (dist/electron/launch.js) or `llmtray serve` (dist/core/cli.js) in this process.
//
// Why a script and not `npm run build && node dist/…` in package.json:
// - The refusal must come before the build: a rebuild under a running daemon rewrites the code it
//   loads lazily, and the second start would then only fail on the data dir's lock. To know the
//   data dir it needs `npm start -- --data-dir DIR`, and npm appends those arguments to the end
//   of the script line only.
// - The launcher or the daemon runs in this very process, not in a child, and package.json runs
//   it with `exec`, so npm's child is the process that stops everything and npm's forwarded
//   SIGINT and SIGTERM reach it: under a shell that stays, they did not (dash survives a SIGINT
//   while its command runs, and dies of a SIGTERM without passing it on, orphaning the rest).
//   What no signal reaches, a SIGKILL of npm, the launcher and the daemon notice by their parent
//   ending (core/common/parent-watch.ts, told our parent's pid through LLMTRAY_PARENT_PID).
//   `exec` is a POSIX shell's: npm's scripts run under sh on Linux and macOS.
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dataDirFor, dataDirTakenSentence, runningDaemon } from './running-daemon.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ENTRIES = { launch: join('dist', 'electron', 'launch.js'), serve: join('dist', 'core', 'cli.js') };
const STOP_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const parentPid = process.ppid;

const [mode, ...args] = process.argv.slice(2);
if (mode !== 'launch' && mode !== 'serve') {
  console.error(`usage: node scripts/build-and-run.mjs launch|serve [ARGS…]; got '${mode ?? ''}'`);
  process.exit(2);
}

const dataDir = dataDirFor({ mode, args, env: process.env });
const holder = runningDaemon(dataDir);
if (holder !== null) {
  console.error(dataDirTakenSentence(dataDir, holder));
  process.exit(1);
}

const built = await build();
if (built !== 0) process.exit(built);
if (process.ppid !== parentPid) {
  console.error(`llmtray: the process that started scripts/build-and-run.mjs (pid ${parentPid}) ended during the build; not starting`);
  process.exit(1);
}

// The launcher and the daemon end with the pid we were started by (it may end while they load).
process.env.LLMTRAY_PARENT_PID = String(parentPid);
const entry = join(root, ENTRIES[mode]);
// Both entries read their arguments from process.argv, as when run as `node ENTRY ARGS`.
process.argv = [process.argv[0], entry, ...(mode === 'serve' ? ['serve'] : []), ...args];
await import(pathToFileURL(entry).href);

/**
 * `npm run build`, with our stdio. A stop signal, or our parent's end, stops the build and
 * this script: nothing is started after a stop was asked for. Resolves to the exit code to
 * leave with (0: built).
 *
 * The build runs in a process group of its own, ended whole: a SIGTERM to the build's npm
 * alone reaches its shell, which dies of it and leaves the compiler it runs going on.
 * @returns {Promise<number>}
 */
function build() {
  // npm sets npm_execpath for its scripts: the same npm runs the build, with this Node.
  const npmCli = process.env.npm_execpath;
  const [program, buildArgs, shell] =
    npmCli !== undefined && npmCli.endsWith('.js') ? [process.execPath, [npmCli, 'run', 'build'], false] : ['npm', ['run', 'build'], process.platform === 'win32'];
  const ownGroup = process.platform !== 'win32';
  const child = spawn(program, buildArgs, { cwd: root, stdio: 'inherit', shell, detached: ownGroup });
  let stoppedBy = null;
  const stop = (signal) => {
    stoppedBy ??= signal;
    try {
      if (ownGroup && child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      else child.kill('SIGTERM');
    } catch {
      // The build has ended already.
    }
  };
  for (const signal of STOP_SIGNALS) process.on(signal, stop);
  const watch = setInterval(() => {
    if (process.ppid !== parentPid) stop('the end of its parent');
  }, 250);
  return new Promise((done) => {
    const finish = (code) => {
      clearInterval(watch);
      for (const signal of STOP_SIGNALS) process.off(signal, stop);
      done(code);
    };
    child.on('error', (error) => {
      console.error(`llmtray: could not run the build (${program} run build): ${error.message}`);
      finish(1);
    });
    child.on('exit', (code, signal) => {
      if (stoppedBy !== null) {
        console.error(`llmtray: the build was stopped by ${stoppedBy}; not starting`);
        finish(1);
      } else if (code !== 0) {
        console.error(`llmtray: the build failed (${code === null ? signal : `exit code ${code}`}); not starting`);
        finish(code ?? 1);
      } else {
        finish(0);
      }
    });
  });
}
