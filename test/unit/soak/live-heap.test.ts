// The soak's live-heap reading against a real Node process with its inspector open: it reads
// what the process keeps after a full collection, not the garbage it made, and it lets go of the
// session, so the daemon it reads can still exit (an open session holds a Node process at its
// exit, "Waiting for the debugger to disconnect").
import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { INSPECT_FLAG, inspectorUrl, liveHeapAfterGc } from '../../soak/live-heap.js';
import { eventually } from '../../support/daemon-process.js';

const children: ChildProcess[] = [];
// A test that failed half-way leaves no process behind.
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

/** A Node process running `script` with its inspector open, and the inspector's URL. */
async function inspected(script: string) {
  const child = spawn(process.execPath, [INSPECT_FLAG, '-e', script], { stdio: ['pipe', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const url = await eventually('the inspector URL on stderr', async () => inspectorUrl(stderr) ?? undefined, 30_000, 20);
  return { child, url, exited, stderr: () => stderr };
}

// Holds ~40 MB of strings alive until a line on stdin drops them; closing stdin lets the event
// loop empty. Garbage is made and dropped all along, which a reading must not count.
const SCRIPT = `
globalThis.kept = Array.from({ length: 400_000 }, (_, i) => 'kept-' + i + '-'.repeat(64));
setInterval(() => { Array.from({ length: 50_000 }, (_, i) => 'garbage-' + i + '-'.repeat(64)); }, 50).unref();
process.stdin.on('data', () => { globalThis.kept = null; });
`;

describe('liveHeapAfterGc', () => {
  it('reads the heap the process keeps, without the garbage it makes, and releases the session', async () => {
    const p = await inspected(SCRIPT);
    const holding = await liveHeapAfterGc(p.url);
    // 400,000 kept strings of ~75 characters: well over 25 MB live after the collection.
    expect(holding.heapUsedBytes).toBeGreaterThan(25e6);
    expect(holding.externalBytes).toBeGreaterThan(0);
    p.child.stdin.write('drop\n'); // the kept strings become garbage
    const dropped = await eventually('the kept strings dropped', async () => {
      const reading = await liveHeapAfterGc(p.url);
      return reading.heapUsedBytes < holding.heapUsedBytes - 20e6 ? reading : undefined;
    }, 30_000);
    // A live heap read without the collection would still hold the dropped strings and the garbage.
    expect(dropped.heapUsedBytes).toBeLessThan(15e6);
    // With stdin closed the event loop is empty: the process exits by itself only if no session holds it.
    p.child.stdin.end();
    expect(await p.exited).toBe(0);
    expect(p.stderr()).not.toContain('Waiting for the debugger to disconnect');
  });

  it('names a process whose inspector is gone', async () => {
    const p = await inspected('setTimeout(() => {}, 60_000)');
    p.child.kill('SIGKILL');
    await p.exited;
    await expect(liveHeapAfterGc(p.url, 5_000)).rejects.toThrow(/ECONNREFUSED|inspector/);
  });
});
