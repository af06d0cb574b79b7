// The real daemon as a child process: `node dist/core/cli.js serve --demo` on a free port
// with its own data dir, for tests that must see what a person or a local app sees — the
// process, its engines, its files and its exit — rather than the parts wired in-process.
//
// Why a child and not startDaemon() in the test process: signal handling, the instance lock,
// daemon.json, the supervisor's exit hook and the engines' process tree only exist for real
// in a separate process, and several of the bugs these tests guard against live exactly there.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import type { Snapshot, ModelView } from '../../core/contracts/snapshot.js';
import { SPARE_RECORD_ID } from '../../core/engine/supervisor/warm-spare.js';
import { DAEMON_NODE_FLAGS } from '../../core/daemon/node-flags.js';

// The built CLI, whether this file runs from the sources (vitest) or compiled into dist/ (the
// soak, `npm run soak`, imports it from dist/test/support).
const HERE = import.meta.dirname;
export const CLI_ENTRY = HERE.includes(`${sep}dist${sep}`)
  ? resolve(HERE, '..', '..', 'core', 'cli.js')
  : join(resolve(HERE, '..', '..'), 'dist', 'core', 'cli.js');
/** Node's flag that turns an unhandled rejection into an uncaught exception, whatever listens for it. */
export const STRICT_REJECTIONS = '--unhandled-rejections=strict';

export interface DaemonExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface DaemonProcess {
  child: ChildProcess;
  pid: number;
  port: number;
  /** The OpenAI base URL, http://127.0.0.1:PORT/v1. */
  endpoint: string;
  /** http://127.0.0.1:PORT, where /api, /metrics and the dashboard live. */
  origin: string;
  /** The admin token from DATA_DIR/admin-token. */
  token: string;
  /** The dashboard as the daemon prints it: the origin with the token in the fragment. */
  dashboardUrl: string;
  dataDir: string;
  /** Everything the daemon wrote to stderr so far (its log). */
  stderr(): string;
  /** Everything it wrote to stdout so far (what `llmtray serve` prints: the endpoints, the dashboard URL). */
  stdout(): string;
  /**
   * Resolves with stdout once it contains `text`; rejects with what it holds after `timeoutMs`.
   * The daemon is reachable (daemon.json) a moment before `serve` prints its endpoints, so a
   * test that reads them waits for them.
   */
  untilStdout(text: string, timeoutMs?: number): Promise<string>;
  /** Resolves when the process has exited, with how. */
  exited: Promise<DaemonExit>;
  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILLs after `graceMs`. Idempotent. */
  stop(signal?: NodeJS.Signals, graceMs?: number): Promise<DaemonExit>;
  /** GET /api/state with the token. */
  state(): Promise<Snapshot>;
  /** One model's view from /api/state. */
  model(id: string): Promise<ModelView>;
  /** An admin API call with the token. */
  api(path: string, init?: RequestInit): Promise<Response>;
  /**
   * The per-launch keys of the engines running now, read from their key files in the data dir
   * (the test runs as the same user): what no answer, log or CLI output may contain.
   */
  engineKeys(): Promise<string[]>;
}

export interface StartOptions {
  /** Reuse a data dir (a restart); default a fresh temp dir. */
  dataDir?: string;
  /** How long to wait for daemon.json, ms. */
  startTimeoutMs?: number;
  /** A fixed port (a restart on the same origin, which an open dashboard must find again); default 0, a free one. */
  port?: number;
  /** Environment for the daemon on top of this process's (e.g. a PATH with a llama-server on it). */
  env?: Record<string, string>;
  /** Serve this config file (`--config FILE`) instead of the generated demo (`--demo`). */
  config?: string;
  /**
   * A command that execs the daemon, prepended to its argv, e.g. `['prlimit', '--as=N']` to run
   * it (and so every engine it starts) under a resource limit. It must exec, not fork: the
   * daemon's pid is the child's, which is how daemon.json is recognised as this child's.
   */
  launcher?: readonly string[];
  /** The daemon's working directory (default this process's): a folder a test may delete under it. */
  cwd?: string;
  /** More Node flags for the daemon, after the ones every launch gets: the soak's --inspect, to read its live heap. */
  nodeFlags?: readonly string[];
}

/** A fresh temp data dir; the caller removes it with removeDataDir. */
export function makeDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'llmtray-daemon-'));
}

/**
 * Kills every process that still names `dir` on its command line, then removes it. A daemon
 * that a test SIGKILLed (on purpose, or because it outlived its stop's grace on a loaded
 * machine) leaves its engines and its warm spare running, and with the data dir gone no later
 * daemon's orphan sweep would ever find them: every engine's command line names its data dir
 * (the model under demo/, the key file under engine-keys/, a spare's --spare-of).
 */
export async function removeDataDir(dir: string): Promise<void> {
  for (const { pid } of await processesNaming(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone since the scan.
    }
  }
  return rm(dir, { recursive: true, force: true });
}

export interface RunningProcess {
  pid: number;
  ppid: number;
  /** Its command line, arguments joined by spaces. */
  args: string;
}

/**
 * The live processes (zombies aside, and this one) whose command line contains `text`.
 *
 * Why `ps` and not a scan of /proc: the scan found nothing wherever there is no /proc, and a
 * check that cannot look must not read as "none left": `expect(await enginesUsing(dir))
 * .toEqual([])` would pass on a Mac with every engine still running. `ps` lists every process
 * on Linux and macOS alike, prints each whole command line when its output is not a terminal
 * (procps and BSD ps both), and fails loudly where it is missing.
 */
export function processesNaming(text: string): Promise<RunningProcess[]> {
  return new Promise((done, fail) => {
    execFile('ps', ['-eo', 'pid=,ppid=,stat=,args='], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => {
      if (error !== null) return fail(error);
      const rows = stdout
        .split('\n')
        .map((line) => /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line))
        .flatMap((m) => (m === null ? [] : [{ pid: Number(m[1]), ppid: Number(m[2]), stat: m[3] ?? '', args: m[4] ?? '' }]))
        .filter((row) => row.pid !== process.pid && !row.stat.startsWith('Z') && row.args.includes(text));
      done(rows.map(({ pid, ppid, args }) => ({ pid, ppid, args })));
    });
  });
}

/**
 * Starts `llmtray serve --demo --port 0` (or `--config FILE` with `config`) and resolves once
 * DATA_DIR/daemon.json names this child (a file left by an earlier run names another pid).
 * Rejects with the daemon's stderr when it exits first.
 */
export async function startDaemonProcess(options: StartOptions = {}): Promise<DaemonProcess> {
  const dataDir = options.dataDir ?? (await makeDataDir());
  const source = options.config === undefined ? ['--demo'] : ['--config', options.config];
  // Strict: a rejection nothing handles ends the daemon at once, and the test sees it exit.
  // With the V8 flags every launch of the daemon gets (core/daemon/node-flags.ts).
  const argv = [process.execPath, STRICT_REJECTIONS, ...DAEMON_NODE_FLAGS, ...(options.nodeFlags ?? []), CLI_ENTRY, 'serve', ...source, '--data-dir', dataDir, '--port', String(options.port ?? 0)];
  const [command, ...args] = [...(options.launcher ?? []), ...argv] as [string, ...string[]];
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stderr = '';
  let stdout = '';
  child.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  child.stdout?.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  const exited = new Promise<DaemonExit>((done) => child.once('exit', (code, signal) => done({ code, signal })));
  const pid = child.pid;
  if (pid === undefined) throw new Error('the daemon process did not start');

  const info = await waitForInfo(dataDir, pid, exited, () => stderr, options.startTimeoutMs ?? 30_000).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  const token = (await readFile(join(dataDir, 'admin-token'), 'utf8')).trim();
  const origin = info.origin;

  let stopping: Promise<DaemonExit> | null = null;
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${origin}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } });
  const state = async (): Promise<Snapshot> => {
    const res = await api('/api/state');
    if (!res.ok) throw new Error(`/api/state answered ${res.status}: ${await res.text()}`);
    return (await res.json()) as Snapshot;
  };
  return {
    child,
    pid,
    port: info.port,
    endpoint: info.endpoint,
    origin,
    token,
    dashboardUrl: `${origin}/#token=${token}`,
    dataDir,
    stderr: () => stderr,
    stdout: () => stdout,
    untilStdout(text, timeoutMs = 45_000) {
      return new Promise((resolve, reject) => {
        if (stdout.includes(text)) return resolve(stdout);
        const onData = (): void => {
          if (!stdout.includes(text)) return;
          clearTimeout(timer);
          child.stdout?.off('data', onData);
          resolve(stdout);
        };
        const timer = setTimeout(() => {
          child.stdout?.off('data', onData);
          reject(new Error(`the daemon's stdout has no ${JSON.stringify(text)} after ${timeoutMs} ms; it holds: ${JSON.stringify(stdout)}`));
        }, timeoutMs);
        child.stdout?.on('data', onData);
      });
    },
    exited,
    state,
    async model(id) {
      const found = (await state()).models.find((m) => m.id === id);
      if (found === undefined) throw new Error(`/api/state has no model '${id}'`);
      return found;
    },
    api,
    async engineKeys() {
      const dir = join(dataDir, 'engine-keys');
      const files = await readdir(dir).catch(() => []);
      const keys = await Promise.all(files.map((file) => readFile(join(dir, file), 'utf8').then((text) => text.trim(), () => '')));
      return keys.filter((key) => key !== '');
    },
    stop(signal = 'SIGTERM', graceMs = 20_000) {
      stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        try {
          return await exited;
        } finally {
          clearTimeout(timer);
        }
      })();
      return stopping;
    },
  };
}

async function waitForInfo(
  dataDir: string,
  pid: number,
  exited: Promise<DaemonExit>,
  stderr: () => string,
  timeoutMs: number,
): Promise<{ port: number; endpoint: string; origin: string }> {
  let exit: DaemonExit | null = null;
  void exited.then((e) => (exit = e));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exit !== null) {
      const { code, signal } = exit as DaemonExit;
      throw new Error(`the daemon exited (code ${code}, signal ${signal}) before writing daemon.json:\n${stderr()}`);
    }
    try {
      const info = JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')) as { pid: number; port: number; endpoint: string; origin: string };
      if (info.pid === pid) return info;
    } catch {
      // Not written yet (or mid-rename).
    }
    await sleep(50);
  }
  throw new Error(`the daemon wrote no daemon.json within ${timeoutMs} ms:\n${stderr()}`);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}

/**
 * Polls `probe` until it returns a value other than undefined. For conditions the daemon
 * reaches on its own (a pinned model loading after a start): the bound is a failure message's
 * deadline, not an assertion about speed.
 */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 45_000, pollMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}${last === undefined ? '' : ` (last error: ${String(last)})`}`);
    await sleep(pollMs);
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `llmtray ARGS` (the built CLI) to its end. */
export function runCli(args: readonly string[], timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((done) => {
    execFile(process.execPath, [STRICT_REJECTIONS, CLI_ENTRY, ...args], { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
      done({ code, stdout, stderr });
    });
  });
}

/**
 * Whether a process runs: it exists and is not a zombie. A zombie has ended and holds no
 * memory; it only waits for its parent (or init, after the parent died) to reap it.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }
}

/**
 * The model servers among enginesUsing(dataDir): every engine but a warm spare waiting for a
 * launch (core/engine/supervisor/warm-spare.ts). A spare's command line says --spare for life,
 * so an adopted one is told apart by engines.json, which records it under its model's id.
 */
export async function modelServersUsing(dataDir: string): Promise<RunningProcess[]> {
  const engines = await enginesUsing(dataDir);
  const text = await readFile(join(dataDir, 'engines.json'), 'utf8').catch(() => '{"engines":[]}');
  const servers = new Set((JSON.parse(text) as { engines: { modelId: string; pid: number }[] }).engines.filter((e) => e.modelId !== SPARE_RECORD_ID).map((e) => e.pid));
  return engines.filter((engine) => !/ --spare\b/.test(engine.args) || servers.has(engine.pid));
}

/** Live embedded engines whose command line mentions `dataDir` (their model paths live under it). */
export async function enginesUsing(dataDir: string): Promise<RunningProcess[]> {
  const embeddedEntry = join('dist', 'core', 'engine', 'embedded', 'main.js');
  return (await processesNaming(dataDir)).filter((p) => p.args.includes(embeddedEntry));
}
