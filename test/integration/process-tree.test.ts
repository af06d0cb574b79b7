// How a server's memory is measured on Linux: its process tree's RSS, with the tree's members
// from a walk of /proc/PID/task/*/children that is reused for MEMBERS_FRESH_MS (the walk reads a
// file per thread, and the controller measures every server several times a second under load).
// Real processes: a parent that starts a child holding 96 MiB when told to; and how a tree is
// stopped: one SIGTERM per process.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MEMBERS_FRESH_MS, signalTree, treeResidentBytes } from '../../core/engine/supervisor/process-tree.js';

const MIB = 1024 * 1024;
const CHILD_BYTES = 96 * MIB;
const started: ChildProcess[] = [];
const childPids: number[] = [];

afterEach(() => {
  for (const pid of childPids.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  for (const child of started.splice(0)) child.kill('SIGKILL');
});

/** A parent process that, on a line on stdin, starts a child that fills 96 MiB and prints the child's pid once it has. */
function parentThatSpawnsOnRequest(): ChildProcess {
  const childCode = `const b = Buffer.alloc(${CHILD_BYTES}, 1); process.stdout.write('filled\\n'); setInterval(() => b[0]++, 1000);`;
  const parentCode = `
    const { spawn } = require('node:child_process');
    process.stdin.once('data', () => {
      const child = spawn(process.execPath, ['-e', ${JSON.stringify(childCode)}], { stdio: ['ignore', 'pipe', 'ignore'] });
      child.stdout.once('data', () => process.stdout.write('child ' + child.pid + '\\n'));
    });
    setInterval(() => {}, 1000);`;
  const parent = spawn(process.execPath, ['-e', parentCode], { stdio: ['pipe', 'pipe', 'ignore'] });
  started.push(parent);
  return parent;
}

describe.runIf(process.platform === 'linux')('treeResidentBytes on Linux', () => {
  it('reuses the walk for MEMBERS_FRESH_MS, then counts a child started since', async () => {
    const parent = parentThatSpawnsOnRequest();
    const pid = parent.pid ?? -1;
    const t0 = 1_000_000;
    const alone = await treeResidentBytes(pid, 'linux', t0);
    expect(alone).toBeGreaterThan(0);

    parent.stdin?.write('go\n');
    const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
    const childPid = Number(/child (\d+)/.exec(line.toString())?.[1]);
    childPids.push(childPid);

    // Within the window the walk made at t0 stands: the new child is not a member yet.
    const soon = await treeResidentBytes(pid, 'linux', t0 + MEMBERS_FRESH_MS - 1);
    expect(soon).toBeLessThan(alone + CHILD_BYTES / 2);
    // Past it the tree is walked again, and the child's 96 MiB are counted.
    const later = await treeResidentBytes(pid, 'linux', t0 + MEMBERS_FRESH_MS);
    expect(later).toBeGreaterThan(alone + (CHILD_BYTES * 3) / 4);
  });

  it('holds nothing once its root is gone, though a child it started outlives it and the walk is still fresh', async () => {
    const parent = parentThatSpawnsOnRequest();
    const pid = parent.pid ?? -1;
    parent.stdin?.write('go\n');
    const [line] = (await once(parent.stdout!, 'data')) as [Buffer];
    childPids.push(Number(/child (\d+)/.exec(line.toString())?.[1]));
    const t0 = 2_000_000;
    expect(await treeResidentBytes(pid, 'linux', t0)).toBeGreaterThan((CHILD_BYTES * 3) / 4);
    parent.kill('SIGKILL');
    await once(parent, 'exit');
    expect(await treeResidentBytes(pid, 'linux', t0 + 1)).toBe(0);
  });
});

describe.runIf(process.platform === 'linux')('signalTree on Linux', () => {
  it('signals the group once and no member of it again: each process hears one SIGTERM; one outside the group is signalled on its own', async () => {
    // Each process counts the SIGTERMs it hears for a while after the first, then says how many
    // and exits: a second one is what ended llama-server at once and the embedded engine mid-save.
    // Each says 'armed' once its handler is in place: a signal before that would end it by default.
    const counting = (who: string) =>
      `let n = 0; process.on('SIGTERM', () => { if (n++ === 0) setTimeout(() => { process.stdout.write('${who} ' + n + '\\n'); process.exit(0); }, 300); }); process.stdout.write('armed ${who}\\n'); setInterval(() => {}, 1000);`;
    const leaderCode = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['-e', ${JSON.stringify(counting('child'))}], { stdio: ['ignore', 'inherit', 'ignore'] });
      const own = spawn(process.execPath, ['-e', ${JSON.stringify(counting('own'))}], { stdio: ['ignore', 'inherit', 'ignore'], detached: true });
      setTimeout(() => process.stdout.write('ready ' + child.pid + ' ' + own.pid + '\\n'), 200);
      ${counting('leader')}`;
    const leader = spawn(process.execPath, ['-e', leaderCode], { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    started.push(leader);
    let out = '';
    leader.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
    await vi.waitFor(() => expect(out).toMatch(/ready \d+ \d+/), { timeout: 30_000, interval: 20 });
    await vi.waitFor(() => expect(['leader', 'child', 'own'].filter((who) => out.includes(`armed ${who}\n`))).toHaveLength(3), { timeout: 30_000, interval: 20 });
    const [, child, own] = (/ready (\d+) (\d+)/.exec(out) ?? []).map(Number) as [number, number, number];
    childPids.push(child, own);
    const pid = leader.pid ?? -1;
    const sent: [number, string][] = [];
    signalTree(pid, [pid, child, own], 'SIGTERM', (target, signal) => {
      sent.push([target, signal]);
      process.kill(target, signal);
    });
    // The group (the leader and the child it started), then the process that left the group.
    expect(sent).toEqual([[-pid, 'SIGTERM'], [own, 'SIGTERM']]);
    await vi.waitFor(() => expect(out.match(/(leader|child|own) \d+\n/g)?.sort()).toEqual(['child 1\n', 'leader 1\n', 'own 1\n']), { timeout: 30_000, interval: 20 });
  }, 120_000);
});
