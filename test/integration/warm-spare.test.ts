// The supervisor's warm spare with the real embedded engine: adopted by a launch, replaced when
// it dies (never adopted dead), ended for a launch it cannot run, and never left behind — not
// by close(), not by a crashed supervisor (the next one's sweep), not by a daemon killed with -9.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LaunchError } from '../../core/engine/failure-classifier.js';
import type { LaunchSpec } from '../../core/engine/launch-spec.js';
import { defaultEngineCommand, embeddedEngineCommand, embeddedEntryPath } from '../../core/engine/supervisor/engine-command.js';
import { isRunning, readCommandLine } from '../../core/engine/supervisor/process-tree.js';
import { Supervisor } from '../../core/engine/supervisor/supervisor.js';
import { SPARE_RECORD_ID } from '../../core/engine/supervisor/warm-spare.js';
import { eventually, startDaemonProcess, removeDataDir, type DaemonProcess } from '../support/daemon-process.js';
import { tinyModel } from '../support/test-models.js';
import { realClock, type Clock } from '../../core/common/clock.js';

let tiny: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  if (!existsSync(embeddedEntryPath())) throw new Error(`${embeddedEntryPath()} is missing: run npm run build first (npm test does)`);
  tiny = await tinyModel();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function supervisorWithSpare(options: { dataDir?: string; gpuLayers?: number | 'all'; launchHoldMs?: number; clock?: Clock } = {}): Promise<{ supervisor: Supervisor; dataDir: string; notes: string[] }> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'llmtray-spare-')));
  const notes: string[] = [];
  const supervisor = await Supervisor.start({
    specFor: (modelId): LaunchSpec => ({
      modelId, engine: 'embedded', modelPath: modelId === 'missing' ? join(tmpdir(), 'llmtray-no-such-model.gguf') : tiny, contextTokens: 512, gpuLayers: modelId === 'on-gpu' ? 'all' : 0, threads: 1, aliases: [], extraArgs: [], env: {},
    }),
    engineCommand: defaultEngineCommand({ llamaServerPath: null }),
    footprint: () => 0,
    dataDir,
    ...(options.clock === undefined ? {} : { clock: options.clock }),
    warmSpare: {
      command: async () => embeddedEngineCommand(), env: {}, note: (line) => notes.push(line),
      ...(options.launchHoldMs === undefined ? {} : { launchHoldMs: options.launchHoldMs }),
    },
  });
  cleanups.push(async () => {
    await supervisor.close();
    if (options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true });
  });
  return { supervisor, dataDir, notes };
}

/** The spare's pid once it is waiting (its runtime started). */
function readySpare(supervisor: Supervisor, not?: number): Promise<number> {
  return eventually('a warm spare is waiting', async () => {
    const spare = supervisor.spareStatus();
    return spare !== null && spare.phase === 'ready' && spare.pid !== not ? spare.pid : undefined;
  }, 60_000, 50);
}

async function chat(supervisor: Supervisor, modelId: string): Promise<number> {
  const endpoint = supervisor.endpointFor(modelId);
  if (endpoint === null) throw new Error(`${modelId} is not ready`);
  const response = await fetch(`http://127.0.0.1:${endpoint.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${endpoint.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }], max_tokens: 2 }),
  });
  return response.status;
}

async function recorded(dataDir: string): Promise<{ modelId: string; pid: number }[]> {
  const text = await readFile(join(dataDir, 'engines.json'), 'utf8').catch(() => '{"engines":[]}');
  return (JSON.parse(text) as { engines: { modelId: string; pid: number }[] }).engines;
}

describe('the warm spare', () => {
  it('is adopted by the next launch, which then serves from the spare\'s process; another spare follows the launch', async () => {
    const { supervisor, dataDir } = await supervisorWithSpare();
    supervisor.setSpareWanted(true);
    const sparePid = await readySpare(supervisor);
    expect(supervisor.runningPids()).toContain(sparePid);
    expect(await recorded(dataDir)).toContainEqual(expect.objectContaining({ modelId: SPARE_RECORD_ID, pid: sparePid }));

    await supervisor.launch('tiny', 'minimal');
    expect(supervisor.endpointFor('tiny')?.pid).toBe(sparePid);
    expect(await chat(supervisor, 'tiny')).toBe(200);
    expect(supervisor.logs('tiny').join('\n')).toContain(`in the warm spare (pid ${sparePid}`);
    // engines.json now holds it under the model's id, so a crash's sweep ends it as the model's server.
    expect(await recorded(dataDir)).toContainEqual(expect.objectContaining({ modelId: 'tiny', pid: sparePid }));

    const next = await readySpare(supervisor, sparePid);
    expect(next).not.toBe(sparePid);
  });

  it('is the launch\'s server itself: a load that fails in it reports the spare\'s own start in its log tail, under its pid', async () => {
    const { supervisor } = await supervisorWithSpare();
    supervisor.setSpareWanted(true);
    const sparePid = await readySpare(supervisor);
    const failed = await supervisor.launch('missing', 'minimal').then(() => null, (error: unknown) => error);
    expect(failed).toBeInstanceOf(LaunchError);
    expect(supervisor.status('missing')?.pid).toBe(sparePid);
    // The classifier read the process's whole output, its life as a spare first: one tail, one process.
    const tail = (failed as LaunchError).logTail.join('\n');
    expect(tail).toMatch(/spare: runtime ready/);
    expect(tail).toMatch(/spare: adopted by a launch/);
  });

  it('that dies is replaced, and the launch after runs in the replacement, never in the dead one', async () => {
    const { supervisor, notes } = await supervisorWithSpare();
    supervisor.setSpareWanted(true);
    const dead = await readySpare(supervisor);
    process.kill(dead, 'SIGKILL');
    const replacement = await readySpare(supervisor, dead);
    expect(await isRunning(dead)).toBe(false);
    expect(notes.join('\n')).toContain('SIGKILL');

    await supervisor.launch('tiny', 'minimal');
    expect(supervisor.endpointFor('tiny')?.pid).toBe(replacement);
    expect(await chat(supervisor, 'tiny')).toBe(200);
  });

  it('that a launch cannot use (layers asked on a GPU) is ended before that launch starts its own process', async () => {
    const { supervisor } = await supervisorWithSpare();
    supervisor.setSpareWanted(true);
    const sparePid = await readySpare(supervisor);
    await supervisor.launch('on-gpu', 'full');
    const served = supervisor.endpointFor('on-gpu')?.pid;
    expect(served).not.toBe(sparePid);
    expect(await isRunning(sparePid)).toBe(false);
    expect(await chat(supervisor, 'on-gpu')).toBe(200);
  });

  it('is not started while a request is in flight, only once it is over', async () => {
    const { supervisor } = await supervisorWithSpare();
    await supervisor.launch('tiny', 'minimal');
    const claim = supervisor.claim('tiny');
    if (claim === null) throw new Error('tiny is not ready');
    supervisor.setSpareWanted(true);
    // Its start would take CPU from the request's answer on a small machine. Waited out well past
    // the quiet second a spare would otherwise wait, so a spare started regardless would be seen.
    await new Promise((done) => setTimeout(done, 2_500));
    expect(supervisor.spareStatus()).toBeNull();
    claim.release();
    await readySpare(supervisor);
  });

  it('is ended when no longer wanted, and by close()', async () => {
    const { supervisor } = await supervisorWithSpare();
    supervisor.setSpareWanted(true);
    const first = await readySpare(supervisor);
    supervisor.setSpareWanted(false);
    await eventually('the unwanted spare is gone', async () => ((await isRunning(first)) ? undefined : true), 45_000, 20);
    expect(supervisor.spareStatus()).toBeNull();

    supervisor.setSpareWanted(true);
    const second = await readySpare(supervisor);
    await supervisor.close();
    expect(await isRunning(second)).toBe(false);
  });

  it("left by a supervisor that never closed is swept as an orphan by the next one on the same data dir", async () => {
    const crashed = await supervisorWithSpare();
    crashed.supervisor.setSpareWanted(true);
    const orphan = await readySpare(crashed.supervisor);
    // Its parent is alive (this process), so its stdin stays open: only the sweep can end it.
    const next = await supervisorWithSpare({ dataDir: crashed.dataDir });
    crashed.supervisor.setSpareWanted(false);
    expect(next.supervisor.orphans.ended.map((r) => r.pid)).toEqual([orphan]);
    expect(await isRunning(orphan)).toBe(false);
  });
});

describe('a spare started for a launch that waits for an eviction', () => {
  it('starts at the hint though no spare is wanted, lives through the eviction, and is the launch\'s process after it', async () => {
    const { supervisor } = await supervisorWithSpare();
    supervisor.setSpareWanted(false);
    await supervisor.launch('tiny', 'minimal');
    const evictedPid = supervisor.endpointFor('tiny')?.pid;
    expect(await supervisor.prepareLaunch('next', 'minimal')).toBe(true);
    const sparePid = await eventually('a spare started for the launch', async () => supervisor.spareStatus()?.pid, 45_000, 5);
    // Its runtime starts while the evicted server stops: started before the eviction, not after.
    expect(await isRunning(evictedPid ?? -1)).toBe(true);
    expect(await supervisor.evict('tiny')).toBe('stopped');
    // The verdict is still "no spare", said again as the daemon does after every event: the launch's hold keeps it.
    supervisor.setSpareWanted(false);
    expect(supervisor.spareStatus()?.pid).toBe(sparePid);

    await supervisor.launch('next', 'minimal');
    expect(supervisor.endpointFor('next')?.pid).toBe(sparePid);
    expect(await chat(supervisor, 'next')).toBe(200);
    expect(supervisor.logs('next').join('\n')).toContain(`in the warm spare (pid ${sparePid}`);
    expect(supervisor.spareStatus()).toBeNull();
  });

  it('that no launch adopts is ended when its hold lapses, when no spare is wanted', async () => {
    const { supervisor } = await supervisorWithSpare({ launchHoldMs: 1_500 });
    supervisor.setSpareWanted(false);
    expect(await supervisor.prepareLaunch('tiny', 'minimal')).toBe(true);
    const sparePid = await eventually('a spare started for the launch', async () => supervisor.spareStatus()?.pid, 45_000, 5);
    await eventually('the unused spare ended', async () => (supervisor.spareStatus() === null && !(await isRunning(sparePid)) ? true : undefined), 30_000, 50);
  });

  it('is ended when its hold lapses though the hold’s timer fires a moment before the clock reads the deadline', async () => {
    // Node's timers run on the loop's millisecond clock, performance.now() on another: a timer
    // can fire while the monotonic reading is a fraction of a millisecond short of the deadline.
    // Made certain here with a clock that reads 5 ms behind its timers. Before, the spare then
    // counted as held at the timer and was never looked at again.
    const lagging: Clock = { ...realClock, elapsed: () => realClock.elapsed() - 5 };
    const { supervisor } = await supervisorWithSpare({ launchHoldMs: 1_500, clock: lagging });
    supervisor.setSpareWanted(false);
    expect(await supervisor.prepareLaunch('tiny', 'minimal')).toBe(true);
    const sparePid = await eventually('a spare started for the launch', async () => supervisor.spareStatus()?.pid, 45_000, 5);
    await eventually('the unused spare ended', async () => (supervisor.spareStatus() === null && !(await isRunning(sparePid)) ? true : undefined), 30_000, 50);
  });

  it('is not started for a launch it could not run (layers on a GPU), nor for a model already running', async () => {
    const { supervisor } = await supervisorWithSpare();
    supervisor.setSpareWanted(false);
    expect(await supervisor.prepareLaunch('on-gpu', 'full')).toBe(false);
    expect(supervisor.spareStatus()).toBeNull();
    await supervisor.launch('tiny', 'minimal');
    expect(await supervisor.prepareLaunch('tiny', 'minimal')).toBe(false);
    expect(supervisor.spareStatus()).toBeNull();
  });
});

describe('the warm spare of the daemon', () => {
  let daemon: DaemonProcess | undefined;
  afterAll(async () => {
    await daemon?.stop('SIGKILL');
    if (daemon) await removeDataDir(daemon.dataDir);
  });

  /** The pid of the daemon's spare, once engines.json records one that runs as a spare. */
  function daemonSpare(running: DaemonProcess, not?: number): Promise<number> {
    return eventually('the daemon keeps a warm spare', async () => {
      const record = (await recorded(running.dataDir)).find((r) => r.modelId === SPARE_RECORD_ID && r.pid !== not);
      return record !== undefined && (await readCommandLine(record.pid))?.includes('--spare') ? record.pid : undefined;
    }, 60_000);
  }

  it('serves a cold request from the spare, which the memory picture shows until then', async () => {
    daemon = await startDaemonProcess();
    const running = daemon;
    const sparePid = await daemonSpare(running);
    await eventually('the memory picture shows the spare', async () => ((await running.state()).budget.holders.some((h) => h.kind === 'spare') ? true : undefined));
    const response = await fetch(`${running.endpoint}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-tiny', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
    });
    expect(response.status).toBe(200);
    expect((await running.model('demo-tiny')).upstream?.pid).toBe(sparePid);
  });

  it('left by a daemon killed with -9 exits by itself (its stdin ends), leaving no orphan before any sweep', async () => {
    const running = daemon;
    if (running === undefined) throw new Error('no daemon');
    const adopted = (await running.model('demo-tiny')).upstream?.pid;
    const sparePid = await daemonSpare(running, adopted);
    expect(await running.stop('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await eventually('the spare has exited', async () => ((await isRunning(sparePid)) ? undefined : true), 30_000, 50);
  });
});
