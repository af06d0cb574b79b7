// The `npm start` entry (dist/electron/launch.js): the desktop app where it can run, the
// headless daemon where it cannot, saying which and why. Arguments are passed on to either
// (`--demo` generates and serves the demo models).
//
// Environment: LLMTRAY_HEADLESS=1 forces headless; LLMTRAY_ELECTRON_BINARY names the Electron
// binary to use; LLMTRAY_HEADLESS_CMD replaces the headless command (a JSON array);
// LLMTRAY_PARENT_PID names the process to end with (default: our parent; see below).
//
// One signal stops everything: the launcher ends with its parent (core/common/parent-watch.ts),
// so a SIGKILL of npm, or a shell between npm and the launcher dying of a signal it does not
// pass on, stops the app instead of leaving it serving under PID 1; and the headless daemon is
// told to end with the launcher, in case the launcher itself is SIGKILLed.
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chooseLaunchMode, DAEMON_JS_FLAGS_SWITCH, findElectronBinary, headlessCommand } from './launch-mode.js';
import { errorMessage } from '../core/contracts/error-message.js';
import { PARENT_PID_ENV, takeParentPid, watchParent } from '../core/common/parent-watch.js';

/** dist/electron/launch.js → the repository (or unpacked app) root. */
const appRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const args = process.argv.slice(2);
const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Whose end ends us. scripts/build-and-run.mjs names the pid it was started by, because it
 * loads this module after a build, by which time that parent may already have gone (and we
 * would take init for our parent). Anyone else (`node dist/electron/launch.js` from a shell)
 * gets the parent it has now.
 */
let parentPid: number;
try {
  parentPid = takeParentPid(process.env) ?? process.ppid;
} catch (error) {
  console.error(`llmtray: ${errorMessage(error)}`);
  process.exit(2);
}

function electronPackageDir(): string | null {
  try {
    // Resolving package.json finds the package without running its index.js (which downloads).
    return dirname(createRequire(join(appRoot, 'package.json')).resolve('electron/package.json'));
  } catch {
    return null;
  }
}

/**
 * Runs a child with our stdio, passes on Ctrl-C, SIGTERM and SIGHUP, stops it with SIGTERM when
 * our parent ends, and exits the way it exits.
 *
 * Forwarding makes a copy of a terminal's Ctrl-C (the child is in our process group and got it
 * too), and npm adds one of its own; the daemon takes copies that arrive together as one press
 * (core/cli/stop-on-signals.ts). Forwarding everything is still right: a `kill` aimed at this
 * process alone must reach the child, SIGHUP included: without a listener a `kill -HUP` would
 * end the launcher and leave the daemon serving, orphaned.
 */
function runToCompletion(child: ChildProcess, onSpawnError: (error: Error) => void): void {
  const forward = (signal: NodeJS.Signals): void => {
    child.kill(signal);
  };
  for (const signal of FORWARDED_SIGNALS) process.on(signal, forward);
  const stopWatching = watchParent({
    parentPid,
    currentParent: () => process.ppid,
    onGone: () => {
      console.error(`llmtray: the process that started the launcher (pid ${parentPid}) has ended; stopping llmtray`);
      child.kill('SIGTERM');
    },
  });
  child.on('error', (error) => {
    stopWatching();
    for (const signal of FORWARDED_SIGNALS) process.off(signal, forward);
    onSpawnError(error);
  });
  child.on('exit', (code, signal) => {
    stopWatching();
    process.exitCode = code ?? (signal !== null ? 1 : 0);
  });
}

function runHeadless(why: string): void {
  let argv: string[];
  try {
    argv = headlessCommand({ env: process.env, nodePath: process.execPath, appRoot, args });
  } catch (error) {
    console.error(`llmtray: ${errorMessage(error)}`);
    process.exitCode = 2;
    return;
  }
  console.log(`llmtray: ${why}; running headless (llmtray serve): the daemon prints the endpoint and the dashboard URL.`);
  const [program, ...rest] = argv as [string, ...string[]];
  runToCompletion(spawn(program, rest, { stdio: 'inherit', env: { ...process.env, [PARENT_PID_ENV]: String(process.pid) } }), (error) => {
    console.error(`llmtray: could not start the headless daemon (${program}): ${error.message}`);
    process.exitCode = 1;
  });
}

const binary = findElectronBinary({ env: process.env, electronPackageDir: electronPackageDir() });
const mode = chooseLaunchMode({ platform: process.platform, env: process.env, electronBinaryExists: binary.path !== null });

if (mode.mode === 'headless') {
  runHeadless(binary.problem !== null && mode.cause === 'no-electron' ? `${mode.message} (${binary.problem})` : mode.message);
} else if (binary.path !== null) {
  // A shell with ELECTRON_RUN_AS_NODE set would make the binary act as plain Node.
  const env = { ...process.env };
  delete env.ELECTRON_RUN_AS_NODE;
  runToCompletion(spawn(binary.path, [DAEMON_JS_FLAGS_SWITCH, appRoot, ...args], { stdio: 'inherit', env }), (error) => {
    runHeadless(`the Electron binary at ${binary.path} could not be started (${error.message})`);
  });
}
