// The daemon's life as a process: what survives a restart (pins), what does not survive a stop
// (engines), and one daemon per data dir (the instance lock, stale locks taken over).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  enginesUsing,
  modelServersUsing,
  eventually,
  isProcessAlive,
  makeDataDir,
  removeDataDir,
  runCli,
  startDaemonProcess,
  type DaemonProcess,
} from '../support/daemon-process.js';
import { isServing } from '../../core/contracts/model-status.js';


let dataDir: string;
const started: DaemonProcess[] = [];

async function start(dir = dataDir): Promise<DaemonProcess> {
  const daemon = await startDaemonProcess({ dataDir: dir });
  started.push(daemon);
  return daemon;
}

beforeAll(async () => {
  dataDir = await makeDataDir();
});

afterAll(async () => {
  await Promise.all(started.map((d) => d.stop()));
  await removeDataDir(dataDir);
});

/** Waits until the model's engine is up, and returns its pid. */
async function servingPid(daemon: DaemonProcess, id: string): Promise<number> {
  return eventually(`${id} is serving`, async () => {
    const model = await daemon.model(id);
    return isServing(model.status.state) && model.upstream !== null ? model.upstream.pid : undefined;
  });
}

describe('pins, restarts and stops', () => {
  let first: DaemonProcess;
  let firstEnginePid: number;

  it('loads a model pinned through the admin API without any request', async () => {
    first = await start();
    const res = await first.api('/api/models/demo-tiny/pin', { method: 'POST' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { message: string }).message).toContain('demo-tiny pinned');
    firstEnginePid = await servingPid(first, 'demo-tiny');
    expect((await first.model('demo-tiny')).pinned).toBe(true);
  });

  it('SIGTERM stops every engine with the daemon, exits 0 and removes daemon.json and the lock', async () => {
    const engines = await enginesUsing(dataDir);
    expect(engines.map((e) => e.pid)).toContain(firstEnginePid);
    expect(engines.every((e) => e.ppid === first.pid)).toBe(true);

    const exit = await first.stop('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    expect(isProcessAlive(firstEnginePid)).toBe(false);
    expect(await enginesUsing(dataDir)).toEqual([]);
    expect(existsSync(join(dataDir, 'daemon.json'))).toBe(false);
    expect(existsSync(join(dataDir, 'daemon.lock'))).toBe(false);
  });

  it('a restart on the same data dir keeps the pin and loads the model without any request', async () => {
    const second = await start();
    expect((await second.model('demo-tiny')).pinned).toBe(true);
    const pid = await servingPid(second, 'demo-tiny');
    expect(pid).not.toBe(firstEnginePid);
    const others = (await second.state()).models.filter((m) => m.id !== 'demo-tiny');
    for (const model of others) expect(model.upstream, model.id).toBeNull();
  });

  it('SIGTERM in the middle of a load leaves no engine either', async () => {
    const daemon = started.at(-1) as DaemonProcess;
    // demo-draft fits beside the pinned demo-tiny; the answer does not matter, the load does.
    void fetch(`${daemon.endpoint}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-draft', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
    }).catch(() => undefined);
    await eventually('demo-draft is loading', async () => ((await daemon.model('demo-draft')).status.state === 'loading' ? true : undefined), 30_000, 20);
    const engines = await enginesUsing(dataDir);
    expect(engines.length).toBeGreaterThanOrEqual(1);

    expect(await daemon.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    for (const engine of engines) expect(isProcessAlive(engine.pid), engine.args).toBe(false);
    expect(await enginesUsing(dataDir)).toEqual([]);
  });
});

describe('one daemon per data dir', () => {
  it('a second daemon on the same data dir fails, naming the running one\'s pid', async () => {
    const running = await start();
    const second = await startDaemonProcess({ dataDir, startTimeoutMs: 30_000 }).then(
      (d) => {
        started.push(d);
        return null;
      },
      (error: unknown) => error as Error,
    );
    expect(second).toBeInstanceOf(Error);
    expect(second?.message).toContain(`pid ${running.pid}`);
    expect(second?.message).toContain('another llmtray daemon');
    // The loser must not have touched the winner's files.
    expect(JSON.parse(readFileSync(join(dataDir, 'daemon.json'), 'utf8')).pid).toBe(running.pid);
    expect(readFileSync(join(dataDir, 'daemon.lock'), 'utf8').trim()).toBe(String(running.pid));
    expect((await running.state()).models.length).toBeGreaterThan(0);
  });

  it('after a kill -9 of the daemon, the CLI says none runs, and the next daemon takes over the lock and ends the orphaned engine', async () => {
    const crashed = started.at(-1) as DaemonProcess;
    const orphanPid = await servingPid(crashed, 'demo-tiny');
    expect(await crashed.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    // Nobody stopped the engine: it is the orphan the next start must end.
    expect(isProcessAlive(orphanPid)).toBe(true);
    expect(readFileSync(join(dataDir, 'daemon.lock'), 'utf8').trim()).toBe(String(crashed.pid));

    const status = await runCli(['status', '--data-dir', dataDir]);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain('no llmtray daemon is running');
    expect(status.stderr).toContain(`pid ${crashed.pid}`);

    const next = await start();
    expect(readFileSync(join(dataDir, 'daemon.lock'), 'utf8').trim()).toBe(String(next.pid));
    // Logged before daemon.json is written, but on the stderr pipe, which this process may read after the file.
    expect(await eventually('the orphan sweep is logged', async () => (next.stderr().includes('model server(s) left by an earlier run') ? next.stderr() : undefined))).toContain(
      'ended 1 model server(s) left by an earlier run',
    );
    expect(isProcessAlive(orphanPid)).toBe(false);
    const pid = await servingPid(next, 'demo-tiny');
    expect((await modelServersUsing(dataDir)).map((e) => e.pid)).toEqual([pid]);
    expect((await runCli(['status', '--data-dir', dataDir])).code).toBe(0);
  });
});
