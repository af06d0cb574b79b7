// Is an llmtray already running on this data dir? Asked by `npm start` and `npm run serve`
// (scripts/build-and-run.mjs) before they rebuild dist/, which a running daemon loads code from.
//
// Plain JavaScript over Node's own modules, importing nothing from dist/: it must answer on a
// fresh clone, before anything is built. It reads what the daemon itself keeps: DATA_DIR/
// daemon.lock (the pid holding the data dir, core/daemon/instance-lock.ts) and DATA_DIR/
// daemon.json (where it serves, core/daemon/daemon-info.ts), with the lock's rules for a stale
// file: a pid that is gone, a zombie, or a process that is not llmtray does not hold the dir.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve, win32 } from 'node:path';

const APP_DIR = 'llmtray';

/**
 * core/catalog/paths.ts's dataDir, for a fresh clone that has no dist/ to import it from
 * (test/unit/scripts/running-daemon.test.ts checks that the two agree).
 * @param {{ platform: NodeJS.Platform, env: Record<string, string | undefined>, homeDir: string }} facts
 * @returns {string}
 */
export function defaultDataDir(facts) {
  const { platform, env, homeDir } = facts;
  if (platform === 'win32') return win32.join(env.APPDATA ?? win32.join(homeDir, 'AppData', 'Roaming'), APP_DIR);
  if (platform === 'darwin') return join(homeDir, 'Library', 'Application Support', APP_DIR);
  const xdg = env.XDG_DATA_HOME;
  return join(xdg && isAbsolute(xdg) ? xdg : join(homeDir, '.local', 'share'), APP_DIR);
}

/**
 * The data dir the command about to start will use: `--data-dir DIR` among its arguments (the
 * headless daemon's flag), else, for the launcher, LLMTRAY_DATA_DIR (the desktop app's
 * variable, electron/desktop-settings.ts), else the platform's default.
 * @param {{ mode: 'launch' | 'serve', args: readonly string[], env: Record<string, string | undefined>, platform?: NodeJS.Platform, homeDir?: string }} options
 * @returns {string}
 */
export function dataDirFor(options) {
  const { args, env } = options;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--data-dir' && args[i + 1] !== undefined) return resolve(args[i + 1]);
    if (arg.startsWith('--data-dir=')) return resolve(arg.slice('--data-dir='.length));
  }
  if (options.mode === 'launch' && env.LLMTRAY_DATA_DIR) return resolve(env.LLMTRAY_DATA_DIR);
  return resolve(defaultDataDir({ platform: options.platform ?? process.platform, env, homeDir: options.homeDir ?? homedir() }));
}

/**
 * Whether `pid` runs (a zombie has ended) and its command line, null when it cannot be read
 * (Windows), as core/engine/supervisor/process-tree.ts reads them.
 * @param {number} pid
 * @returns {{ alive: boolean, commandLine: string | null }}
 */
function inspectProcess(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to another user: alive, and its command line unknown.
    return { alive: /** @type {NodeJS.ErrnoException} */ (error).code === 'EPERM', commandLine: null };
  }
  if (process.platform === 'linux') {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] === 'Z') return { alive: false, commandLine: null };
      const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return { alive: true, commandLine: raw === '' ? null : raw.replace(/\0$/, '').split('\0').join(' ') };
    } catch {
      return { alive: false, commandLine: null };
    }
  }
  if (process.platform === 'win32') return { alive: true, commandLine: null };
  try {
    const text = execFileSync('ps', ['-ww', '-o', 'command=', '-p', String(pid)], { encoding: 'utf8' }).trim();
    return { alive: true, commandLine: text === '' ? null : text };
  } catch {
    return { alive: true, commandLine: null };
  }
}

/** core/daemon/instance-lock.ts's test: a command line that cannot be read counts as ours, the safe side. */
function looksLikeLlmtray(commandLine) {
  return commandLine === null || /llmtray|cli\.js|electron/i.test(commandLine);
}

/**
 * The llmtray holding `dataDir`: its pid, and its endpoint once its daemon.json names it (null
 * while it is still starting); null when none holds it.
 * @param {string} dataDir
 * @returns {{ pid: number, endpoint: string | null } | null}
 */
export function runningDaemon(dataDir) {
  let pid;
  try {
    pid = Number.parseInt(readFileSync(join(dataDir, 'daemon.lock'), 'utf8').trim(), 10);
  } catch {
    return null;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return null;
  const holder = inspectProcess(pid);
  if (!holder.alive || !looksLikeLlmtray(holder.commandLine)) return null;
  let endpoint = null;
  try {
    const info = JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8'));
    if (info.pid === pid && typeof info.endpoint === 'string') endpoint = info.endpoint;
  } catch {
    // No record yet: the daemon holds the lock and is still starting.
  }
  return { pid, endpoint };
}

/**
 * The refusal printed when the data dir is taken: which pid, where it serves, what to do.
 * @param {string} dataDir
 * @param {{ pid: number, endpoint: string | null }} holder
 * @returns {string}
 */
export function dataDirTakenSentence(dataDir, holder) {
  const where = holder.endpoint === null ? 'still starting (no endpoint recorded yet)' : `serving ${holder.endpoint}`;
  return (
    `llmtray: another llmtray (pid ${holder.pid}) is already running on the data dir ${dataDir}, ${where}. ` +
    `Stop it first (Ctrl-C where it runs, or kill ${holder.pid}), or pass another --data-dir. ` +
    'Nothing was built or started: a rebuild of dist/ would change the code under the running one.'
  );
}
