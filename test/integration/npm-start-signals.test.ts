// One signal stops everything: `npm start` for real, as a person runs it (npm → the launcher →
// the headless daemon → its engines), then one signal to npm's pid, or a SIGKILL of npm or of
// the launcher, and nothing of llmtray may be left: no process naming the test's data dir (npm,
// the launcher, the daemon and every engine name it on their command lines) and a free port.
// Seen before: `kill -TERM <npm pid>` ended npm and its shell, and the launcher, the daemon and
// an engine went on serving under PID 1.
//
// Why a copy of the project's package.json in a temp dir, with `build` replaced by a line that
// only prints a marker: `npm start` rebuilds dist/ before it starts, and the files running beside
// this one spawn their daemons from that dist/. The copy keeps the real `start` script and
// scripts/*.mjs, and links dist/ to the built one, so everything but the build runs as shipped;
// the marker also shows whether and when the build ran.
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeDataDir, processesNaming, removeDataDir, runCli, modelServersUsing, type DaemonExit } from '../support/daemon-process.js';

const REPO = resolve(import.meta.dirname, '..', '..');
const BUILD_MARKER = 'llmtray-test: the build ran';
/** What a stop may take on a loaded 2-core machine: the graceful stop waits for engines to end. */
const STOP_TIMEOUT_MS = 150_000;

interface Clone {
  /** The copy's root, where npm runs. */
  dir: string;
}

/**
 * A project copy: package.json (build replaced by the marker; with `buildNeverEnds`, a build that
 * prints it and then runs until stopped) and scripts/*.mjs; dist/ linked when `withDist`.
 */
async function makeClone(options: { withDist: boolean; buildNeverEnds?: boolean }): Promise<Clone> {
  const dir = await mkdtemp(join(tmpdir(), 'llmtray-clone-'));
  const pkg = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  pkg.scripts.build = `node -e "console.log('${BUILD_MARKER}')${options.buildNeverEnds === true ? '; setInterval(() => {}, 60000)' : ''}"`;
  await writeFile(join(dir, 'package.json'), JSON.stringify(pkg, null, 2));
  await mkdir(join(dir, 'scripts'));
  for (const file of ['build-and-run.mjs', 'running-daemon.mjs']) await copyFile(join(REPO, 'scripts', file), join(dir, 'scripts', file));
  if (options.withDist) await symlink(join(REPO, 'dist'), join(dir, 'dist'));
  return { dir };
}

interface NpmRun {
  npm: ChildProcess;
  npmPid: number;
  dataDir: string;
  /** stdout and stderr together, so far. */
  output(): string;
  exited: Promise<DaemonExit>;
  /** Resolves when both pipes are closed: every process that inherited them (npm, the launcher, the daemon) has ended. */
  pipesClosed: Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, LLMTRAY_HEADLESS: '1', npm_config_update_notifier: 'false' };
  delete env.LLMTRAY_HEADLESS_CMD;
  delete env.LLMTRAY_PARENT_PID;
  return env;
}

/** `npm start -- --data-dir DIR --port 0` in `clone`, or `npm run serve -- --demo …` with `script: 'serve'`. */
function npmStart(clone: Clone, dataDir: string, script: 'start' | 'serve' = 'start'): NpmRun {
  const args = script === 'start' ? ['start', '--'] : ['run', 'serve', '--', '--demo'];
  const npm = spawn('npm', [...args, '--data-dir', dataDir, '--port', '0'], { cwd: clone.dir, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  if (npm.pid === undefined) throw new Error('npm did not start');
  let output = '';
  const closes: Promise<void>[] = [];
  for (const stream of [npm.stdout, npm.stderr]) {
    stream.setEncoding('utf8').on('data', (text: string) => (output += text));
    closes.push(new Promise((done) => stream.once('close', () => done())));
  }
  const exited = new Promise<DaemonExit>((done) => npm.once('exit', (code, signal) => done({ code, signal })));
  return { npm, npmPid: npm.pid, dataDir, output: () => output, exited, pipesClosed: Promise.all(closes).then(() => undefined) };
}

/** Resolves with the match once `pattern` is in the output; rejects with the output when npm ends first. */
function waitForOutput(run: NpmRun, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((done, fail) => {
    const check = (): void => {
      const match = pattern.exec(run.output());
      if (match !== null) {
        run.npm.stdout?.off('data', check);
        run.npm.stderr?.off('data', check);
        done(match);
      }
    };
    run.npm.stdout?.on('data', check);
    run.npm.stderr?.on('data', check);
    void run.exited.then(({ code, signal }) => fail(new Error(`npm exited (code ${code}, signal ${signal}) before printing ${pattern}:\n${run.output()}`)));
    check();
  });
}

/** A clone, a fresh data dir and `npm start` (or `npm run serve`) in it. */
async function startInClone(script: 'start' | 'serve', clone: Clone): Promise<NpmRun> {
  const dataDir = await makeDataDir();
  const run = npmStart(clone, dataDir, script);
  cleanups.push(async () => {
    await removeDataDir(dataDir); // SIGKILLs whatever still names it
    await rm(clone.dir, { recursive: true, force: true });
  });
  return run;
}

/** `npm start` (or `npm run serve`) in a clone, resolved once the daemon prints its endpoint. */
async function startServing(script: 'start' | 'serve' = 'start'): Promise<NpmRun & { port: number }> {
  const run = await startInClone(script, await makeClone({ withDist: true }));
  const [, port] = await waitForOutput(run, /llmtray is serving at http:\/\/127\.0\.0\.1:(\d+)\/v1/);
  return { ...run, port: Number(port) };
}

/** The launcher: npm's child, since package.json `exec`s it (scripts/build-and-run.mjs, the launcher loaded in its process). */
async function launcherOf(run: NpmRun): Promise<number> {
  const children = (await processesNaming(run.dataDir)).filter((p) => p.ppid === run.npmPid);
  expect(children.map((p) => p.args)).toEqual([expect.stringContaining('scripts/build-and-run.mjs launch --demo')]);
  return children[0]!.pid;
}

/** Waits until every process holding npm's pipes has ended (bounded by STOP_TIMEOUT_MS, with what is left in the message). */
async function allEnded(run: NpmRun): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(async () => {
      const left = await processesNaming(run.dataDir);
      fail(new Error(`still running ${STOP_TIMEOUT_MS} ms after the signal:\n${left.map((p) => `${p.pid} ${p.args}`).join('\n')}\n--- output:\n${run.output()}`));
    }, STOP_TIMEOUT_MS);
  });
  try {
    await Promise.race([Promise.all([run.exited, run.pipesClosed]), late]);
  } finally {
    clearTimeout(timer);
  }
}

function portIsFree(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

/**
 * Npm, the launcher and the daemon have ended, and nothing naming the data dir is left: the
 * daemon's graceful stop waits for every engine, its warm spare included, so nothing may
 * outlive it. (Seen while this test was written: a spare left under PID 1 by a daemon that died
 * of a signal sent on reading its banner, printed before its handlers were installed.)
 */
async function expectNothingLeft(run: NpmRun & { port: number }): Promise<void> {
  await allEnded(run);
  const left = await processesNaming(run.dataDir);
  expect(left.map((p) => `${p.pid} (parent ${p.ppid}) ${p.args}`), run.output()).toEqual([]);
  expect(await portIsFree(run.port)).toBe(true);
}

const count = (text: string, part: string): number => text.split(part).length - 1;

describe('one signal stops everything npm start started', { timeout: STOP_TIMEOUT_MS + 90_000 }, () => {
  it('SIGTERM to npm stops the launcher, the daemon and its model server gracefully, and frees the port', async () => {
    const run = await startServing();
    const load = await runCli(['load', 'demo-tiny', '--data-dir', run.dataDir]);
    expect(load.code, load.stderr).toBe(0);
    expect(await modelServersUsing(run.dataDir)).toHaveLength(1);

    process.kill(run.npmPid, 'SIGTERM');

    await expectNothingLeft(run);
    const output = run.output();
    expect(count(output, 'SIGTERM: stopping every model server'), output).toBe(1);
    expect(output).not.toContain('exiting now');
  });

  it('SIGINT to npm alone (not its process group) stops everything gracefully too', async () => {
    const run = await startServing();

    process.kill(run.npmPid, 'SIGINT');

    await expectNothingLeft(run);
    expect(run.output()).toContain('SIGINT: stopping every model server');
    expect(run.output()).not.toContain('exiting now');
  });

  it('SIGTERM to npm while the daemon starts stops it gracefully once started, and it never says it serves', async () => {
    const run = await startInClone('start', await makeClone({ withDist: true }));
    // A line the daemon logs from inside its start-up, before it serves.
    await waitForOutput(run, /I daemon: memory budget/);

    process.kill(run.npmPid, 'SIGTERM');

    await allEnded(run);
    expect(await processesNaming(run.dataDir)).toEqual([]);
    expect(run.output()).toContain('SIGTERM: stopping every model server');
    expect(run.output()).not.toContain('llmtray is serving');
  });

  it.each(['the launcher', 'the daemon'] as const)('SIGTERM to %s alone stops everything, npm included', async (target) => {
    const run = await startServing();
    const pid = target === 'the launcher' ? await launcherOf(run) : (JSON.parse(await readFile(join(run.dataDir, 'daemon.json'), 'utf8')) as { pid: number }).pid;

    process.kill(pid, 'SIGTERM');

    await expectNothingLeft(run);
    expect(run.output()).toContain('SIGTERM: stopping every model server');
    expect(await run.exited).toEqual({ code: 0, signal: null });
  });

  it('a SIGKILL of npm, which no one can pass on, stops the launcher and the daemon by their parent ending', async () => {
    const run = await startServing();

    process.kill(run.npmPid, 'SIGKILL');

    await expectNothingLeft(run);
    expect(run.output()).toContain(`llmtray: the process that started the launcher (pid ${run.npmPid}) has ended; stopping llmtray`);
    expect(run.output()).toContain('SIGTERM: stopping every model server');
  });

  it('a SIGKILL of the launcher stops the headless daemon by its parent ending', async () => {
    const run = await startServing();
    const launcher = await launcherOf(run);

    process.kill(launcher, 'SIGKILL');

    await expectNothingLeft(run);
    expect(run.output()).toContain(`the process that started llmtray serve (pid ${launcher}) has ended: stopping every model server`);
  });
});

describe('npm run serve (the daemon in npm\'s child) and the build', { timeout: STOP_TIMEOUT_MS + 90_000 }, () => {
  it('SIGTERM to npm run serve\'s npm stops the daemon gracefully and frees the port', async () => {
    const run = await startServing('serve');

    process.kill(run.npmPid, 'SIGTERM');

    await expectNothingLeft(run);
    expect(run.output()).toContain('SIGTERM: stopping every model server');
    expect(run.output()).not.toContain('exiting now');
  });

  it('a SIGKILL of npm run serve\'s npm stops the daemon by its parent ending', async () => {
    const run = await startServing('serve');

    process.kill(run.npmPid, 'SIGKILL');

    await expectNothingLeft(run);
    expect(run.output()).toContain(`the process that started llmtray serve (pid ${run.npmPid}) has ended: stopping every model server`);
  });

  it('SIGTERM to npm during the build stops the build, and nothing is started after it', async () => {
    const run = await startInClone('start', await makeClone({ withDist: true, buildNeverEnds: true }));
    await waitForOutput(run, new RegExp(BUILD_MARKER));

    process.kill(run.npmPid, 'SIGTERM');

    // The build inherited npm's pipes: they close only once it has ended too.
    await allEnded(run);
    expect(run.output()).toContain('llmtray: the build was stopped by SIGTERM; not starting');
    expect(run.output()).not.toContain('llmtray is serving');
  });
});

describe('a second npm start on the same data dir', { timeout: 180_000 }, () => {
  it('refuses before building, naming the running pid and endpoint, even in a clone with nothing built', async () => {
    const first = await startServing();
    const daemonPid = (JSON.parse(await readFile(join(first.dataDir, 'daemon.json'), 'utf8')) as { pid: number }).pid;
    const fresh = await makeClone({ withDist: false });
    cleanups.push(() => rm(fresh.dir, { recursive: true, force: true }));

    const second = npmStart(fresh, first.dataDir);
    const exit = await second.exited;
    await second.pipesClosed;

    expect(exit).toEqual({ code: 1, signal: null });
    const said = second.output();
    expect(said).toContain(`another llmtray (pid ${daemonPid}) is already running on the data dir ${first.dataDir}, serving http://127.0.0.1:${first.port}/v1`);
    expect(said).not.toContain(BUILD_MARKER);
    // The first one serves on, untouched.
    expect(await portIsFree(first.port)).toBe(false);
  });
});
