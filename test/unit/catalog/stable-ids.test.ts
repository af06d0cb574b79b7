// Ids of discovered models stay with their files, through the real Catalog on real folders.
// Before, two folders each holding `same.gguf` gave `same` and `same-<hash>`, and deleting the
// first file renamed the second to `same` under the clients using `same-<hash>` (404).
import { createHash } from 'node:crypto';
import { copyFile, mkdir, mkdtemp, realpath, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { Catalog } from '../../../core/catalog/catalog.js';
import { writeLlamaGguf } from '../../../core/catalog/demo/gguf-writer.js';

let root: string;
let configPath: string;
let dataDir: string;
const first = () => join(root, 'first/same.gguf');
const second = () => join(root, 'second/same.gguf');

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'llmtray-stable-ids-'));
  await mkdir(join(root, 'first'));
  await mkdir(join(root, 'second'));
  await writeLlamaGguf(first(), { name: 'same', nLayer: 1, nEmbd: 32, nHead: 2, nHeadKv: 2, nFf: 64, contextLength: 512, fileType: 'f32', seed: 7 });
  await copyFile(first(), second());
  configPath = join(root, 'config.yaml');
  await writeFile(configPath, `modelDirs: [${JSON.stringify(join(root, 'first'))}, ${JSON.stringify(join(root, 'second'))}]\n`);
  dataDir = join(root, 'data');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

// settleMs 0: the files written a moment before are finished, not being downloaded.
const open = () => Catalog.open({ configPath, dataDir, facts: { platform: 'linux', env: {}, homeDir: root }, settleMs: 0 });
const idOf = (catalog: Catalog, path: string) => catalog.models().find((m) => m.path === path)?.id;

describe('ids of discovered models', () => {
  test('deleting one of two same-named files leaves the other its id, now and after a restart', async () => {
    const catalog = await open();
    expect(idOf(catalog, first())).toBe('same');
    const suffixed = idOf(catalog, second());
    expect(suffixed).toMatch(/^same-[0-9a-f]{6}$/);

    await rm(first());
    await catalog.reload();
    expect(catalog.models().map((m) => m.id)).toEqual([suffixed]);

    const restarted = await open();
    expect(idOf(restarted, second())).toBe(suffixed);

    // The deleted file comes back (a drive plugged in again): it finds its own name again.
    await copyFile(second(), first());
    await restarted.reload();
    expect(idOf(restarted, first())).toBe('same');
    expect(idOf(restarted, second())).toBe(suffixed);
  });

  test('a configured id takes the name from a discovered file that had it', async () => {
    const catalog = await open();
    expect(idOf(catalog, first())).toBe('same');
    await writeFile(configPath, `modelDirs: [${JSON.stringify(join(root, 'first'))}]\nmodels:\n  - { id: same, path: ${JSON.stringify(second())} }\n`);
    await catalog.reload();
    expect(idOf(catalog, second())).toBe('same');
    expect(idOf(catalog, first())).toMatch(/^same-[0-9a-f]{6}$/);
  });

  test('a file still being written is known by the id it will have once it settles, and only by it', async () => {
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(first(), longAgo, longAgo);
    // second/same.gguf written "now" as far as the first look can tell, however slow the machine
    // (a modification time ahead of the clock counts as just written): still being written.
    const justNow = new Date(Date.now() + 60_000);
    await utimes(second(), justNow, justNow);
    const catalog = await Catalog.open({ configPath, dataDir, facts: { platform: 'linux', env: {}, homeDir: root }, settleMs: 500 });
    expect(catalog.models().map((m) => m.path)).toEqual([first()]);
    // 'same' is the first folder's, listed: a request for it is served, never told "being written".
    expect(catalog.beingWritten('same')).toBeUndefined();
    // The file being written will get the suffixed id once settled (model-ids.ts), so that is its name now.
    const beingWrittenId = `same-${createHash('sha256').update(await realpath(second())).digest('hex').slice(0, 6)}`;
    expect(catalog.beingWritten(beingWrittenId)).toMatchObject({ id: beingWrittenId, path: second(), sizeBytes: expect.any(Number) });
    expect(catalog.beingWritten(beingWrittenId.toUpperCase())?.path).toBe(second());

    while (idOf(catalog, second()) === undefined) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      await catalog.reload();
    }
    expect(idOf(catalog, second())).toBe(beingWrittenId);
    expect(catalog.beingWritten(beingWrittenId)).toBeUndefined();
  });
});
