// Which discovered files count as finished, with the clocks stepped by hand.
import { mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { discoverModels, type DiscoveredFile } from '../../../core/catalog/discovery.js';
import { Settling } from '../../../core/catalog/settling.js';

const WALL = 1_000_000;
const file = (sizeBytes: number, lastWriteMs: number, fileId = '1:1'): DiscoveredFile => ({
  baseId: 'm', path: '/models/m.gguf', realPath: '/models/m.gguf', parts: ['/models/m.gguf'], sizeBytes, mtimeMs: 0, lastWriteMs, fileId, dirIndex: 0, aliases: [],
});

function rig() {
  let monotonic = 0;
  const settling = new Settling({ settleMs: 1000, monotonicNow: () => monotonic, wallNow: () => WALL + monotonic });
  return { settling, step: (ms: number) => (monotonic += ms) };
}

describe('Settling', () => {
  test('a file nobody wrote to for the settle time is listed at its first check, and stays listed', () => {
    const { settling, step } = rig();
    expect(settling.check([file(10, WALL - 5000)]).settled).toHaveLength(1);
    step(10);
    expect(settling.check([file(10, WALL - 5000)])).toMatchObject({ growing: [], recheckInMs: null });
  });

  test('a growing file is held back until its size has held across checks the settle time apart', () => {
    const { settling, step } = rig();
    expect(settling.check([file(10, WALL)])).toMatchObject({ settled: [], recheckInMs: 1000 });
    step(600);
    expect(settling.check([file(20, WALL + 600)])).toMatchObject({ settled: [], recheckInMs: 1000 });
    step(600);
    expect(settling.check([file(20, WALL + 600)])).toMatchObject({ settled: [], recheckInMs: 400 });
    step(400);
    expect(settling.check([file(20, WALL + 600)]).settled).toHaveLength(1);
  });

  test('a split model whose later part is still written is held back, though its first part is old', () => {
    const { settling } = rig();
    // lastWriteMs is the latest of every part's mtime (discovery.ts).
    expect(settling.check([{ ...file(30, WALL), mtimeMs: WALL - 60_000 }]).settled).toEqual([]);
  });
});

describe('a listed file replaced under its name', () => {
  // Before: the replacement was "growing", so the model left the list for the settle time (its
  // running engine evicted, a request meanwhile told the model does not exist).
  test('by another file renamed over it: stands as it last settled until the new file settles, then is the new file', () => {
    const { settling, step } = rig();
    const old = file(10, WALL - 5000);
    settling.check([old]);
    step(100);
    expect(settling.check([file(99, WALL + 100, '1:2')])).toMatchObject({ settled: [old], growing: [], standingIn: new Set(['/models/m.gguf']), recheckInMs: 1000 });
    step(1000);
    expect(settling.check([file(99, WALL + 100, '1:2')])).toMatchObject({ settled: [{ sizeBytes: 99 }], growing: [], standingIn: new Set(), recheckInMs: null });
  });

  test('rewritten in place (the same inode): growing like a new file, nothing stands for it', () => {
    const { settling, step } = rig();
    settling.check([file(10, WALL - 5000)]);
    step(100);
    expect(settling.check([file(4, WALL + 100)])).toMatchObject({ settled: [], growing: [{ sizeBytes: 4 }], standingIn: new Set() });
    step(100);
    expect(settling.check([file(8, WALL + 200)])).toMatchObject({ settled: [], growing: [{ sizeBytes: 8 }] });
  });

  test('a file deleted and written again under the name is new: nothing stands for it', () => {
    const { settling, step } = rig();
    settling.check([file(10, WALL - 5000)]);
    step(100);
    settling.check([]);
    step(100);
    expect(settling.check([file(5, WALL + 200)])).toMatchObject({ settled: [], growing: [{ sizeBytes: 5 }] });
  });
});

describe("discovery's last write", () => {
  test('is the latest mtime of any part of a split model', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llmtray-settling-'));
    try {
      await writeFile(join(dir, 'big-00001-of-00002.gguf'), 'x');
      await writeFile(join(dir, 'big-00002-of-00002.gguf'), 'y');
      await utimes(join(dir, 'big-00001-of-00002.gguf'), new Date(0), new Date(0));
      const [found] = (await discoverModels([dir])).files;
      expect(found?.mtimeMs).toBe(0);
      expect(found?.lastWriteMs).toBe((await stat(join(dir, 'big-00002-of-00002.gguf'))).mtimeMs);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
