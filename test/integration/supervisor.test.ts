// The supervisor against real child processes: test/support/fake-engine.mjs speaks the
// engines' flags and /health and misbehaves on request (slow load, ignored SIGTERM, a
// grandchild, llama.cpp's real failure output). Nothing here asserts a duration.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LaunchError } from '../../core/engine/failure-classifier.js';
import { EMBEDDED_CAPABILITIES, type LaunchSpec } from '../../core/engine/launch-spec.js';
import { RUNTIME_PRIOR_BYTES, RuntimeOverhead } from '../../core/engine/runtime-overhead.js';
import { commandLineHash } from '../../core/engine/supervisor/engine-registry.js';
import { isRunning, treeResidentBytes } from '../../core/engine/supervisor/process-tree.js';
import type { SpawnFunction } from '../../core/engine/supervisor/server-process.js';
import { Supervisor, type SupervisorDeps } from '../../core/engine/supervisor/supervisor.js';
import type { Claim } from '../../core/engine/supervisor/server-claims.js';
import type { ServerEvent } from '../../core/contracts/server-events.js';
import { FakeClock } from '../support/fake-clock.js';
import type { LaunchLevel } from '../../core/contracts/launch-level.js';
import type { Placement } from '../../core/contracts/plan.js';

const FAKE_ENGINE = fileURLToPath(new URL('../support/fake-engine.mjs', import.meta.url));
const fixture = (name: string): string => fileURLToPath(new URL(`../fixtures/llama-logs/${name}`, import.meta.url));
const MIB = 1024 * 1024;

let dataDir: string;
const supervisors: Supervisor[] = [];
const strays: ChildProcess[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-supervisor-'));
});
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.close()));
  for (const child of strays.splice(0)) child.kill('SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
});

/** A supervisor whose models run the fake engine with the given test flags; counts spawns. */
async function supervisorWith(
  fakeFlags: Record<string, string[]>,
  overrides: Partial<SupervisorDeps> = {},
  /** Models the fake engine plays a llama-server for; the rest it plays the embedded engine. */
  llamaServers: readonly string[] = [],
): Promise<{ supervisor: Supervisor; spawns: string[][] }> {
  const spawns: string[][] = [];
  const countingSpawn: SpawnFunction = (command, args, options) => {
    spawns.push([...args]);
    return spawn(command, args, options);
  };
  const supervisor = await Supervisor.start({
    specFor: (modelId): LaunchSpec => ({
      modelId,
      engine: llamaServers.includes(modelId) ? 'llama-server' : 'embedded',
      modelPath: `/models/${modelId}.gguf`,
      contextTokens: 2048,
      gpuLayers: 'all',
      threads: 1,
      aliases: [],
      extraArgs: fakeFlags[modelId] ?? [],
      env: {},
    }),
    engineCommand: () => ({ command: process.execPath, args: [FAKE_ENGINE], capabilities: EMBEDDED_CAPABILITIES }),
    footprint: (_modelId: string, level: LaunchLevel) => (level === 'minimal' ? 0 : 100 * MIB),
    dataDir,
    spawn: countingSpawn,
    stopGraceMs: 1_000,
    ...overrides,
  });
  supervisors.push(supervisor);
  return { supervisor, spawns };
}

/** Every lifecycle event the supervisor reports, in order, as `type model` plus the rest. */
function recordEvents(supervisor: Supervisor): ServerEvent[] {
  const events: ServerEvent[] = [];
  supervisor.onServerEvent((event) => events.push(event));
  return events;
}

const typesOf = (events: readonly ServerEvent[]): string[] => events.map((e) => `${e.type} ${e.modelId}`);

/** The value after `flag` in the argv of a spawn. */
const argOf = (argv: string[] | undefined, flag: string): string | undefined => argv?.[argv.indexOf(flag) + 1];

/** The number the fake engine printed after `label`. */
function printed(supervisor: Supervisor, modelId: string, label: string): number {
  const line = supervisor.logs(modelId).find((l) => l.startsWith(`fake-engine: ${label} `));
  if (line === undefined) throw new Error(`the fake engine did not print '${label}'`);
  return Number(line.slice(`fake-engine: ${label} `.length));
}

/**
 * Waits for `condition`, looking every 20 ms. Bounded in time, not in looks: 500 looks were 10 s
 * idle and could be less than a busy machine takes to start or end a fake engine; the bound is
 * just under the test's (60 s), so a failure names what was not seen.
 */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const giveUpAt = Date.now() + 45_000;
  while (Date.now() < giveUpAt) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`gave up waiting until ${what}`);
}

describe('Supervisor with the fake engine', () => {
  it('launches, serves with its per-launch key, and evicts leaving nothing behind', async () => {
    const { supervisor } = await supervisorWith({});
    await supervisor.launch('alpha', 'full');
    const endpoint = supervisor.endpointFor('alpha');
    expect(endpoint).not.toBeNull();
    if (endpoint === null) return;
    expect(endpoint.level).toBe('full');
    const url = `http://127.0.0.1:${endpoint.port}/v1/chat/completions`;
    const body = JSON.stringify({ model: 'alpha', messages: [{ role: 'user', content: 'hi' }] });
    const withKey = await fetch(url, { method: 'POST', body, headers: { authorization: `Bearer ${endpoint.apiKey}` } });
    expect(((await withKey.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content).toBe('echo: hi');
    expect((await fetch(url, { method: 'POST', body })).status).toBe(401);
    expect(await supervisor.measure()).toEqual(new Map([['alpha', 100 * MIB]]));
    const registry = JSON.parse(await readFile(join(dataDir, 'engines.json'), 'utf8')) as { engines: { pid: number }[] };
    expect(registry.engines.map((e) => e.pid)).toEqual([endpoint.pid]);

    await supervisor.evict('alpha');
    expect(await isRunning(endpoint.pid)).toBe(false);
    expect(supervisor.endpointFor('alpha')).toBeNull();
    expect(await supervisor.measure()).toEqual(new Map());
    expect(supervisor.status('alpha')?.phase).toBe('exited');
    await until(async () => (await readFile(join(dataDir, 'engines.json'), 'utf8')).includes('"engines": []'), 'the registry is empty');
    await supervisor.evict('alpha'); // idempotent
  });

  it('gives the engine its key in a 0600 file, never on the argv, and removes the file when the server ends', async () => {
    const { supervisor, spawns } = await supervisorWith({});
    await supervisor.launch('alpha', 'full');
    const key = supervisor.endpointFor('alpha')?.apiKey ?? '';
    expect(key).toMatch(/^[0-9a-f]{48}$/);
    expect(spawns[0]?.some((arg) => arg.includes(key))).toBe(false);
    expect(spawns[0]).not.toContain('--api-key');
    const keyFile = argOf(spawns[0], '--api-key-file') ?? '';
    expect(keyFile.startsWith(join(dataDir, 'engine-keys'))).toBe(true);
    expect(await readFile(keyFile, 'utf8')).toBe(`${key}\n`);
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dataDir, 'engine-keys'))).mode & 0o777).toBe(0o700);
    expect(supervisor.logs('alpha').some((line) => line.includes(key))).toBe(false);

    await supervisor.evict('alpha');
    expect(existsSync(keyFile)).toBe(false);
    await supervisor.launch('alpha', 'full');
    const second = argOf(spawns[1], '--api-key-file');
    expect(second).not.toBe(keyFile); // a fresh file per launch keeps each command line unique
    process.kill(supervisor.endpointFor('alpha')?.pid ?? -1, 'SIGKILL');
    await until(() => supervisor.status('alpha')?.phase === 'exited', 'the killed server is seen to exit');
    expect(await readdir(join(dataDir, 'engine-keys'))).toEqual([]);
  });

  it('passes the key itself only to a build without --api-key-file', async () => {
    const flags = new Set([...EMBEDDED_CAPABILITIES.flags].filter((flag) => flag !== '--api-key-file'));
    const { supervisor, spawns } = await supervisorWith(
      {},
      { engineCommand: () => ({ command: process.execPath, args: [FAKE_ENGINE], capabilities: { ...EMBEDDED_CAPABILITIES, flags } }) },
    );
    await supervisor.launch('old', 'full');
    expect(argOf(spawns[0], '--api-key')).toBe(supervisor.endpointFor('old')?.apiKey);
    expect(spawns[0]).not.toContain('--api-key-file');
    expect(existsSync(join(dataDir, 'engine-keys'))).toBe(false);
  });

  it('notices readiness from the log line, with no polling at all', async () => {
    // The clock never moves, so the backoff poll and the load timeout never fire: only the
    // engine's "model loaded" line can end the wait.
    const { supervisor } = await supervisorWith({ beta: ['--fake-ready-after', '150'] }, { clock: new FakeClock() });
    await supervisor.launch('beta', 'full');
    expect(supervisor.status('beta')?.phase).toBe('ready');
  });

  it('falls back to polling /health for an engine that prints no ready line', async () => {
    const { supervisor } = await supervisorWith({ quiet: ['--fake-silent', '--fake-ready-after', '100'] });
    await supervisor.launch('quiet', 'full');
    expect(supervisor.logs('quiet').some((l) => /model loaded|listening on/.test(l))).toBe(false);
    expect(supervisor.endpointFor('quiet')).not.toBeNull();
  });

  it('shows load progress from the 503 body while loading', async () => {
    const { supervisor } = await supervisorWith({ slow: ['--fake-progress', '--fake-ready-after', '1500'] });
    const launched = supervisor.launch('slow', 'full');
    let seen: number | null = null;
    await until(() => {
      seen = supervisor.status('slow')?.loadProgress ?? null;
      return seen !== null;
    }, 'a load progress is reported');
    expect(seen).toBeGreaterThanOrEqual(0);
    expect(seen).toBeLessThan(1);
    await launched;
    expect(supervisor.status('slow')?.loadProgress).toBeNull();
  });

  it('tells its load-progress listeners each new fraction, only while loading, as status() says it from then on', async () => {
    const { supervisor } = await supervisorWith({ slow: ['--fake-progress', '--fake-ready-after', '1500'] });
    const heard: { modelId: string; fraction: number | null; status: number | null; phase: string | undefined }[] = [];
    supervisor.onLoadProgress(({ modelId, fraction }) => {
      const status = supervisor.status(modelId);
      heard.push({ modelId, fraction, status: status?.loadProgress ?? null, phase: status?.phase });
    });
    await supervisor.launch('slow', 'full');
    expect(heard.length).toBeGreaterThan(0);
    for (const note of heard) expect(note).toEqual({ modelId: 'slow', fraction: note.status, status: note.status, phase: 'loading' });
  });

  it('tells its load-progress listeners nothing for an engine that reports no fraction (no news, though each check says so)', async () => {
    const { supervisor } = await supervisorWith({ plain: ['--fake-silent', '--fake-ready-after', '300'] });
    const heard: (number | null)[] = [];
    supervisor.onLoadProgress(({ fraction }) => heard.push(fraction));
    await supervisor.launch('plain', 'full');
    expect(heard).toEqual([]);
  });

  it('remembers how long the last load took, through the next load, for estimating its progress', async () => {
    const { supervisor } = await supervisorWith({ slow: ['--fake-ready-after', '300'] });
    await supervisor.launch('slow', 'full');
    const first = supervisor.status('slow')!;
    // Measured on the monotonic clock: at least the fake engine's 300 ms before it is ready.
    expect(first.lastLoadMs).toBeGreaterThanOrEqual(300);
    await supervisor.evict('slow');
    const again = supervisor.launch('slow', 'full');
    await until(() => supervisor.status('slow')?.phase === 'loading', 'the second load is under way');
    // While it loads, the figure is still the first load's: what the estimate needs.
    expect(supervisor.status('slow')?.lastLoadMs).toBe(first.lastLoadMs);
    await again;
    const second = supervisor.status('slow')!;
    expect(second.lastLoadMs).toBeGreaterThanOrEqual(300);
  });

  it('starts one process for concurrent launches of one model', async () => {
    const { supervisor, spawns } = await supervisorWith({ gamma: ['--fake-ready-after', '200'] });
    await Promise.all([supervisor.launch('gamma', 'full'), supervisor.launch('gamma', 'full'), supervisor.launch('gamma', 'full')]);
    expect(spawns).toHaveLength(1);
    await supervisor.launch('gamma', 'full'); // already ready: no new process
    expect(spawns).toHaveLength(1);
  });

  it('relaunches at another level, with that level’s argv', async () => {
    const { supervisor, spawns } = await supervisorWith({});
    await supervisor.launch('delta', 'full');
    const firstPid = supervisor.endpointFor('delta')?.pid ?? -1;
    await supervisor.launch('delta', 'minimal');
    expect(spawns).toHaveLength(2);
    expect(argOf(spawns[0], '-ngl')).toBe('all');
    expect(argOf(spawns[1], '-ngl')).toBe('0');
    expect(Number(argOf(spawns[1], '-c'))).toBeLessThan(2048);
    expect(await isRunning(firstPid)).toBe(false);
    expect(supervisor.endpointFor('delta')?.level).toBe('minimal');
  });

  it('relaunches on a fresh port when the engine finds its port taken', async () => {
    const { supervisor, spawns } = await supervisorWith({ racer: ['--fake-port-taken-once', join(dataDir, 'taken')] });
    await supervisor.launch('racer', 'full');
    expect(spawns).toHaveLength(2);
    expect(supervisor.logs('racer').some((l) => l.includes("couldn't bind HTTP server socket"))).toBe(true);
    expect(supervisor.endpointFor('racer')?.port).toBe(Number(argOf(spawns[1], '--port')));
  });

  it('SIGKILLs an engine that ignores SIGTERM once the grace period is over', async () => {
    const { supervisor } = await supervisorWith({ stubborn: ['--fake-ignore-sigterm'] }, { stopGraceMs: 300 });
    await supervisor.launch('stubborn', 'full');
    const pid = supervisor.endpointFor('stubborn')?.pid ?? -1;
    await supervisor.evict('stubborn');
    expect(await isRunning(pid)).toBe(false);
    const log = supervisor.logs('stubborn');
    expect(log.some((l) => l.includes('ignoring SIGTERM'))).toBe(true);
    expect(log.some((l) => l.includes('sent SIGKILL'))).toBe(true);
    expect(supervisor.status('stubborn')?.exit).toEqual({ exitCode: null, signal: 'SIGKILL' });
  });

  it('ends the grandchildren with the server', async () => {
    const { supervisor } = await supervisorWith({ parent: ['--fake-spawn-child'] });
    await supervisor.launch('parent', 'full');
    const grandchild = printed(supervisor, 'parent', 'grandchild pid');
    expect(await isRunning(grandchild)).toBe(true);
    await supervisor.evict('parent');
    expect(await isRunning(grandchild)).toBe(false);
  });

  it('ends a grandchild that leads its own process group, found as a descendant, and counts its memory', async () => {
    const { supervisor } = await supervisorWith({ parent: ['--fake-spawn-child', '--fake-child-own-group'] });
    await supervisor.launch('parent', 'full');
    const grandchild = printed(supervisor, 'parent', 'grandchild pid');
    const server = supervisor.endpointFor('parent')?.pid ?? -1;
    // The tree's memory is the server's and the grandchild's (each read alone from /proc).
    const rss = async (pid: number): Promise<number> => Number(/^VmRSS:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    const [tree, serverAlone, grandchildAlone] = await Promise.all([treeResidentBytes(server), rss(server), rss(grandchild)]);
    expect(tree).toBeGreaterThan(serverAlone + grandchildAlone / 2);
    await supervisor.evict('parent');
    expect(await isRunning(grandchild)).toBe(false);
  });

  it('SIGKILLs a grandchild that ignores SIGTERM after its parent has gone', async () => {
    const { supervisor } = await supervisorWith({ family: ['--fake-spawn-child', '--fake-ignore-sigterm'] }, { stopGraceMs: 300 });
    await supervisor.launch('family', 'full');
    const grandchild = printed(supervisor, 'family', 'grandchild pid');
    await supervisor.evict('family');
    expect(await isRunning(grandchild)).toBe(false);
  });

  it('rejects with the cause from llama.cpp when the engine exits before ready', async () => {
    const { supervisor } = await supervisorWith({
      kv: ['--fake-log-file', fixture('server-kv-cache-oom.log'), '--fake-exit-with', '1'],
      abort: ['--fake-log-file', fixture('server-weights-oom-sigabrt.log'), '--fake-exit-with', 'SIGABRT'],
      corrupt: ['--fake-log-file', fixture('server-truncated-data.log'), '--fake-exit-with', '1'],
    });
    const kv = await supervisor.launch('kv', 'full').catch((e: unknown) => e);
    expect(kv).toBeInstanceOf(LaunchError);
    expect(kv).toMatchObject({ kind: 'oom', reason: 'failed to allocate buffer for kv cache', exitCode: 1, signal: null });
    // stdout and stderr are two pipes, so only membership is certain, not the order between them.
    expect((kv as LaunchError).logTail).toContainEqual(expect.stringContaining('exiting due to model loading error'));

    await expect(supervisor.launch('abort', 'full')).rejects.toMatchObject({ kind: 'oom', signal: 'SIGABRT' });
    await expect(supervisor.launch('corrupt', 'full')).rejects.toMatchObject({
      kind: 'invalid',
      reason: "tensor 'blk.0.attn_q.weight' data is not within the file bounds, model is corrupted or incomplete",
    });
    expect(supervisor.status('kv')?.phase).toBe('exited');
    expect(await supervisor.measure()).toEqual(new Map());
  });

  it('calls a load that outlives its timeout a hang and stops the process', async () => {
    const { supervisor } = await supervisorWith({ sleepy: ['--fake-ready-after', '600000'] }, { loadTimeoutMs: () => 400 });
    const error = await supervisor.launch('sleepy', 'full').catch((e: unknown) => e);
    expect(error).toMatchObject({ kind: 'hang' });
    expect((error as LaunchError).reason).toMatch(/did not become ready within the load timeout \(0\.4 s\)/);
    const pid = supervisor.status('sleepy')?.pid ?? -1;
    expect(await isRunning(pid)).toBe(false);
  });

  it('rejects with a crash naming the command when the engine cannot be started', async () => {
    const { supervisor } = await supervisorWith(
      {},
      { engineCommand: () => ({ command: join(dataDir, 'no-such-engine'), args: [], capabilities: EMBEDDED_CAPABILITIES }) },
    );
    const error = await supervisor.launch('ghost', 'full').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LaunchError);
    expect((error as LaunchError).reason).toMatch(/could not start .*no-such-engine: .*ENOENT/);
  });

  it('cancels a load when the caller aborts, and when the model is evicted', async () => {
    const { supervisor } = await supervisorWith({ a: ['--fake-ready-after', '600000'], b: ['--fake-ready-after', '600000'] });
    const controller = new AbortController();
    const launchA = supervisor.launch('a', 'full', undefined, controller.signal);
    await until(() => supervisor.status('a') !== null, 'a is spawned');
    controller.abort(new DOMException('client went away', 'AbortError'));
    await expect(launchA).rejects.toMatchObject({ name: 'AbortError' });
    await until(async () => !(await isRunning(supervisor.status('a')?.pid ?? -1)), 'a has stopped');

    const launchB = supervisor.launch('b', 'full');
    await until(() => supervisor.status('b') !== null, 'b is spawned');
    await supervisor.evict('b');
    await expect(launchB).rejects.toMatchObject({ name: 'AbortError' });
    expect(await isRunning(supervisor.status('b')?.pid ?? -1)).toBe(false);
  });

  it('keeps the load going while one of two callers still waits', async () => {
    const { supervisor, spawns } = await supervisorWith({ shared: ['--fake-ready-after', '300'] });
    const impatient = new AbortController();
    const first = supervisor.launch('shared', 'full', undefined, impatient.signal);
    const second = supervisor.launch('shared', 'full');
    impatient.abort(new DOMException('gone', 'AbortError'));
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    await second;
    expect(spawns).toHaveLength(1);
  });

  it('keeps a bounded log per model, readable after the server exited', async () => {
    const { supervisor } = await supervisorWith(
      { chatty: ['--fake-log-file', fixture('server-missing-file.log'), '--fake-exit-with', '1'] },
      { logLines: 5 },
    );
    await expect(supervisor.launch('chatty', 'full')).rejects.toBeInstanceOf(LaunchError);
    await until(() => supervisor.logs('chatty').some((l) => l.includes('ended: exit code 1')), 'the exit is logged');
    const log = supervisor.logs('chatty');
    expect(log).toHaveLength(5);
    expect(log.at(-1)).toContain('ended: exit code 1');
  });

  it('tells log subscribers each line as the ring keeps it, numbered from 0 across launches, with no gap', async () => {
    const { supervisor } = await supervisorWith(
      { chatty: ['--fake-log-file', fixture('server-missing-file.log'), '--fake-exit-with', '1'] },
      { logLines: 5 },
    );
    const heard: { line: string; position: number }[] = [];
    supervisor.onLog(({ modelId, line, position }) => {
      if (modelId === 'chatty') heard.push({ line, position });
    });
    for (let launch = 1; launch <= 2; launch++) {
      await expect(supervisor.launch('chatty', 'full')).rejects.toBeInstanceOf(LaunchError);
      await until(() => heard.filter((h) => h.line.includes('ended: exit code 1')).length === launch, `launch ${launch}'s exit is logged`);
    }
    expect(heard.map((h) => h.position)).toEqual(heard.map((_, i) => i));
    // The ring keeps the last 5; its positions still count the lines that fell off.
    expect(supervisor.logTail('chatty')).toEqual({ lines: heard.slice(-5).map((h) => h.line), next: heard.length });
    expect(heard.some((h) => h.line.includes('llama_model_load: error loading model'))).toBe(true);
  });

  it('reports a ready server killed while serving once, as ServerExited with the kind, and replaces it on the next launch', async () => {
    const { supervisor } = await supervisorWith({});
    const events = recordEvents(supervisor);
    await supervisor.launch('victim', 'smaller-context');
    const pid = supervisor.endpointFor('victim')?.pid ?? -1;
    process.kill(pid, 'SIGKILL');
    await until(() => events.some((e) => e.type === 'ServerExited'), 'the death is reported');
    expect(typesOf(events)).toEqual(['ServerSpawned victim', 'ServerReady victim', 'ServerExited victim']);
    expect(events[2]).toMatchObject({ pid, kind: 'crash', signal: 'SIGKILL', exitCode: null, level: 'smaller-context', wasReady: true });
    expect(supervisor.endpointFor('victim')).toBeNull();
    await supervisor.launch('victim', 'smaller-context'); // a dead server is replaced
    expect(supervisor.endpointFor('victim')).not.toBeNull();
  });

  it('reports a failed load once, with llama.cpp\'s words, before the launch rejects', async () => {
    const { supervisor } = await supervisorWith({ kv: ['--fake-log-file', fixture('server-kv-cache-oom.log'), '--fake-exit-with', '1'] });
    const events = recordEvents(supervisor);
    let eventsAtRejection = -1;
    await supervisor.launch('kv', 'full').catch(() => (eventsAtRejection = events.length));
    expect(typesOf(events)).toEqual(['ServerSpawned kv', 'ServerExited kv']);
    expect(eventsAtRejection).toBe(2);
    expect(events[1]).toMatchObject({ kind: 'oom', reason: 'failed to allocate buffer for kv cache', wasReady: false, exitCode: 1 });
  });

  it('reports a launch that fails before any process runs as ServerExited with no pid, and a missing file as the machine in the way (a drive unplugged), not the model', async () => {
    const { supervisor } = await supervisorWith(
      {},
      {
        specFor: (modelId) => {
          throw new Error(modelId === 'gone' ? `/models/gone.gguf: cannot read the model file: ENOENT: no such file or directory, open '/models/gone.gguf'` : 'something else broke');
        },
      },
    );
    const events = recordEvents(supervisor);
    await expect(supervisor.launch('gone', 'full')).rejects.toMatchObject({ kind: 'environment' });
    await expect(supervisor.launch('other', 'full')).rejects.toMatchObject({ kind: 'crash' });
    expect(events).toMatchObject([
      { type: 'ServerExited', modelId: 'gone', pid: null, kind: 'environment', wasReady: false },
      { type: 'ServerExited', modelId: 'other', pid: null, kind: 'crash', reason: 'something else broke' },
    ]);
  });

  it('stops handing out a killed server at its exit, before its output drains and its death is reported', async () => {
    const children: ChildProcess[] = [];
    const { supervisor } = await supervisorWith(
      {},
      {
        spawn: (command, args, options) => {
          const child = spawn(command, args, options);
          children.push(child);
          return child;
        },
      },
    );
    const exits: string[] = [];
    supervisor.onServerEvent((event) => {
      if (event.type === 'ServerExited') exits.push(event.modelId);
    });
    await supervisor.launch('victim', 'full');
    const endpoint = supervisor.endpointFor('victim');
    const child = children[0];
    if (endpoint === null || child === undefined) throw new Error('victim is not ready');

    // Alive, its end is not known: serverEnded waits until its caller gives up.
    const giveUp = new AbortController();
    let gaveUp = false;
    const waited = supervisor.serverEnded('victim', endpoint, giveUp.signal).then(() => (gaveUp = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(gaveUp).toBe(false);
    giveUp.abort();
    await waited;

    // Listened to after the supervisor's own 'exit' listener, so this runs just after it: the
    // router's view must already be right, while the exit listeners still wait for the drain.
    const atExit = new Promise<{ endpoint: unknown; claim: unknown; told: number }>((resolve) =>
      child.once('exit', () => resolve({ endpoint: supervisor.endpointFor('victim'), claim: supervisor.claim('victim'), told: exits.length })),
    );
    const ended = supervisor.serverEnded('victim', endpoint, new AbortController().signal);
    process.kill(endpoint.pid, 'SIGKILL');
    expect(await atExit).toEqual({ endpoint: null, claim: null, told: 0 });
    await ended;
    await until(() => exits.length === 1, 'the death is reported');
    expect(exits).toEqual(['victim']);

    // Once it has ended, or for an endpoint that is not the model's server, it answers at once.
    const never = new AbortController().signal;
    await supervisor.serverEnded('victim', endpoint, never);
    await supervisor.serverEnded('victim', { port: endpoint.port, apiKey: 'another launch' }, never);
    await supervisor.serverEnded('never-launched', endpoint, never);
  });

  it('reports an eviction, and a cancelled load, as ServerStopped: never as a failure', async () => {
    const { supervisor } = await supervisorWith({ slow: ['--fake-ready-after', '600000'] });
    const events = recordEvents(supervisor);
    await supervisor.launch('calm', 'full');
    await supervisor.evict('calm');
    const loading = supervisor.launch('slow', 'full').catch((e: unknown) => e);
    await until(() => events.some((e) => e.type === 'ServerSpawned' && e.modelId === 'slow'), 'slow is spawned');
    await supervisor.evict('slow');
    expect(await loading).toMatchObject({ name: 'AbortError' });
    expect(typesOf(events)).toEqual(['ServerSpawned calm', 'ServerReady calm', 'ServerStopped calm', 'ServerSpawned slow', 'ServerStopped slow']);
  });

  it('reports a server that died before its eviction reached it as ServerExited, not as a stop', async () => {
    // The soak's finding: SIGKILL mid-stream; the router ends the stream and releases the claim,
    // the next pass evicts the model for another, and that eviction arrived while the dead
    // server's output drained: its death was reported as ServerStopped and the ladder never
    // counted the crash.
    const children: ChildProcess[] = [];
    const { supervisor } = await supervisorWith(
      {},
      {
        spawn: (command, args, options) => {
          const child = spawn(command, args, options);
          children.push(child);
          return child;
        },
      },
    );
    const events = recordEvents(supervisor);
    await supervisor.launch('victim', 'full');
    const pid = supervisor.endpointFor('victim')?.pid ?? -1;
    // After the supervisor's own 'exit' listener: the process is known to be gone, its drain pending.
    const evicted = new Promise<unknown>((resolve) => children[0]?.once('exit', () => resolve(supervisor.evict('victim'))));
    process.kill(pid, 'SIGKILL');
    expect(await evicted).toBe('stopped');
    await until(() => events.length === 3, 'its end is reported');
    expect(typesOf(events)).toEqual(['ServerSpawned victim', 'ServerReady victim', 'ServerExited victim']);
    expect(events[2]).toMatchObject({ pid, kind: 'crash', signal: 'SIGKILL', wasReady: true });
  });

  it('reports a server SIGKILLed by someone else as ServerExited even when an eviction reached it before its exit did', async () => {
    // The same race one step earlier: a large engine takes a while to die, its sockets close
    // before its exit is known, and the eviction the released claim allowed comes in between.
    // Only its end tells: SIGKILL, which the supervisor sends only after a grace it never reached.
    const { supervisor } = await supervisorWith({});
    const events = recordEvents(supervisor);
    await supervisor.launch('victim', 'full');
    const pid = supervisor.endpointFor('victim')?.pid ?? -1;
    process.kill(pid, 'SIGKILL');
    expect(await supervisor.evict('victim')).toBe('stopped');
    await until(() => events.length === 3, 'its end is reported');
    expect(typesOf(events)).toEqual(['ServerSpawned victim', 'ServerReady victim', 'ServerExited victim']);
    expect(events[2]).toMatchObject({ pid, kind: 'crash', signal: 'SIGKILL', wasReady: true });

    // An engine that ignores SIGTERM and is SIGKILLed by us after the grace was stopped, as asked.
    const { supervisor: patient } = await supervisorWith({ stubborn: ['--fake-ignore-sigterm'] }, { stopGraceMs: 200 });
    const stops = recordEvents(patient);
    await patient.launch('stubborn', 'full');
    await patient.evict('stubborn');
    expect(typesOf(stops)).toEqual(['ServerSpawned stubborn', 'ServerReady stubborn', 'ServerStopped stubborn']);
  });

  it('measures device bytes from buffer lines and host RSS at minimal', async () => {
    const { supervisor } = await supervisorWith({ gpu: ['--fake-device-buffer-mib', '512'], cpu: ['--fake-device-buffer-mib', '512'] });
    await supervisor.launch('gpu', 'full');
    await supervisor.launch('cpu', 'minimal');
    expect(await supervisor.measured('gpu')).toEqual({ bytes: 512 * MIB, where: 'device' });
    const rss = await supervisor.measured('cpu');
    expect(rss?.where).toBe('host');
    expect(rss?.bytes).toBeGreaterThan(MIB); // a Node process: tens of MiB
    expect(rss?.bytes).not.toBe(512 * MIB);
    expect(await supervisor.measure()).toEqual(new Map([['gpu', 512 * MIB], ['cpu', 0]]));
    expect(await supervisor.measured('nothing')).toBeNull();
  });

  it('prefers the driver’s per-process count over log lines', async () => {
    let pid = -1;
    const { supervisor } = await supervisorWith(
      { drv: ['--fake-device-buffer-mib', '512'] },
      { gpuProcessMemory: async () => new Map([[pid, 700 * MIB]]) },
    );
    await supervisor.launch('drv', 'full');
    pid = supervisor.endpointFor('drv')?.pid ?? -1;
    expect(supervisor.runningPids()).toEqual([pid]);
    expect(await supervisor.measured('drv')).toEqual({ bytes: 700 * MIB, where: 'device' });
  });

  it("learns an engine's runtime once: on a GPU from the driver's figure of a server whole on one device, on the CPU from its RSS", async () => {
    // What the driver says each of our processes holds, whichever it is; null: it lists none.
    let driverSays: number | null = null;
    const runtime = new RuntimeOverhead();
    const onOneGpu: Placement = { kind: 'gpu', devices: [{ index: 0, layers: 0, bytes: 100 * MIB }], cpuMoeLayers: 0, hostBytes: 0 };
    const split: Placement = { kind: 'split', devices: [{ index: 0, layers: 8, bytes: 60 * MIB }, { index: 1, layers: 8, bytes: 60 * MIB }], cpuMoeLayers: 0, hostBytes: 0 };
    let supervisorRef: Supervisor | null = null;
    const { supervisor } = await supervisorWith(
      {},
      { gpuProcessMemory: async () => new Map((supervisorRef?.runningPids() ?? []).flatMap((pid) => (driverSays === null ? [] : [[pid, driverSays]]))), runtime },
    );
    supervisorRef = supervisor;
    const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

    // A server the driver does not list, and a split (its figure is not one model on one device), teach nothing.
    await supervisor.launch('unlisted', 'full', onOneGpu);
    // Priced, for the plan and the picture, at its estimate (100 MiB here) and its engine's runtime, as the driver would count it.
    expect((await supervisor.measure()).get('unlisted')).toBe(100 * MIB + RUNTIME_PRIOR_BYTES.device.embedded);
    driverSays = 900 * MIB;
    await supervisor.launch('split', 'full', split);
    await settle();
    expect(runtime.isMeasured('embedded', 'device')).toBe(false);
    expect(runtime.bytes('embedded', 'device')).toBe(RUNTIME_PRIOR_BYTES.device.embedded);

    driverSays = 100 * MIB + 321 * MIB;
    await supervisor.launch('whole', 'full', onOneGpu);
    await until(() => runtime.isMeasured('embedded', 'device'), 'the device runtime is learned');
    expect(runtime.bytes('embedded', 'device')).toBe(321 * MIB);
    // Only the first measurement counts.
    driverSays = 100 * MIB + 999 * MIB;
    await supervisor.launch('later', 'full', onOneGpu);
    await settle();
    expect(runtime.bytes('embedded', 'device')).toBe(321 * MIB);
    expect(runtime.isMeasured('embedded', 'host')).toBe(false);

    // With the host as the device, the process's RSS (a Node process: tens of MiB) less its model's 1 MiB teaches the host figure.
    const onHost = new RuntimeOverhead();
    const cpu = await supervisorWith({}, { hostIsDevice: () => true, runtime: onHost, footprint: () => MIB });
    await cpu.supervisor.launch('cpu', 'full');
    await until(() => onHost.isMeasured('embedded', 'host'), 'the host runtime is learned');
    expect(onHost.bytes('embedded', 'host')).toBeGreaterThan(10 * MIB);
    expect(onHost.isMeasured('embedded', 'device')).toBe(false);
  });

  it('waits after an eviction until 75 % of the footprint is free again', async () => {
    const free = [1_000 * MIB, 1_000 * MIB, 1_040 * MIB, 1_080 * MIB];
    let probes = 0;
    const { supervisor } = await supervisorWith(
      {},
      { memoryProbe: async () => free[Math.min(probes++, free.length - 1)] ?? 0, memoryWait: { pollMs: 10, maxMs: 60_000 } },
    );
    await supervisor.launch('big', 'full');
    await supervisor.evict('big');
    // before, then 1000, 1040 (< 1000 + 75), 1080 (≥): four probes and no more.
    expect(probes).toBe(4);
  });
});

describe('claims', () => {
  it('an eviction leaves a claimed server running and says so; once released, it stops', async () => {
    const { supervisor } = await supervisorWith({});
    await supervisor.launch('busy', 'full');
    const claim = supervisor.claim('busy');
    expect(claim?.endpoint.port).toBe(supervisor.endpointFor('busy')?.port);
    expect(supervisor.inFlight('busy')).toBe(1);
    expect(await supervisor.evict('busy')).toBe('claimed');
    expect(await isRunning(claim?.endpoint.pid ?? -1)).toBe(true);
    claim?.release();
    claim?.release(); // idempotent
    expect(supervisor.inFlight('busy')).toBe(0);
    expect(await supervisor.evict('busy')).toBe('stopped');
    expect(supervisor.claim('busy')).toBeNull();
  });

  it('asks each llama-server once, before it is ready, whether it serves Anthropic’s Messages API, and says so in its claims; never the embedded engine', async () => {
    const { supervisor } = await supervisorWith({ recent: ['--fake-anthropic'], older: [], ours: ['--fake-anthropic'] }, {}, ['recent', 'older']);
    await Promise.all([supervisor.launch('recent', 'full'), supervisor.launch('older', 'full'), supervisor.launch('ours', 'full')]);
    // The embedded engine serves no /v1/messages: it is not asked (this fake would have said yes).
    const ours = supervisor.claim('ours');
    expect(ours?.endpoint.anthropicMessages).toBe(false);
    const oursAsked = await fetch(`http://127.0.0.1:${ours?.endpoint.port}/fake-counts`, { headers: { authorization: `Bearer ${ours?.endpoint.apiKey}` } });
    expect(await oursAsked.json()).toEqual({ counts: 0 });
    ours?.release();
    const recent = supervisor.claim('recent');
    const older = supervisor.claim('older');
    expect(recent?.endpoint.anthropicMessages).toBe(true);
    expect(older?.endpoint.anthropicMessages).toBe(false);
    // Asked at readiness, not per claim: a second claim costs the engine nothing.
    supervisor.claim('recent')?.release();
    const asked = await fetch(`http://127.0.0.1:${recent?.endpoint.port}/fake-counts`, { headers: { authorization: `Bearer ${recent?.endpoint.apiKey}` } });
    expect(await asked.json()).toEqual({ counts: 1 });
    expect(supervisor.logs('recent').join('\n')).toContain("serves Anthropic's /v1/messages itself");
    recent?.release();
    older?.release();
  });

  it('thousands of claims racing evictions on a real process never see a claimed server stopped', async () => {
    const { supervisor } = await supervisorWith({});
    const open = new Map<number, Claim[]>();
    const violations: string[] = [];
    supervisor.onServerEvent((event) => {
      if (event.type === 'ServerStopped' && (open.get(event.pid)?.length ?? 0) > 0) violations.push(`pid ${event.pid} stopped with ${open.get(event.pid)?.length} claims`);
    });
    let rng = 12345;
    const next = (): number => ((rng = (rng * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let claimed = 0;
    let refused = 0;
    const evictions: Promise<string>[] = [];
    await supervisor.launch('racer', 'full');
    for (let step = 0; step < 1500; step++) {
      const roll = next();
      if (roll < 0.45) {
        const claim = supervisor.claim('racer');
        if (claim === null) continue;
        claimed++;
        open.set(claim.endpoint.pid, [...(open.get(claim.endpoint.pid) ?? []), claim]);
      } else if (roll < 0.9) {
        for (const claims of open.values()) claims.shift()?.release();
      } else if (roll < 0.97) {
        evictions.push(supervisor.evict('racer').then((outcome) => (outcome === 'claimed' ? String(refused++) : outcome)));
      } else {
        // Mostly a ready server to race for: wait for the relaunch, with evictions already queued behind it.
        await supervisor.launch('racer', 'full').catch(() => undefined);
      }
      // Let the owner's queue and the processes move between steps, as requests and passes interleave.
      if (step % 7 === 0) await new Promise((resolve) => setImmediate(resolve));
      if (step % 97 === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    for (const claims of open.values()) for (const claim of claims.splice(0)) claim.release();
    await Promise.all(evictions);
    expect(violations).toEqual([]);
    expect(claimed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(0);
  });
});

describe('hang detection', () => {
  it('kills a server that stops (SIGSTOP) with a request claimed: its client hears why first, and the death is a hang', async () => {
    const { supervisor } = await supervisorWith({}, { hangLimitMs: () => 600 });
    const events = recordEvents(supervisor);
    await supervisor.launch('frozen', 'full');
    const claim = supervisor.claim('frozen');
    if (claim === null) throw new Error('frozen is not ready');
    let lostWhileAlive: boolean | null = null;
    claim.lost.addEventListener('abort', () => void isRunning(claim.endpoint.pid).then((alive) => (lostWhileAlive ??= alive)));
    process.kill(claim.endpoint.pid, 'SIGSTOP');
    await until(() => events.some((e) => e.type === 'ServerExited'), 'the hang is reported');
    expect(claim.lost.aborted).toBe(true);
    expect(claim.lost.reason).toMatchObject({ kind: 'hang', reason: expect.stringMatching(/^it made no progress for \d+(\.\d)? s with 1 request in flight: no bytes to its clients, and its health probe did not answer$/) });
    expect(lostWhileAlive).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: 'ServerExited', modelId: 'frozen', kind: 'hang', wasReady: true, pid: claim.endpoint.pid });
    expect(await isRunning(claim.endpoint.pid)).toBe(false);
    expect(supervisor.inFlight('frozen')).toBe(0);
    claim.release(); // after being lost: a no-op
  });

  it('kills a wedged decode whose /health stays 200 but whose /slots never move', async () => {
    const { supervisor } = await supervisorWith({ wedged: ['--fake-wedged-decode'] }, { hangLimitMs: () => 600 });
    const events = recordEvents(supervisor);
    await supervisor.launch('wedged', 'full');
    const claim = supervisor.claim('wedged');
    if (claim === null) throw new Error('wedged is not ready');
    const request = fetch(`http://127.0.0.1:${claim.endpoint.port}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${claim.endpoint.apiKey}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
    }).catch((error: unknown) => error);
    await until(() => events.some((e) => e.type === 'ServerExited'), 'the hang is reported');
    expect(claim.lost.reason).toMatchObject({ reason: expect.stringMatching(/its \/slots counters did not move$/) });
    expect(events.at(-1)).toMatchObject({ type: 'ServerExited', kind: 'hang', wasReady: true });
    expect(await request).toBeInstanceOf(Error); // its socket closed with the process
  });

  it('leaves alone a busy server whose answer moves, and one that is idle', async () => {
    const { supervisor } = await supervisorWith({ wedged: ['--fake-wedged-decode'] }, { hangLimitMs: () => 300 });
    const events = recordEvents(supervisor);
    await supervisor.launch('wedged', 'full');
    const claim = supervisor.claim('wedged');
    if (claim === null) throw new Error('wedged is not ready');
    // Bytes reach the client every 100 ms for ten times the limit: progress, whatever /slots says.
    for (let i = 0; i < 30; i++) {
      claim.progressed();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    claim.release();
    // With nothing in flight nothing is judged, however long it stays quiet.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(claim.lost.aborted).toBe(false);
    expect(events.map((e) => e.type)).toEqual(['ServerSpawned', 'ServerReady']);
  });
});

describe('orphan cleanup', () => {
  it('ends the servers of a crashed run and leaves a reused pid alone', async () => {
    const crashed = await supervisorWith({ orphan: ['--fake-spawn-child'] });
    await crashed.supervisor.launch('orphan', 'full');
    const orphanPid = crashed.supervisor.endpointFor('orphan')?.pid ?? -1;
    const grandchild = printed(crashed.supervisor, 'orphan', 'grandchild pid');
    // The crashed run is never closed: drop it from cleanup, as a SIGKILLed daemon would be.
    supervisors.splice(supervisors.indexOf(crashed.supervisor), 1);

    // A pid in the record that now belongs to another program.
    const unrelated = spawn('sleep', ['300'], { stdio: 'ignore' });
    strays.push(unrelated);
    const file = join(dataDir, 'engines.json');
    const record = JSON.parse(await readFile(file, 'utf8')) as { engines: unknown[] };
    record.engines.push({ modelId: 'ours-once', pid: unrelated.pid, commandHash: commandLineHash('node fake-engine.mjs --api-key gone'), startedAt: 1 });
    await writeFile(file, JSON.stringify(record));

    expect(await readdir(join(dataDir, 'engine-keys'))).toHaveLength(1);

    const next = await supervisorWith({});
    expect(next.supervisor.orphans.ended.map((r) => r.pid)).toEqual([orphanPid]);
    expect(existsSync(join(dataDir, 'engine-keys'))).toBe(false); // the crashed run's key file went with its server
    expect(next.supervisor.orphans.leftAlone.map((r) => r.pid)).toEqual([unrelated.pid]);
    expect(await isRunning(orphanPid)).toBe(false);
    expect(await isRunning(grandchild)).toBe(false);
    expect(await isRunning(unrelated.pid ?? -1)).toBe(true);
  });
});
