import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { ConfigStore } from '../../../core/catalog/config/config-store.js';
import type { LlmtrayConfig } from '../../../core/catalog/config/load-config.js';
import type { PlatformFacts } from '../../../core/catalog/paths.js';

let dir: string;
let file: string;
let facts: PlatformFacts;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-store-'));
  file = join(dir, 'config.yaml');
  facts = { platform: 'linux', env: {}, homeDir: dir };
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ConfigStore', () => {
  test('a missing file is the defaults, and fine', async () => {
    const store = new ConfigStore({ file, facts });
    expect(await store.reload()).toEqual({ ok: true });
    expect(store.current().models).toEqual([]);
    expect(store.current().modelDirs[0]).toBe(join(dir, 'models'));
  });

  test('a bad edit keeps the last good config running and says why; fixing it takes effect', async () => {
    const store = new ConfigStore({ file, facts });
    const seen: LlmtrayConfig[] = [];
    store.onChanged((config) => seen.push(config));

    await writeFile(file, 'models:\n  - {id: a, path: /m/a.gguf, ctx: 4096}\n');
    expect(await store.reload()).toEqual({ ok: true });
    const good = store.current();
    expect(seen).toEqual([good]);

    await writeFile(file, 'models:\n  - {id: a, path: /m/a.gguf, ctx: -5}\n');
    expect(await store.reload()).toEqual({ ok: false, errors: [`${file}: models[0].ctx: expected a positive integer (context tokens), got -5`] });
    expect(store.current()).toBe(good);
    expect(store.errors()).toHaveLength(1);
    expect(seen).toHaveLength(1);

    await writeFile(file, 'models:\n  - {id: a, path: /m/a.gguf, ctx: 8192}\n');
    expect(await store.reload()).toEqual({ ok: true });
    expect(store.current().models[0]?.ctx).toBe(8192);
    expect(store.errors()).toEqual([]);
    expect(seen).toHaveLength(2);
  });

  test('reloading an unchanged file announces nothing', async () => {
    await writeFile(file, 'listen: {port: 9000}\n');
    const store = new ConfigStore({ file, facts });
    let changes = 0;
    store.onChanged(() => changes++);
    await store.reload();
    await store.reload();
    expect(changes).toBe(1);
  });

  test('errors from the cross-model check reject the candidate like schema errors', async () => {
    await writeFile(file, 'models:\n  - {id: a, path: /m/a.gguf}\n');
    const store = new ConfigStore({ file, facts, check: async (candidate) => (candidate.models.length > 0 ? ['models[0].draft: nope'] : []) });
    expect(await store.reload()).toEqual({ ok: false, errors: ['models[0].draft: nope'] });
    expect(store.current().models).toEqual([]);
  });

  test('an unreadable config (a folder in its place) is an error naming the file', async () => {
    const store = new ConfigStore({ file: dir, facts });
    const result = await store.reload();
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]).toMatch(new RegExp(`^${dir}: cannot read the config file: EISDIR`));
  });
});
