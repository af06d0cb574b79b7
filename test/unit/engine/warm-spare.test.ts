// The warm spare's policy over a real process that plays a spare (it says its runtime is ready,
// then echoes the argv its launch sends on stdin): the launch that adopts it gets the very
// ServerProcess that was the spare, and a spare that died first is never handed over.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { realClock } from '../../../core/common/clock.js';
import { EMBEDDED_CAPABILITIES } from '../../../core/engine/launch-spec.js';
import type { EngineCommand } from '../../../core/engine/supervisor/engine-command.js';
import { EngineRegistry } from '../../../core/engine/supervisor/engine-registry.js';
import { isRunning } from '../../../core/engine/supervisor/process-tree.js';
import type { LaunchParts, ServerProcess } from '../../../core/engine/supervisor/server-process.js';
import { SPARE_RECORD_ID, WarmSpare } from '../../../core/engine/supervisor/warm-spare.js';

const SCRIPT = "console.log('spare: runtime ready'); process.stdin.on('data', (d) => console.log('got ' + String(d).trim())); setInterval(() => {}, 1000)";
// `--` so that the spare's own flags, appended by the policy, are the script's and not node's.
const COMMAND: EngineCommand = { command: process.execPath, args: ['-e', SCRIPT, '--'], capabilities: EMBEDDED_CAPABILITIES };
const CPU_ARGV = ['-m', 'x.gguf', '-ngl', '0'];

let dataDir: string;
let spares: WarmSpare[] = [];
const adopted: ServerProcess[] = [];

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-spare-unit-'));
});
afterEach(async () => {
  await Promise.all(spares.map((spare) => spare.close()));
  spares = [];
  for (const server of adopted.splice(0)) {
    if (server.running) server.child.kill('SIGKILL');
    await server.exited;
  }
  await rm(dataDir, { recursive: true, force: true });
});

function warmSpare(notes: string[] = []): WarmSpare {
  const spare = new WarmSpare({
    spawn,
    command: async () => COMMAND,
    env: {},
    cwd: dataDir,
    registry: new EngineRegistry(join(dataDir, 'engines.json')),
    owner: dataDir,
    clock: realClock,
    platform: process.platform,
    graceMs: 1_000,
    busy: () => false,
    changed: () => {},
    note: (line) => notes.push(line),
  });
  spares.push(spare);
  return spare;
}

function parts(lines: string[]): LaunchParts {
  return { port: 4321, apiKey: 'key', level: 'minimal', startedAt: 7, onLine: (line) => lines.push(line), onBusyChange: () => {}, onTransition: () => {} };
}

async function eventually<T>(what: () => T | null | undefined | false | Promise<T | null | undefined | false>): Promise<T> {
  for (;;) {
    const value = await what();
    if (value !== null && value !== undefined && value !== false) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function recordedIds(): Promise<string[]> {
  const text = await readFile(join(dataDir, 'engines.json'), 'utf8').catch(() => '{"engines":[]}');
  return (JSON.parse(text) as { engines: { modelId: string }[] }).engines.map((e) => e.modelId);
}

describe('the warm spare handed to a launch', () => {
  it('is the very server that was the spare: same pid, its own lines first in its tail, the launch\'s after', async () => {
    const notes: string[] = [];
    const warm = warmSpare(notes);
    warm.want(true);
    warm.workEnded();
    const pid = await eventually(() => (warm.status()?.phase === 'ready' ? warm.status()?.pid : null));
    await eventually(async () => (await recordedIds()).includes(SPARE_RECORD_ID));

    const launchLines: string[] = [];
    const handed = warm.adopt(COMMAND, {}, CPU_ARGV, parts(launchLines));
    if (handed === null) throw new Error('the ready spare was not handed over');
    adopted.push(handed.server);
    expect(handed.server.pid).toBe(pid);
    expect(handed.server.state).toEqual({ kind: 'loading' });
    expect([handed.server.port, handed.server.startedAt]).toEqual([4321, 7]);
    expect(warm.status()).toBeNull();
    // It got the launch's argv on stdin, and said so into the same tail its start is in.
    await eventually(() => launchLines.includes(`got ${JSON.stringify(CPU_ARGV)}`));
    expect(handed.server.tail.toArray()).toEqual(['spare: runtime ready', `got ${JSON.stringify(CPU_ARGV)}`]);

    // Its exit is the launch's now: the policy neither counts it a spare's death nor writes its end.
    handed.server.child.kill('SIGKILL');
    await handed.server.exited;
    expect(handed.server.state.kind).toBe('draining');
    expect(notes.join('\n')).not.toContain('ended on its own');
  });

  it('is never one that died before the launch came: its state says so, and the next one is handed over instead', async () => {
    const notes: string[] = [];
    const warm = warmSpare(notes);
    warm.want(true);
    warm.workEnded();
    const dead = await eventually(() => (warm.status()?.phase === 'ready' ? warm.status()?.pid : null));
    process.kill(dead, 'SIGKILL');
    await eventually(async () => !(await isRunning(dead)) && warm.status()?.pid !== dead);
    expect(warm.adopt(COMMAND, {}, CPU_ARGV, parts([]))).toBeNull();
    expect(notes.join('\n')).toContain('ended on its own (SIGKILL)');

    // Replaced after its backoff (1 s); the replacement is what a launch gets.
    const replacement = await eventually(() => (warm.status()?.phase === 'ready' ? warm.status()?.pid : null));
    expect(replacement).not.toBe(dead);
    const handed = warm.adopt(COMMAND, {}, CPU_ARGV, parts([]));
    if (handed !== null) adopted.push(handed.server);
    expect(handed?.server.pid).toBe(replacement);
  });

  it('is not one being ended: a spare marked stopping is refused, and ends', async () => {
    const warm = warmSpare();
    warm.want(true);
    warm.workEnded();
    const pid = await eventually(() => (warm.status()?.phase === 'ready' ? warm.status()?.pid : null));
    const ending = warm.endNow();
    expect(warm.adopt(COMMAND, {}, CPU_ARGV, parts([]))).toBeNull();
    await ending;
    expect(await isRunning(pid)).toBe(false);
  });
});
