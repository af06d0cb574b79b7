// scripts/running-daemon.mjs answers `npm start`'s "is one already running here?" before
// anything is built, so it cannot import the daemon's own code: these check that its copy of
// the data dir rule agrees with core/catalog/paths.ts, and that it reads the lock as the
// daemon's lock does (a live llmtray holds the dir; a dead pid or another program does not).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dataDir, type PlatformFacts } from '../../../core/catalog/paths.js';
// @ts-expect-error -- a plain .mjs script without type declarations
import * as script from '../../../scripts/running-daemon.mjs';

type Holder = { pid: number; endpoint: string | null };
const { defaultDataDir, dataDirFor, runningDaemon, dataDirTakenSentence } = script as {
  defaultDataDir(facts: PlatformFacts): string;
  dataDirFor(options: { mode: 'launch' | 'serve'; args: readonly string[]; env: Record<string, string | undefined>; platform?: NodeJS.Platform; homeDir?: string }): string;
  runningDaemon(dataDir: string): Holder | null;
  dataDirTakenSentence(dataDir: string, holder: Holder): string;
};

describe('the data dir npm start checks', () => {
  it.each<[string, PlatformFacts]>([
    ['Linux', { platform: 'linux', env: {}, homeDir: '/home/ann' }],
    ['Linux with XDG_DATA_HOME', { platform: 'linux', env: { XDG_DATA_HOME: '/data' }, homeDir: '/home/ann' }],
    ['Linux with a relative XDG_DATA_HOME (ignored)', { platform: 'linux', env: { XDG_DATA_HOME: 'data' }, homeDir: '/home/ann' }],
    ['macOS', { platform: 'darwin', env: {}, homeDir: '/Users/ann' }],
    ['Windows with APPDATA', { platform: 'win32', env: { APPDATA: 'C:\\Users\\ann\\AppData\\Roaming' }, homeDir: 'C:\\Users\\ann' }],
    ['Windows without APPDATA', { platform: 'win32', env: {}, homeDir: 'C:\\Users\\ann' }],
  ])('is the daemon\'s default on %s', (_name, facts) => {
    expect(defaultDataDir(facts)).toBe(dataDir(facts));
  });

  it('is --data-dir when given, in either spelling, resolved against the working directory', () => {
    expect(dataDirFor({ mode: 'serve', args: ['--demo', '--data-dir', 'here'], env: {} })).toBe(resolve('here'));
    expect(dataDirFor({ mode: 'launch', args: ['--data-dir=/x/y'], env: { LLMTRAY_DATA_DIR: '/other' } })).toBe('/x/y');
  });

  it('is LLMTRAY_DATA_DIR for the launcher (the desktop app reads it) but not for serve, which does not', () => {
    const home = { platform: 'linux' as const, homeDir: '/home/ann' };
    expect(dataDirFor({ mode: 'launch', args: [], env: { LLMTRAY_DATA_DIR: '/desk' }, ...home })).toBe('/desk');
    expect(dataDirFor({ mode: 'serve', args: [], env: { LLMTRAY_DATA_DIR: '/desk' }, ...home })).toBe('/home/ann/.local/share/llmtray');
  });
});

describe('runningDaemon', () => {
  const started: ChildProcess[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const child of started.splice(0)) child.kill('SIGKILL');
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function dataDirHeldBy(pid: number, daemonJson?: object): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'llmtray-lock-'));
    dirs.push(dir);
    await writeFile(join(dir, 'daemon.lock'), `${pid}\n`);
    if (daemonJson !== undefined) await writeFile(join(dir, 'daemon.json'), JSON.stringify(daemonJson));
    return dir;
  }

  /** A live process whose command line names llmtray, as the lock's holder. */
  function llmtrayHolder(): number {
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'llmtray-serve'], { stdio: 'ignore' });
    started.push(child);
    return child.pid!;
  }

  /** A live process that is not llmtray (`sleep`: node's own path may name the checkout, as a fetched Node in .ci does). */
  function otherProgram(): number {
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    started.push(child);
    return child.pid!;
  }

  it('is the live llmtray in the lock, with the endpoint its daemon.json records', async () => {
    const pid = llmtrayHolder();
    const dir = await dataDirHeldBy(pid, { pid, port: 4321, endpoint: 'http://127.0.0.1:4321/v1', origin: 'http://127.0.0.1:4321' });
    expect(runningDaemon(dir)).toEqual({ pid, endpoint: 'http://127.0.0.1:4321/v1' });
  });

  it('has no endpoint while the holder is starting, or when daemon.json is an older run\'s', async () => {
    const pid = llmtrayHolder();
    expect(runningDaemon(await dataDirHeldBy(pid))).toEqual({ pid, endpoint: null });
    expect(runningDaemon(await dataDirHeldBy(pid, { pid: pid + 1, endpoint: 'http://127.0.0.1:1/v1' }))).toEqual({ pid, endpoint: null });
  });

  it('is null without a lock, for a lock whose pid has ended, and for a pid reused by another program', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'llmtray-lock-'));
    dirs.push(empty);
    expect(runningDaemon(empty)).toBeNull();

    const ended = spawn(process.execPath, ['-e', '0', 'llmtray-serve'], { stdio: 'ignore' });
    await new Promise((done) => ended.once('exit', done));
    expect(runningDaemon(await dataDirHeldBy(ended.pid!))).toBeNull();

    expect(runningDaemon(await dataDirHeldBy(otherProgram()))).toBeNull();
  });

  it('is refused in words that name the pid, the data dir, the endpoint and what to do', () => {
    expect(dataDirTakenSentence('/d', { pid: 77, endpoint: 'http://127.0.0.1:11435/v1' })).toBe(
      'llmtray: another llmtray (pid 77) is already running on the data dir /d, serving http://127.0.0.1:11435/v1. Stop it first (Ctrl-C where it runs, or kill 77), or pass another --data-dir. Nothing was built or started: a rebuild of dist/ would change the code under the running one.',
    );
    expect(dataDirTakenSentence('/d', { pid: 77, endpoint: null })).toContain('still starting (no endpoint recorded yet)');
  });
});
