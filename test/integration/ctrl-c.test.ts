// Ctrl-C under `npm start`, for real: the launcher started as npm starts it (`node
// dist/electron/launch.js --demo`, headless) leads its own process group, as a terminal's
// foreground job does, and the test signals the whole group as the terminal does. The daemon
// then hears one press twice, once from the "terminal" and once forwarded by the launcher,
// which used to force an exit that killed the model servers instead of stopping them.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SPARE_RECORD_ID } from '../../core/engine/supervisor/warm-spare.js';
import {
  enginesUsing,
  modelServersUsing,
  eventually,
  isProcessAlive,
  makeDataDir,
  removeDataDir,
  runCli,
  sleep,
  type DaemonExit,
} from '../support/daemon-process.js';

const LAUNCHER = resolve(import.meta.dirname, '..', '..', 'dist', 'electron', 'launch.js');

interface Launched {
  launcher: ChildProcess;
  /** The launcher's pid, which is also its process group's id. */
  pgid: number;
  daemonPid: number;
  dataDir: string;
  /** Everything the launcher and the daemon printed so far, stdout and stderr together. */
  output(): string;
  exited: Promise<DaemonExit>;
}

const launched: Pick<Launched, 'pgid' | 'dataDir' | 'exited'>[] = [];

afterEach(async () => {
  for (const run of launched.splice(0)) {
    try {
      process.kill(-run.pgid, 'SIGKILL');
    } catch {
      // The group has ended: the test stopped it.
    }
    await run.exited;
    // A failed test may leave engines (their own process groups) behind, stopped ones included.
    for (const engine of await enginesUsing(run.dataDir)) process.kill(engine.pid, 'SIGKILL');
    await removeDataDir(run.dataDir);
  }
});

/** Starts the launcher as `npm start` does and resolves once its daemon serves. */
async function launch(): Promise<Launched> {
  const dataDir = await makeDataDir();
  const env: NodeJS.ProcessEnv = { ...process.env, LLMTRAY_HEADLESS: '1' };
  delete env.LLMTRAY_HEADLESS_CMD;
  const launcher = spawn(process.execPath, [LAUNCHER, '--demo', '--data-dir', dataDir, '--port', '0'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let output = '';
  for (const stream of [launcher.stdout, launcher.stderr]) stream?.setEncoding('utf8').on('data', (text: string) => (output += text));
  const exited = new Promise<DaemonExit>((done) => launcher.once('exit', (code, signal) => done({ code, signal })));
  if (launcher.pid === undefined) throw new Error('the launcher did not start');
  const run = { launcher, pgid: launcher.pid, dataDir, output: () => output, exited };
  launched.push(run);

  // The data dir is fresh, so the daemon.json that appears is this daemon's.
  const served = eventually('the daemon writes daemon.json', async () => {
    if (!existsSync(join(dataDir, 'daemon.json'))) return undefined;
    return (JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')) as { pid: number }).pid;
  });
  const endedFirst = exited.then(({ code, signal }) => new Error(`the launcher exited (code ${code}, signal ${signal}) before its daemon served:\n${output}`));
  const daemonPid = await Promise.race([served, endedFirst]);
  if (daemonPid instanceof Error) throw daemonPid;
  return { ...run, daemonPid };
}

/** Loads demo-tiny through the CLI, as a person would, and returns the engines now running. */
async function loadAModel(run: Launched): Promise<number[]> {
  const load = await runCli(['load', 'demo-tiny', '--data-dir', run.dataDir]);
  expect(load.code, load.stderr).toBe(0);
  const engines = (await modelServersUsing(run.dataDir)).map((e) => e.pid);
  expect(engines).toHaveLength(1);
  return engines;
}

/**
 * The pids DATA_DIR/engines.json still lists: servers the daemon started and did not see end;
 * with `spares: false`, only model servers (not a warm spare waiting for a launch).
 */
function recordedEngines(dataDir: string, options: { spares: boolean } = { spares: true }): number[] {
  const file = JSON.parse(readFileSync(join(dataDir, 'engines.json'), 'utf8')) as { engines: { modelId: string; pid: number }[] };
  return file.engines.filter((e) => options.spares || e.modelId !== SPARE_RECORD_ID).map((e) => e.pid);
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe('Ctrl-C under npm start (the launcher and the headless daemon in one process group)', () => {
  it('one press stops every model server gracefully: the daemon and the launcher exit 0', async () => {
    const run = await launch();
    const engines = await loadAModel(run);
    expect(recordedEngines(run.dataDir, { spares: false })).toEqual(engines);

    process.kill(-run.pgid, 'SIGINT');

    expect(await run.exited).toEqual({ code: 0, signal: null });
    const output = run.output();
    expect(count(output, 'SIGINT: stopping every model server'), output).toBe(1);
    expect(output).not.toContain('exiting now');
    expect(isProcessAlive(run.daemonPid)).toBe(false);
    for (const pid of engines) expect(isProcessAlive(pid)).toBe(false);
    expect(await enginesUsing(run.dataDir)).toEqual([]);
    // Only the graceful stop clears these: the engines it saw end, and the daemon's own record.
    expect(recordedEngines(run.dataDir)).toEqual([]);
    expect(existsSync(join(run.dataDir, 'daemon.json'))).toBe(false);
  });

  it('a second press a second later forces: exit 130, and still no engine left', async () => {
    const run = await launch();
    const [engine] = (await loadAModel(run)) as [number];
    // A stopped engine cannot act on SIGTERM, so the graceful stop waits out the supervisor's
    // grace period (5 s) and is still running when the second press comes.
    process.kill(engine, 'SIGSTOP');

    process.kill(-run.pgid, 'SIGINT');
    await eventually('the daemon says it is stopping', async () => (run.output().includes('SIGINT: stopping') ? true : undefined), 30_000, 20);
    await sleep(1000);
    process.kill(-run.pgid, 'SIGINT');

    expect(await run.exited).toEqual({ code: 130, signal: null });
    expect(run.output()).toContain('SIGINT again: exiting now');
    await eventually('the forced exit killed the engine', async () => (isProcessAlive(engine) ? undefined : true), 45_000);
    expect(await enginesUsing(run.dataDir)).toEqual([]);
  });
});
