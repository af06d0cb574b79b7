// Ending with the process that started us: the launcher with `npm start`, the headless daemon
// with the launcher.
//
// Why a watch and not only signals: a SIGKILL is never forwarded, and a process between npm and
// the launcher can die without passing a signal on (dash, npm's script shell, dies of the
// SIGTERM npm forwards to it: the launcher, the daemon and its engines went on serving under
// PID 1). When a parent dies, the kernel reparents its children at once, so a changed parent
// pid is a sure sign, whatever ended the parent, and it cannot be fooled by pid reuse the way
// asking "is pid N still alive" can.
//
// Why a poll: Node has no prctl(PR_SET_PDEATHSIG), and a pipe that closes would need every
// starter (npm, a shell, a test) to hold one for us. Reading our parent pid is one getppid()
// call, four times a second.

/**
 * The environment variable a starter sets to the pid whose end must end the process it starts.
 * The launcher sets it for the headless daemon it runs; `npm start` and `npm run serve` set it
 * for the launcher and the daemon (scripts/build-and-run.mjs). Unset, `llmtray serve` outlives
 * its parent, as a daemon started under nohup or a service manager must.
 */
export const PARENT_PID_ENV = 'LLMTRAY_PARENT_PID';

/** How often the parent pid is read, ms. */
export const PARENT_POLL_MS = 250;

/**
 * The pid named by LLMTRAY_PARENT_PID, or null when it is unset. Removes it from `env`, so the
 * processes this one starts (engines, the Electron app) do not inherit a pid that is not their
 * parent's. Throws a sentence naming the variable when it is set to something that is not a pid.
 */
export function takeParentPid(env: NodeJS.ProcessEnv): number | null {
  const value = env[PARENT_PID_ENV];
  delete env[PARENT_PID_ENV];
  if (value === undefined || value === '') return null;
  const pid = Number(value);
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`${PARENT_PID_ENV} must be a process id (a positive integer), got '${value}'`);
  return pid;
}

export interface ParentWatchOptions {
  /** The parent this process must end with. */
  parentPid: number;
  /** This process's parent pid now: `() => process.ppid` in production. */
  currentParent(): number;
  /** Called once, when the parent pid is no longer `parentPid` (also when it already is not). */
  onGone(): void;
  pollMs?: number;
}

/**
 * Calls `onGone` once the parent has gone, checking at once and then every `pollMs`. The timer
 * does not keep the process alive. Returns a function that stops watching.
 */
export function watchParent(options: ParentWatchOptions): () => void {
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => {
    if (timer !== undefined) clearInterval(timer);
    timer = undefined;
  };
  const check = (): boolean => {
    if (options.currentParent() === options.parentPid) return false;
    stop();
    options.onGone();
    return true;
  };
  if (check()) return () => {};
  timer = setInterval(check, options.pollMs ?? PARENT_POLL_MS);
  timer.unref();
  return stop;
}
