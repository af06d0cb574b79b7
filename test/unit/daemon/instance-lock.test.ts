// One daemon per data dir, and a crash never locks the person out.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { acquireInstanceLock, InstanceLockedError, type LockProbe } from '../../../core/daemon/instance-lock.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-lock-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const probe = (alive: Record<number, string | null>): LockProbe => ({
  alive: async (pid) => pid in alive,
  commandLine: async (pid) => alive[pid] ?? null,
});

describe('acquireInstanceLock', () => {
  it('takes a free lock, refuses a second daemon naming its pid, and frees on release', async () => {
    const first = await acquireInstanceLock(dir, probe({ 100: 'node dist/core/cli.js serve' }), 100);
    expect((await readFile(first.path, 'utf8')).trim()).toBe('100');
    const refused = await acquireInstanceLock(dir, probe({ 100: 'node dist/core/cli.js serve' }), 200).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InstanceLockedError);
    expect((refused as Error).message).toMatch(/pid 100/);
    first.release();
    const second = await acquireInstanceLock(dir, probe({}), 200);
    expect((await readFile(second.path, 'utf8')).trim()).toBe('200');
  });

  it('takes over a lock whose daemon died', async () => {
    await writeFile(join(dir, 'daemon.lock'), '4242\n');
    const lock = await acquireInstanceLock(dir, probe({}), 300);
    expect((await readFile(lock.path, 'utf8')).trim()).toBe('300');
  });

  it('takes over a lock whose pid now belongs to another program', async () => {
    await writeFile(join(dir, 'daemon.lock'), '4242\n');
    const lock = await acquireInstanceLock(dir, probe({ 4242: '/usr/bin/vim notes.txt' }), 300);
    expect((await readFile(lock.path, 'utf8')).trim()).toBe('300');
  });

  it('release leaves a lock that is not ours alone', async () => {
    const lock = await acquireInstanceLock(dir, probe({}), 100);
    await writeFile(lock.path, '999\n');
    lock.release();
    expect((await readFile(lock.path, 'utf8')).trim()).toBe('999');
  });
});
