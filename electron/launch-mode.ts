// `npm start` decides between the desktop app and the headless daemon.
//
// The desktop app needs two things a machine may lack: the Electron binary (npm downloads it
// in a postinstall step that fails offline, behind some proxies, and on this project's own
// build machines) and a display. Without either, starting Electron only prints a stack trace,
// so we run the same daemon headless instead and say why.
//
// Why the binary is found by reading node_modules/electron/path.txt and not with
// `require('electron')`: from plain Node that require *downloads* the binary when it is
// missing (a network call, seconds, then a throw), which is no way to ask a question.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DAEMON_NODE_FLAGS } from '../core/daemon/node-flags.js';

/**
 * The daemon's V8 flags as the Electron binary takes them. The daemon runs in Electron's main
 * process, whose V8 reads --js-flags only on the command line it was started with
 * (app.commandLine.appendSwitch and v8.setFlagsFromString come after its heap is sized), so every
 * command that starts the app names it: `npm start` (launch.ts) and the login item (login-item.ts).
 */
export const DAEMON_JS_FLAGS_SWITCH = `--js-flags=${DAEMON_NODE_FLAGS.join(' ')}`;

export type LaunchMode =
  | { mode: 'electron' }
  | { mode: 'headless'; cause: 'requested' | 'no-electron' | 'no-display'; message: string };

/** Platforms whose desktop is X11 or Wayland, where a missing DISPLAY means no GUI at all. */
const FREEDESKTOP = new Set<NodeJS.Platform>(['linux', 'freebsd', 'openbsd', 'netbsd', 'sunos']);

export function chooseLaunchMode(options: {
  platform: NodeJS.Platform;
  env: Readonly<Record<string, string | undefined>>;
  electronBinaryExists: boolean;
}): LaunchMode {
  const { platform, env } = options;
  if (env.LLMTRAY_HEADLESS === '1') {
    return { mode: 'headless', cause: 'requested', message: 'LLMTRAY_HEADLESS=1 asks for the headless daemon' };
  }
  if (!options.electronBinaryExists) {
    return { mode: 'headless', cause: 'no-electron', message: 'the Electron binary is not available here' };
  }
  if (FREEDESKTOP.has(platform) && !env.DISPLAY && !env.WAYLAND_DISPLAY) {
    return { mode: 'headless', cause: 'no-display', message: 'there is no display (neither DISPLAY nor WAYLAND_DISPLAY is set)' };
  }
  return { mode: 'electron' };
}

export type ElectronBinary = { path: string; problem: null } | { path: null; problem: string };

/**
 * Where the Electron binary is, without running anything. In order: LLMTRAY_ELECTRON_BINARY
 * (a path, for tests and unusual installs), ELECTRON_OVERRIDE_DIST_PATH (honoured the way the
 * electron package itself does), then the package's own path.txt under its dist/ folder.
 * `electronPackageDir` is null when the electron package is not installed. Blocks on stat/read.
 */
export function findElectronBinary(options: {
  env: Readonly<Record<string, string | undefined>>;
  electronPackageDir: string | null;
  exists?: (path: string) => boolean;
  readText?: (path: string) => string | null;
}): ElectronBinary {
  const exists = options.exists ?? existsSync;
  const readText = options.readText ?? readIfPresent;
  const check = (path: string, what: string): ElectronBinary =>
    exists(path) ? { path, problem: null } : { path: null, problem: `${what} ${path} does not exist` };

  const explicit = options.env.LLMTRAY_ELECTRON_BINARY;
  if (explicit) return check(explicit, 'LLMTRAY_ELECTRON_BINARY names');
  if (options.electronPackageDir === null) return { path: null, problem: 'the electron package is not installed' };
  const relativePath = readText(join(options.electronPackageDir, 'path.txt'))?.trim() || null;
  const override = options.env.ELECTRON_OVERRIDE_DIST_PATH;
  if (override) return check(join(override, relativePath ?? 'electron'), 'ELECTRON_OVERRIDE_DIST_PATH points at');
  if (relativePath === null) {
    return { path: null, problem: `${join(options.electronPackageDir, 'path.txt')} is missing: the binary download in electron's postinstall failed or was skipped` };
  }
  return check(join(options.electronPackageDir, 'dist', relativePath), 'the electron package says its binary is');
}

function readIfPresent(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/**
 * The headless command: LLMTRAY_HEADLESS_CMD when set (a JSON array of strings, argv[0] the
 * program; tests use it so they do not depend on the daemon), else `node dist/core/cli.js
 * serve` with the launcher's arguments. Throws a sentence naming the variable when it is not
 * a non-empty JSON array of strings.
 */
export function headlessCommand(options: {
  env: Readonly<Record<string, string | undefined>>;
  nodePath: string;
  appRoot: string;
  args: readonly string[];
}): string[] {
  const override = options.env.LLMTRAY_HEADLESS_CMD;
  if (override === undefined || override === '') {
    return [options.nodePath, ...DAEMON_NODE_FLAGS, join(options.appRoot, 'dist', 'core', 'cli.js'), 'serve', ...options.args];
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(override);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((part) => typeof part === 'string')) {
    throw new Error(`LLMTRAY_HEADLESS_CMD must be a JSON array of strings such as ["node","server.js"]; got ${override}`);
  }
  return [...(parsed as string[]), ...options.args];
}
