// A server's life as one value: the changes it has are taken, those it has not are refused with
// the state left as it was, and a real process's exit moves it to 'draining' on its own, keeping
// what the supervisor had marked (why it was stopped, when it was ready) for the exit's reading.
// A warm spare is the same object from its spawn: 'spare' until a launch adopts it, never after.
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerProcess, type LaunchParts } from '../../../core/engine/supervisor/server-process.js';
import { IllegalTransition, readyAtOf, type ServerState } from '../../../core/engine/supervisor/server-state.js';

const started: ServerProcess[] = [];

/** A real process that runs until killed: the state machine is driven by its real exit. */
function serverProcess(): ServerProcess {
  const server = ServerProcess.start({
    spawn,
    command: process.execPath,
    args: ['-e', 'setInterval(() => {}, 1000)'],
    env: {},
    cwd: tmpdir(),
    platform: process.platform,
    port: 1,
    apiKey: 'key',
    level: 'full',
    engine: 'embedded',
    startedAt: 0,
    onLine: () => {},
    onBusyChange: () => {},
    onTransition: () => {},
  });
  started.push(server);
  return server;
}

afterEach(async () => {
  for (const server of started.splice(0)) {
    if (server.running) server.child.kill('SIGKILL');
    await server.exited;
  }
});

/** A real process in the spare's state: it says its runtime is ready, then echoes what comes on stdin. */
function spareProcess(lines: string[] = []): ServerProcess {
  const script = "console.log('spare: runtime ready'); process.stdin.on('data', (d) => console.log('got ' + String(d).trim())); setInterval(() => {}, 1000)";
  const server = ServerProcess.startSpare({
    spawn, command: process.execPath, args: ['-e', script], env: {}, cwd: tmpdir(), platform: process.platform, startedAt: 0, onLine: (line) => lines.push(line),
  });
  started.push(server);
  return server;
}

const launchParts = (onLine: (line: string) => void = () => {}, heard: ServerState[] = []): LaunchParts => ({
  port: 1234, apiKey: 'key', level: 'minimal', startedAt: 99, onLine, onBusyChange: () => {}, onTransition: (state) => heard.push(state),
});

/** What a ready server can do: nothing in these cases reads it. */
const serves = { anthropicMessages: false, toolCalls: true, savedSlots: null };
const exit = { exitCode: 0, signal: null };
const stopping: ServerState = { kind: 'stopping', by: { why: 'requested' }, readyAt: 5, killedByUs: false };
const exited: ServerState = { kind: 'exited', exit, readyAt: null, failure: null, portTaken: false };

describe('ServerProcess state', () => {
  it('starts loading, serves only once ready, and stops serving when it is marked stopping', async () => {
    const server = serverProcess();
    await server.spawned;
    expect(server.state).toEqual({ kind: 'loading' });
    expect(server.serving()).toBe(false);
    server.transition({ kind: 'ready', at: 5, serves });
    expect(server.serving()).toBe(true);
    expect(readyAtOf(server.state)).toBe(5);
    server.transition(stopping);
    expect(server.serving()).toBe(false);
    expect(server.phase).toBe('stopping');
    server.transition({ ...stopping, killedByUs: true });
    expect(server.state).toEqual({ ...stopping, killedByUs: true });
  });

  it('refuses the changes a life does not have, keeping the state it had', async () => {
    const server = serverProcess();
    await server.spawned;
    expect(() => server.transition(exited)).toThrow(IllegalTransition);
    expect(() => server.transition({ kind: 'loading' })).toThrow(IllegalTransition);
    expect(server.state).toEqual({ kind: 'loading' });
    server.transition({ kind: 'ready', at: 1, serves });
    expect(() => server.transition({ kind: 'ready', at: 2, serves })).toThrow(IllegalTransition);
    expect(() => server.transition({ kind: 'loading' })).toThrow(IllegalTransition);
    server.transition(stopping);
    expect(() => server.transition({ kind: 'ready', at: 3, serves })).toThrow(IllegalTransition);
    expect(() => server.transition(exited)).toThrow(IllegalTransition);
    expect(server.state).toEqual(stopping);
  });

  it('goes draining at its exit with the mark it had, then only to exited, and nothing after', async () => {
    const server = serverProcess();
    await server.spawned;
    server.transition({ kind: 'ready', at: 7, serves });
    server.transition({ kind: 'stopping', by: { why: 'hung', reason: 'no progress' }, readyAt: 7, killedByUs: false });
    server.child.kill('SIGKILL');
    await server.ended;
    expect(server.gone).toBe(true);
    expect(server.running).toBe(true);
    expect(server.state).toEqual({
      kind: 'draining',
      exit: { exitCode: null, signal: 'SIGKILL' },
      was: 'stopping',
      by: { why: 'hung', reason: 'no progress' },
      readyAt: 7,
      killedByUs: false,
    });
    expect(() => server.transition(stopping)).toThrow(IllegalTransition);
    expect(() => server.transition({ kind: 'ready', at: 8, serves })).toThrow(IllegalTransition);
    await server.exited;
    server.transition({ kind: 'exited', exit: { exitCode: null, signal: 'SIGKILL' }, readyAt: 7, failure: { kind: 'hang', reason: 'no progress' }, portTaken: false });
    expect(server.running).toBe(false);
    expect(server.phase).toBe('exited');
    for (const next of [{ kind: 'loading' }, { kind: 'ready', at: 9, serves }, stopping, exited] as ServerState[]) {
      expect(() => server.transition(next)).toThrow(IllegalTransition);
    }
  });

  it("its named steps are its life's only changes: the process's start is loading's one sub-step, what it serves comes with ready, and its end is read once", async () => {
    const heard: ServerState[] = [];
    const server = ServerProcess.start({
      spawn, command: process.execPath, args: ['-e', 'setInterval(() => {}, 1000)'], env: {}, cwd: tmpdir(), platform: process.platform, engine: 'llama-server',
      ...launchParts(undefined, heard),
    });
    started.push(server);
    await server.spawned;
    server.markSpawned(3);
    expect(heard).toEqual([{ kind: 'loading', spawnedAt: 3 }]);
    // Once: a second start is no change its life has, and a loading state without a start is none either.
    expect(() => server.markSpawned(4)).toThrow(IllegalTransition);
    expect(() => server.transition({ kind: 'loading' })).toThrow(IllegalTransition);
    expect(server.serves).toBeNull();
    expect(server.noteLoadProgress(0.5)).toBe(true);
    expect(server.noteLoadProgress(0.5)).toBe(false);
    expect(server.loadProgress).toBe(0.5);
    const abilities = { anthropicMessages: true, toolCalls: false, savedSlots: null };
    server.markReady(6, abilities);
    expect(server.serves).toEqual(abilities);
    // A fraction is a load's: a ready server has none.
    expect(server.loadProgress).toBeNull();
    expect(server.markStopping({ why: 'requested' })).toBe(true);
    // Stopped once: the reason it was first stopped for stays.
    expect(server.markStopping({ why: 'load-timeout' })).toBe(false);
    expect(server.serves).toBeNull();
    server.markKilledByUs();
    expect(server.state).toEqual({ kind: 'stopping', by: { why: 'requested' }, readyAt: 6, killedByUs: true });
    expect(() => server.markExited(null, false)).toThrow(IllegalTransition);
    server.child.kill('SIGKILL');
    await server.exited;
    server.markExited(null, false);
    expect(heard.at(-1)).toEqual({ kind: 'exited', exit: { exitCode: null, signal: 'SIGKILL' }, readyAt: 6, failure: null, portTaken: false });
    expect(heard.map((state) => state.kind)).toEqual(['loading', 'ready', 'stopping', 'stopping', 'draining', 'exited']);
  });

  it('a launch that never ran a process still ends by its life: draining, then exited with its failure, with nothing to send to', async () => {
    const heard: ServerState[] = [];
    const failure = { kind: 'crash' as const, reason: 'the spec could not be read' };
    const server = ServerProcess.neverRan({ level: 'full', startedAt: 4, onLine: () => {}, onTransition: (state) => heard.push(state) }, failure);
    expect(heard).toEqual([
      { kind: 'draining', exit: { exitCode: null, signal: null }, was: 'loading', by: null, readyAt: null, killedByUs: false },
      { kind: 'exited', exit: { exitCode: null, signal: null }, readyAt: null, failure, portTaken: false },
    ]);
    expect([server.ran, server.running, server.serving(), server.level]).toEqual([false, false, false, 'full']);
    expect(() => server.port).toThrow(/no process/);
    expect(() => server.child).toThrow(/no process/);
    await expect(server.spawned).rejects.toThrow(/no process/);
    await expect(server.exited).resolves.toEqual({ exitCode: null, signal: null });
  });

  it('a process that ended while loading drains as loading, with no mark and never ready', async () => {
    const server = serverProcess();
    await server.spawned;
    server.child.kill('SIGKILL');
    await server.ended;
    expect(server.state).toMatchObject({ kind: 'draining', was: 'loading', by: null, readyAt: null });
    expect(server.phase).toBe('loading');
    expect(server.serving()).toBe(false);
  });

  it('a spare is a spare until adopted: then the same process is loading with the launch\'s port, and its earlier lines stay in its tail', async () => {
    const spareLines: string[] = [];
    const server = spareProcess(spareLines);
    await server.spawned;
    expect(server.state).toEqual({ kind: 'spare', runtimeReady: false });
    expect(server.phase).toBe('spare');
    expect(server.serving()).toBe(false);
    // No launch yet: asking it for a port is a bug, said by name, not a 0 that looks like one.
    expect(() => server.port).toThrow(/warm spare/);
    server.transition({ kind: 'spare', runtimeReady: true });
    expect(() => server.transition({ kind: 'ready', at: 1, serves })).toThrow(IllegalTransition);
    expect(() => server.transition(exited)).toThrow(IllegalTransition);
    expect(server.state).toEqual({ kind: 'spare', runtimeReady: true });
    await eventually(() => spareLines.includes('spare: runtime ready'));

    const pid = server.pid;
    const launchLines: string[] = [];
    const heard: ServerState[] = [];
    server.adopt(launchParts((line) => launchLines.push(line), heard));
    expect(server.state).toEqual({ kind: 'loading' });
    expect([server.pid, server.port, server.level, server.startedAt]).toEqual([pid, 1234, 'minimal', 99]);
    server.child.stdin?.write('argv\n');
    await eventually(() => launchLines.includes('got argv'));
    // The spare's line went to the spare's listener only; the launch's to the launch's; the tail has both, in order.
    expect(spareLines).not.toContain('got argv');
    expect(server.tail.toArray()).toEqual(['spare: runtime ready', 'got argv']);
    // Adopted once: it is no spare any more, and nothing goes back to being one.
    expect(() => server.adopt(launchParts())).toThrow(IllegalTransition);
    expect(() => server.transition({ kind: 'spare', runtimeReady: true })).toThrow(IllegalTransition);
    // The launch hears its states from the adoption on, none of the spare's own (its reports are the owner's).
    expect(heard).toEqual([]);
    server.transition({ kind: 'ready', at: 100, serves });
    expect(heard).toEqual([{ kind: 'ready', at: 100, serves }]);
  });

  it('a spare that died, or is being ended, is never adopted, and drains as a spare', async () => {
    const dead = spareProcess();
    await dead.spawned;
    dead.child.kill('SIGKILL');
    await dead.ended;
    expect(dead.state).toMatchObject({ kind: 'draining', was: 'spare', by: null, readyAt: null });
    expect(() => dead.adopt(launchParts())).toThrow(IllegalTransition);
    expect(dead.state.kind).toBe('draining');
    expect(() => dead.port).toThrow(/warm spare/);

    const ending = spareProcess();
    await ending.spawned;
    ending.transition({ kind: 'stopping', by: { why: 'requested' }, readyAt: null, killedByUs: false });
    expect(() => ending.adopt(launchParts())).toThrow(IllegalTransition);
    expect(ending.state.kind).toBe('stopping');
  });
});

/** Waits until `done` holds: for a real process's output, which comes when it comes. */
async function eventually(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
}
