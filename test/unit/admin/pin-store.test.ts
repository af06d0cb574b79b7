import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeAtomicWriteFs, type AtomicWriteFs } from '../../../core/common/atomic-file.js';
import { PINS_FILE, PinStore } from '../../../core/admin/pin-store.js';

let dataDir: string;
beforeEach(async () => {
  dataDir = await fsp.mkdtemp(join(tmpdir(), 'llmtray-pins-'));
});
afterEach(async () => {
  await fsp.rm(dataDir, { recursive: true, force: true });
});

const pinsPath = (): string => join(dataDir, PINS_FILE);

describe('PinStore', () => {
  it('starts empty without a file and keeps pins across a restart', async () => {
    const store = await PinStore.open(dataDir);
    expect(store.list()).toEqual([]);
    expect(store.problem).toBeNull();
    expect(await store.setPinned('qwen-32b', true)).toBe(true);
    expect(await store.setPinned('llama-3.1-8b', true)).toBe(true);
    expect(await store.setPinned('llama-3.1-8b', true)).toBe(false);
    expect(await store.setPinned('qwen-32b', false)).toBe(true);

    const reopened = await PinStore.open(dataDir);
    expect(reopened.list()).toEqual(['llama-3.1-8b']);
    expect(reopened.isPinned('llama-3.1-8b')).toBe(true);
    expect(reopened.isPinned('qwen-32b')).toBe(false);
    expect(JSON.parse(await fsp.readFile(pinsPath(), 'utf8'))).toEqual({ version: 1, pinned: ['llama-3.1-8b'] });
  });

  it('creates a missing data directory', async () => {
    const nested = join(dataDir, 'a', 'b');
    const store = await PinStore.open(nested);
    await store.setPinned('m', true);
    expect((await PinStore.open(nested)).list()).toEqual(['m']);
  });

  it('ends with the last of several concurrent changes on disk', async () => {
    const store = await PinStore.open(dataDir);
    await Promise.all([store.setPinned('a', true), store.setPinned('b', true), store.setPinned('a', false), store.setPinned('c', true)]);
    expect(store.list()).toEqual(['b', 'c']);
    expect((await PinStore.open(dataDir)).list()).toEqual(['b', 'c']);
  });

  it('survives a crash in the middle of a write: the old pins stay, the stray temp file is cleared', async () => {
    const first = await PinStore.open(dataDir);
    await first.setPinned('kept', true);

    // The process "dies" after writing the new content to the temp file and before the rename:
    // a promise that never settles runs no further code, as a killed process would.
    const dying: AtomicWriteFs = { ...nodeAtomicWriteFs, rename: () => new Promise<void>(() => {}) };
    const crashing = await PinStore.open(dataDir, { fs: dying });
    void crashing.setPinned('lost', true);
    await waitFor(async () => (await fsp.readdir(dataDir)).some((name) => name.endsWith('.tmp')));
    expect(JSON.parse(await fsp.readFile(pinsPath(), 'utf8'))).toEqual({ version: 1, pinned: ['kept'] });

    const restarted = await PinStore.open(dataDir);
    expect(restarted.list()).toEqual(['kept']);
    expect(restarted.problem).toBeNull();
    expect(await fsp.readdir(dataDir)).toEqual([PINS_FILE]);
  });

  it('keeps memory and file equal when a write fails, and reports the failure', async () => {
    const failing: AtomicWriteFs = {
      ...nodeAtomicWriteFs,
      rename: async () => { throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }); },
    };
    const store = await PinStore.open(dataDir, { fs: failing });
    await expect(store.setPinned('m', true)).rejects.toThrow('ENOSPC');
    expect(store.isPinned('m')).toBe(false);
    expect(await fsp.readdir(dataDir)).toEqual([]);
    // The queue is not stuck behind the failure.
    await expect(store.setPinned('m', false)).resolves.toBe(false);
  });

  it.each([
    ['not JSON', '{"version": 1, "pinned": ["a"', /not valid JSON/],
    ['the wrong shape', '["a", "b"]', /expected an object/],
    ['a non-string id', '{"version": 1, "pinned": ["a", 3]}', /"pinned" must be a list of model ids/],
    ['an unknown version', '{"version": 2, "pinned": []}', /unknown version 2, expected 1/],
  ])('opens empty on a file with %s, moves it aside and says why', async (_what, content, reason) => {
    await fsp.writeFile(pinsPath(), content);
    const store = await PinStore.open(dataDir);
    expect(store.list()).toEqual([]);
    expect(store.problem).toMatch(reason);
    expect(store.problem).toContain(`${pinsPath()}.corrupt`);
    expect(await fsp.readFile(`${pinsPath()}.corrupt`, 'utf8')).toBe(content);
    await store.setPinned('fresh', true);
    expect((await PinStore.open(dataDir)).list()).toEqual(['fresh']);
  });
});

async function waitFor(condition: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition never became true');
}
