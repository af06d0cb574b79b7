// A server's life as one value: the changes it has are taken, those it has not are refused with
// the state left as it was, and a real process's exit moves it to 'draining' on its own, keeping
// what the supervisor had marked (why it was stopped, when it was ready) for the exit's reading.
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { IllegalTransition, readyAtOf, ServerProcess, type ServerState } from '../../../core/engine/supervisor/server-process.js';

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

const exit = { exitCode: 0, signal: null };
const stopping: ServerState = { kind: 'stopping', by: { why: 'requested' }, readyAt: 5, killedByUs: false };
const exited: ServerState = { kind: 'exited', exit, readyAt: null, failure: null, portTaken: false };

describe('ServerProcess state', () => {
  it('starts loading, serves only once ready, and stops serving when it is marked stopping', async () => {
    const server = serverProcess();
    await server.spawned;
    expect(server.state).toEqual({ kind: 'loading' });
    expect(server.serving()).toBe(false);
    server.transition({ kind: 'ready', at: 5 });
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
    server.transition({ kind: 'ready', at: 1 });
    expect(() => server.transition({ kind: 'ready', at: 2 })).toThrow(IllegalTransition);
    expect(() => server.transition({ kind: 'loading' })).toThrow(IllegalTransition);
    server.transition(stopping);
    expect(() => server.transition({ kind: 'ready', at: 3 })).toThrow(IllegalTransition);
    expect(() => server.transition(exited)).toThrow(IllegalTransition);
    expect(server.state).toEqual(stopping);
  });

  it('goes draining at its exit with the mark it had, then only to exited, and nothing after', async () => {
    const server = serverProcess();
    await server.spawned;
    server.transition({ kind: 'ready', at: 7 });
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
    expect(() => server.transition({ kind: 'ready', at: 8 })).toThrow(IllegalTransition);
    await server.exited;
    server.transition({ kind: 'exited', exit: { exitCode: null, signal: 'SIGKILL' }, readyAt: 7, failure: { kind: 'hang', reason: 'no progress' }, portTaken: false });
    expect(server.running).toBe(false);
    expect(server.phase).toBe('exited');
    for (const next of [{ kind: 'loading' }, { kind: 'ready', at: 9 }, stopping, exited] as ServerState[]) {
      expect(() => server.transition(next)).toThrow(IllegalTransition);
    }
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
});
