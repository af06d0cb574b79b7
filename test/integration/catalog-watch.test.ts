// The catalog watcher against the real file system: fs.watch, real files, real debounce.
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { isModelDirEvent, watchCatalog, type CatalogWatcher } from '../../core/catalog/watch-catalog.js';

let root: string;
let watcher: CatalogWatcher | undefined;
let changes: string[][];
let waiters: (() => void)[];

/** Resolves at the next onChange after the call (or at once if one arrived unseen). */
function nextChange(seen: number): Promise<string[]> {
  return new Promise((resolve) => {
    const check = () => (changes.length > seen ? resolve(changes[seen]!) : waiters.push(check));
    check();
  });
}

function start(options: { configPath: string; modelDirs: string[]; debounceMs?: number; maxWaitMs?: number }): void {
  watcher = watchCatalog({
    ...options,
    onChange: ({ paths }) => {
      changes.push(paths);
      const pending = waiters;
      waiters = [];
      for (const w of pending) w();
    },
  });
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'llmtray-watch-'));
  changes = [];
  waiters = [];
  await mkdir(join(root, 'config'));
  await mkdir(join(root, 'models/nested'), { recursive: true });
});

afterEach(async () => {
  watcher?.close();
  watcher = undefined;
  await rm(root, { recursive: true, force: true });
});

describe('watchCatalog', () => {
  test('saving the config file calls back with its path; other files in its folder do not', async () => {
    start({ configPath: join(root, 'config/config.yaml'), modelDirs: [], debounceMs: 100 });
    await writeFile(join(root, 'config/notes.txt'), 'unrelated');
    await writeFile(join(root, 'config/config.yaml'), 'models: []\n');
    expect(await nextChange(0)).toEqual([join(root, 'config/config.yaml')]);
  });

  test('an editor-style save (write elsewhere, rename over) is seen, twice in a row', async () => {
    const configPath = join(root, 'config/config.yaml');
    await writeFile(configPath, 'a: 1\n');
    start({ configPath, modelDirs: [], debounceMs: 100 });
    for (const [i, text] of ['b: 2\n', 'c: 3\n'].entries()) {
      await writeFile(join(root, 'config/.config.yaml.swp'), text);
      await rename(join(root, 'config/.config.yaml.swp'), configPath);
      expect(await nextChange(i)).toContain(configPath);
    }
  });

  test('a model appearing in a nested folder of a model dir calls back once for the burst', async () => {
    start({ configPath: join(root, 'config/config.yaml'), modelDirs: [join(root, 'models')], debounceMs: 1000 });
    for (let i = 0; i < 5; i++) writeFileSync(join(root, `models/nested/m${i}.gguf`), 'x');
    const paths = await nextChange(0);
    for (let i = 0; i < 5; i++) expect(paths).toContain(join(root, `models/nested/m${i}.gguf`));
  });

  // Before, on Linux under Node 20 and 22 (whose `recursive` watches each file's inode): the
  // first rename over a model was seen, the later ones never were.
  test('a model file replaced by a rename over it is seen every time', async () => {
    const model = join(root, 'models/nested/rep.gguf');
    await writeFile(model, 'first');
    start({ configPath: join(root, 'config/config.yaml'), modelDirs: [join(root, 'models')], debounceMs: 100 });
    for (let i = 0; i < 3; i++) {
      await writeFile(`${model}.part`, `replacement ${i}`);
      await rename(`${model}.part`, model);
      expect(await nextChange(i)).toContain(model);
    }
  });

  test('a folder made after the start, whatever its name, is watched: a model renamed into it is seen', async () => {
    start({ configPath: join(root, 'config/config.yaml'), modelDirs: [join(root, 'models')], debounceMs: 100 });
    await mkdir(join(root, 'models/Qwen2.5-7B'));
    expect(await nextChange(0)).toContain(join(root, 'models/Qwen2.5-7B'));
    await writeFile(join(root, 'models/Qwen2.5-7B/q.gguf.part'), 'x');
    await rename(join(root, 'models/Qwen2.5-7B/q.gguf.part'), join(root, 'models/Qwen2.5-7B/q.gguf'));
    expect(await nextChange(1)).toContain(join(root, 'models/Qwen2.5-7B/q.gguf'));
  });

  test('a model dir that does not exist yet is picked up when it appears, and watched from then on', async () => {
    const later = join(root, 'later/models');
    start({ configPath: join(root, 'config/config.yaml'), modelDirs: [later], debounceMs: 100 });
    mkdirSync(later, { recursive: true });
    expect(await nextChange(0)).toContain(later);
    await writeFile(join(later, 'new.gguf'), 'x');
    expect(await nextChange(1)).toContain(join(later, 'new.gguf'));
  });
});

describe('a model file being written while the config is saved', () => {
  // Before: one timer for both, re-armed by each write, fired only after the download ended.
  test('the config save is called back while the writes go on, and so is the model dir, at the bound', async () => {
    const configPath = join(root, 'config/config.yaml');
    start({ configPath, modelDirs: [join(root, 'models')], debounceMs: 200, maxWaitMs: 1000 });
    let writing = true;
    const download = (async () => {
      for (let i = 0; i < 40; i++) {
        await writeFile(join(root, 'models/download.gguf'), 'x'.repeat(i + 1));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      writing = false;
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await writeFile(configPath, 'models: []\n');
    const seenWhileWriting: string[][] = [];
    for (let seen = 0; ; seen++) {
      const paths = await nextChange(seen);
      if (!writing) break;
      seenWhileWriting.push(paths);
      if (seenWhileWriting.some((p) => p.includes(configPath)) && seenWhileWriting.some((p) => p.includes(join(root, 'models/download.gguf')))) break;
    }
    await download;
    expect(seenWhileWriting.some((paths) => paths.includes(configPath)), 'the config save waited for the writes to end').toBe(true);
    expect(seenWhileWriting.some((paths) => paths.includes(join(root, 'models/download.gguf'))), 'the model dir waited for the writes to end').toBe(true);
  });
});

describe('which model-dir events matter', () => {
  test.each([
    ['model.gguf', true], ['sub/dir/Model.GGUF', true], ['models--org--repo', true], [null, true],
    ['model.gguf.part', false], ['blobs/abc.incomplete', false], ['model.gguf.partial-123', false], ['notes.txt', false],
  ])('%s → %s', (name, matters) => expect(isModelDirEvent(name)).toBe(matters));
});
