// Processes as trees: ending one with its descendants, reading its command line, summing its memory.
//
// Why whole trees: an engine may start helpers (a llama-server wrapper script, node-llama-cpp's
// worker), and a helper left running keeps its share of GPU memory after the "eviction" — the
// next launch then OOMs on memory nobody owns. Servers are spawned detached as process-group
// leaders, so on POSIX one kill(-pgid) reaches the whole group; descendants that made their own
// group (setsid) are found through /proc or ps and signalled one by one.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';

/** Signals a tree: the process group led by `pid` and every listed member. Never throws. */
export function signalTree(pid: number, members: readonly number[], signal: NodeJS.Signals, kill: (pid: number, signal: NodeJS.Signals) => void = (p, s) => process.kill(p, s)): void {
  let grouped = true;
  try {
    kill(-pid, signal);
  } catch {
    // ESRCH: the group is gone (or was never a group); the members below are still tried.
    grouped = false;
  }
  for (const member of members) {
    // A member of the group had it already, and must not have it twice: a second SIGTERM ends
    // llama-server at once ("Received second interrupt, terminating immediately"), and one that
    // came after the embedded engine had handled the first ended it mid-save (seen: one
    // conversation in eight lost in BENCHMARKS §13, the save's file written, its record not).
    if (grouped && inGroupOf(member, pid)) continue;
    try {
      kill(member, signal);
    } catch {
      // Already gone.
    }
  }
}

/**
 * Whether `member` is in the process group `leader` leads: the leader itself, or a process whose
 * /proc stat names that group (Linux). Elsewhere only the leader is known to be: the others are
 * signalled on their own, as before.
 */
function inGroupOf(member: number, leader: number): boolean {
  if (member === leader) return true;
  try {
    const stat = readFileSync(`/proc/${member}/stat`, 'utf8');
    // After the command's closing parenthesis: state, ppid, pgrp.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) === leader;
  } catch {
    return false;
  }
}

/**
 * Whether a pid is a running process. A zombie (exited, not yet reaped by its parent) is not
 * running: it holds no memory and cannot be signalled further.
 */
export async function isRunning(pid: number, platform: NodeJS.Platform = process.platform): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else — running, and certainly not ours.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (platform !== 'linux') return true;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return false;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] !== 'Z';
}

/** One row of the process table. */
interface ProcessRow {
  pid: number;
  ppid: number;
  pgid: number;
  /** Exited, not yet reaped: holds no memory, cannot be signalled further. */
  zombie: boolean;
}

/**
 * Every process. Linux reads /proc; macOS and the BSDs ask ps; Windows gives nothing.
 * Zombies matter here: in a container whose init reaps slowly, an ended grandchild stays
 * a zombie in the group for a while, and counting it as alive would force a needless SIGKILL.
 */
async function processTable(platform: NodeJS.Platform): Promise<ProcessRow[]> {
  if (platform === 'linux') {
    const entries = await readdir('/proc').catch(() => [] as string[]);
    const rows = await Promise.all(
      entries
        .filter((name) => /^\d+$/.test(name))
        .map(async (name) => {
          const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => null);
          if (stat === null) return null;
          // Fields after the command (which may hold spaces and parentheses): state ppid pgrp …
          const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
          return { pid: Number(name), ppid: Number(ppid), pgid: Number(pgid), zombie: state === 'Z' };
        }),
    );
    return rows.filter((row): row is ProcessRow => row !== null);
  }
  if (platform === 'win32') return [];
  const text = await run('ps', ['-A', '-o', 'pid=,ppid=,pgid=,stat=']).catch(() => '');
  return text
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols.length >= 4 && /^\d+$/.test(cols[0] ?? ''))
    .map(([pid, ppid, pgid, stat]) => ({ pid: Number(pid), ppid: Number(ppid), pgid: Number(pgid), zombie: (stat ?? '').startsWith('Z') }));
}

/**
 * Every descendant of `pid` (children, grandchildren, …); empty when it has none or it is gone.
 * On Linux it walks the tree down through /proc/PID/task/TID/children: a few reads per process
 * in the tree, where the whole process table is a read per process on the machine (18 ms on the
 * project machine at 105 processes, paid several times per swap: issue 14). Elsewhere, or on a
 * kernel without those files, it reads the whole table.
 */
async function descendantsOf(pid: number, platform: NodeJS.Platform = process.platform): Promise<number[]> {
  if (platform === 'linux') {
    const walked = await childrenWalk(pid);
    if (walked !== null) return walked;
  }
  const table = await processTable(platform);
  const out: number[] = [];
  const frontier = [pid];
  while (frontier.length > 0) {
    const parent = frontier.pop();
    for (const row of table) {
      if (row.ppid === parent && !out.includes(row.pid)) {
        out.push(row.pid);
        frontier.push(row.pid);
      }
    }
  }
  return out;
}

/** Rows of whitespace-separated integers from `ps -o …=` output. Pure. */
function parsePsColumns(text: string): number[][] {
  return text
    .split('\n')
    .map((line) => line.trim().split(/\s+/).map(Number))
    .filter((row) => row.length > 0 && row.every((n) => Number.isFinite(n)) && row[0] !== 0);
}

/**
 * The command line of `pid`, its arguments joined by single spaces (the form `ps -o command=`
 * prints), or null when it cannot be read — then the caller must not assume the process is its own.
 * Linux reads /proc/PID/cmdline; macOS and the BSDs ask ps; Windows gives null.
 */
export async function readCommandLine(pid: number, platform: NodeJS.Platform = process.platform): Promise<string | null> {
  if (platform === 'linux') {
    const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
    if (raw === null || raw === '') return null;
    return raw.replace(/\0$/, '').split('\0').join(' ');
  }
  if (platform === 'win32') return null;
  const text = await run('ps', ['-ww', '-o', 'command=', '-p', String(pid)]).catch(() => null);
  return text === null || text.trim() === '' ? null : text.trim();
}

/** Whether this kernel has /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN), judged once from our own process. */
let childrenFiles: Promise<boolean> | null = null;

/**
 * The descendants of `pid` by /proc/PID/task/TID/children (a process's children are the union
 * over its threads), or null when the kernel has no such files and the whole table must be read
 * instead. A process that vanishes mid-walk simply has no children.
 */
async function childrenWalk(pid: number): Promise<number[] | null> {
  childrenFiles ??= readFile(`/proc/${process.pid}/task/${process.pid}/children`, 'utf8').then(
    () => true,
    () => false,
  );
  if (!(await childrenFiles)) return null;
  const childrenOf = async (parent: number): Promise<number[]> => {
    const tasks = await readdir(`/proc/${parent}/task`).catch(() => [] as string[]);
    const lists = await Promise.all(tasks.map((tid) => readFile(`/proc/${parent}/task/${tid}/children`, 'utf8').catch(() => '')));
    return lists.flatMap((list) => list.split(' ').filter((n) => /^\d+$/.test(n)).map(Number));
  };
  const out: number[] = [];
  const frontier = [pid];
  while (frontier.length > 0) {
    for (const child of await childrenOf(frontier.pop() as number)) {
      if (child !== pid && !out.includes(child)) {
        out.push(child);
        frontier.push(child);
      }
    }
  }
  return out;
}

/**
 * How long a tree's member list is trusted when measuring its memory, ms. Engines rarely start
 * processes of their own, and the walk costs a file per thread (the embedded engine runs a
 * dozen): under a steady stream of requests the controller measures every server a few times a
 * second, and walking each time was the largest share of the daemon's own work per request
 * (issue 14). A child started since the last walk is counted within this long. Ending a tree
 * always walks afresh.
 */
export const MEMBERS_FRESH_MS = 2_000;
const membersByRoot = new Map<number, { at: number; pids: number[] }>();

async function membersToMeasure(pid: number, platform: NodeJS.Platform, now: number): Promise<number[]> {
  const known = membersByRoot.get(pid);
  if (known !== undefined && now - known.at < MEMBERS_FRESH_MS) return known.pids;
  const pids = [pid, ...(await descendantsOf(pid, platform))];
  // Only walks younger than the window are worth keeping: this also drops the trees of servers
  // that ended without being measured again, so the map holds what was measured lately.
  for (const [root, walk] of membersByRoot) if (now - walk.at >= MEMBERS_FRESH_MS) membersByRoot.delete(root);
  membersByRoot.set(pid, { at: now, pids });
  return pids;
}

/**
 * Resident memory of a process and its descendants, in bytes; 0 when it is gone. The members are
 * those of a walk at most MEMBERS_FRESH_MS old (`now`: monotonic ms, performance.now(), so a
 * wall-clock step neither keeps a stale walk nor walks again at once; injected in tests).
 */
export async function treeResidentBytes(pid: number, platform: NodeJS.Platform = process.platform, now: number = performance.now()): Promise<number> {
  if (platform === 'win32') return 0;
  const pids = await membersToMeasure(pid, platform, now);
  if (platform === 'linux') {
    const sizes = await Promise.all(
      pids.map(async (p) => {
        const status = await readFile(`/proc/${p}/status`, 'utf8').catch(() => '');
        const kib = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
        return kib === undefined ? null : Number(kib) * 1024;
      }),
    );
    // A root that is gone is forgotten (its pid may come back as someone else's process), and
    // holds nothing: its children, if any outlived it, are nobody's tree now.
    if (sizes[0] === null) {
      membersByRoot.delete(pid);
      return 0;
    }
    return sizes.reduce<number>((sum, size) => sum + (size ?? 0), 0);
  }
  const text = await run('ps', ['-o', 'pid=,rss=', '-p', pids.join(',')]).catch(() => '');
  const rows = parsePsColumns(text);
  if (!rows.some(([member]) => member === pid)) {
    membersByRoot.delete(pid);
    return 0;
  }
  return rows.reduce((sum, [, kib]) => sum + (kib ?? 0) * 1024, 0);
}

export interface TerminateOptions {
  /** How long SIGTERM gets before SIGKILL. */
  graceMs: number;
  /** Resolves when the leader has exited (a child's 'exit' event); without it the leader is polled. */
  leaderExited?: Promise<unknown>;
  platform?: NodeJS.Platform;
  /** Called just before the SIGKILL (or taskkill /F), so the caller knows that kill was its own. */
  onKill?: () => void;
}

/** How long a SIGKILLed tree gets to disappear before we stop waiting for it. */
const KILL_WAIT_MS = 5_000;
const POLL_MS = 20;

/**
 * Ends a process tree: SIGTERM to all of it, SIGKILL after `graceMs` to whatever is left.
 * Blocks until the tree is gone or the SIGKILL wait ran out; never throws. Idempotent: a tree
 * that is already gone returns at once. `forced` says whether SIGKILL was needed.
 * On Windows there is no polite signal a console server honours, so it is `taskkill /T /F` at once.
 */
export async function terminateTree(pid: number, options: TerminateOptions): Promise<{ forced: boolean }> {
  const platform = options.platform ?? process.platform;
  if (platform === 'win32') {
    options.onKill?.();
    await run('taskkill', ['/pid', String(pid), '/T', '/F']).catch(() => '');
    return { forced: true };
  }
  const members = [pid, ...(await descendantsOf(pid, platform))];
  signalTree(pid, members, 'SIGTERM');
  if (await treeGone(pid, members, options.graceMs, options.leaderExited, platform)) return { forced: false };
  const late = await withLateDescendants(pid, members, platform);
  options.onKill?.();
  signalTree(pid, late, 'SIGKILL');
  await treeGone(pid, members, KILL_WAIT_MS, options.leaderExited, platform);
  return { forced: true };
}

/** Children started during the grace period are part of the tree too. */
async function withLateDescendants(pid: number, members: readonly number[], platform: NodeJS.Platform): Promise<number[]> {
  const late = await descendantsOf(pid, platform);
  return [...new Set([...members, ...late])];
}

/**
 * Waits until the leader has exited and no member or group process is left, at most `withinMs`.
 * The leader's exit event ends the first wait at once (the timer is cleared); the rest is polled,
 * because nothing notifies us about processes that are not our children.
 */
async function treeGone(
  pid: number,
  members: readonly number[],
  withinMs: number,
  leaderExited: Promise<unknown> | undefined,
  platform: NodeJS.Platform,
): Promise<boolean> {
  // Monotonic: a wall-clock step must not cut the wait short or stretch it.
  const deadline = performance.now() + withinMs;
  if (leaderExited !== undefined) {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), withinMs);
    });
    const first = await Promise.race([leaderExited.then(() => 'exited' as const), timedOut]);
    clearTimeout(timer);
    if (first === 'timeout') return false;
  }
  for (;;) {
    const alive = await treeAlive(pid, members, platform);
    if (!alive) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/**
 * Whether a live (non-zombie) process is left in the group led by `pid` or among `members`.
 * When neither the group nor any member exists at all (kill(…, 0) says ESRCH for each), that is
 * the answer without reading the process table: the common case once the leader has exited, and
 * the one a swap waits on. Anything left, a zombie included, is judged from the table.
 */
async function treeAlive(pid: number, members: readonly number[], platform: NodeJS.Platform): Promise<boolean> {
  if (platform !== 'win32' && [-pid, ...members].every((target) => !exists(target))) return false;
  const table = await processTable(platform);
  return table.some((row) => !row.zombie && (row.pgid === pid || members.includes(row.pid)));
}

/** Whether a process (or, for a negative number, a process group) exists, zombies included. */
function exists(target: number): boolean {
  try {
    process.kill(target, 0);
    return true;
  } catch (error) {
    // EPERM: it exists and is someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function run(command: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, [...args], { timeout: 10_000, windowsHide: true }, (error, stdout) => {
      if (error && stdout === '') reject(error);
      else resolve(stdout);
    });
  });
}
