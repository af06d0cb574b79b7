import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, test } from 'vitest';
import { ConfigStore } from '../../../core/catalog/config/config-store.js';
import type { LlmtrayConfig } from '../../../core/catalog/config/load-config.js';
import type { PlatformFacts } from '../../../core/catalog/paths.js';
import { FakeClock } from '../../support/fake-clock.js';

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

  test('says whether the config in force is the file\'s last good content or the defaults, through a bad edit and a deletion', async () => {
    const store = new ConfigStore({ file, facts });
    await store.reload();
    expect(store.inForce()).toBe('defaults');
    await writeFile(file, 'deletedConfigGrace: 0s\nmodels:\n  - {id: a, path: /m/a.gguf}\n');
    await store.reload();
    expect(store.inForce()).toBe('file');
    // A bad edit keeps the file's last good content: there is a last good config.
    await writeFile(file, 'models:\n  - {id: a, path: /m/a.gguf, cxt: 1}\n');
    expect((await store.reload()).ok).toBe(false);
    expect(store.inForce()).toBe('file');
    // Deleted, then written again with an error: what keeps running is the defaults, not a last good config.
    await rm(file);
    await store.reload();
    expect(store.inForce()).toBe('defaults');
    await writeFile(file, 'models:\n  - {id: a, path: /m/a.gguf, cxt: 1}\n');
    expect((await store.reload()).ok).toBe(false);
    expect(store.inForce()).toBe('defaults');
    expect(store.current().models).toEqual([]);
  });

  test('a deleted file keeps its config in force for deletedConfigGrace, saying so and when to look again; put back, nothing changed; still gone, the defaults apply', async () => {
    const clock = new FakeClock();
    const store = new ConfigStore({ file, facts, monotonicNow: () => clock.elapsed() });
    const changes: LlmtrayConfig[] = [];
    store.onDidChange((config) => changes.push(config));
    await writeFile(file, 'deletedConfigGrace: 10s\nmodels:\n  - {id: a, path: /m/a.gguf}\n');
    expect(await store.reload()).toEqual({ ok: true });
    changes.length = 0;

    await rm(file);
    const gone = await store.reload();
    expect(gone).toMatchObject({ ok: false, recheckInMs: 10_000 });
    expect(store.errors()[0]).toContain(`${file}: the file is gone; the config read from it keeps running for 10 s more (deletedConfigGrace)`);
    expect(store.current().models.map((m) => m.id)).toEqual(['a']);
    expect(store.inForce()).toBe('file');
    // An editor's save puts it back within the grace: nothing changed, nothing said.
    await clock.advance(4_000);
    await writeFile(file, 'deletedConfigGrace: 10s\nmodels:\n  - {id: a, path: /m/a.gguf}\n');
    expect(await store.reload()).toEqual({ ok: true });
    expect(changes).toEqual([]);
    expect(store.errors()).toEqual([]);

    // Deleted again: a grace of its own, counted from this deletion.
    await rm(file);
    await clock.advance(16_000);
    expect(await store.reload()).toMatchObject({ ok: false, recheckInMs: 10_000 });
    await clock.advance(6_000);
    expect(await store.reload()).toMatchObject({ ok: false, recheckInMs: 4_000 });
    await clock.advance(4_000);
    expect(await store.reload()).toEqual({ ok: true });
    expect(store.inForce()).toBe('defaults');
    expect(store.current().models).toEqual([]);
    expect(changes).toHaveLength(1);
  });

  test('a bad edit keeps the last good config running and says why; fixing it takes effect', async () => {
    const store = new ConfigStore({ file, facts });
    const seen: LlmtrayConfig[] = [];
    store.onDidChange((config) => seen.push(config));

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
    store.onDidChange(() => changes++);
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

  test('a YAML alias bomb is a config error, and the reload after it still runs', async () => {
    const store = new ConfigStore({ file, facts });
    // Nine levels of nine aliases each: 9^9 nodes if expanded; the parser refuses instead.
    const levels = ['l0: &l0 [x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 10; i++) levels.push(`l${i}: &l${i} [${Array(9).fill(`*l${i - 1}`).join(', ')}]`);
    await writeFile(file, `${levels.join('\n')}\n`);
    const bombed = await store.reload();
    expect(bombed.ok).toBe(false);
    expect(!bombed.ok && bombed.errors).toEqual([`${file}: YAML cannot be read: Excessive alias count indicates a resource exhaustion attack`]);

    await writeFile(file, 'listen: {port: 9000}\n');
    expect(await store.reload()).toEqual({ ok: true });
    expect(store.current().listen.port).toBe(9000);
  });

  test('a check that throws fails that reload only; the next one runs', async () => {
    let broken = true;
    const store = new ConfigStore({ file, facts, check: async () => {
      if (broken) throw new Error('the disk went away');
      return [];
    } });
    await writeFile(file, 'listen: {port: 9001}\n');
    expect(await store.reload()).toEqual({ ok: false, errors: [`${file}: the config could not be checked: the disk went away`] });
    broken = false;
    expect(await store.reload()).toEqual({ ok: true });
    expect(store.current().listen.port).toBe(9001);
  });

  test('an unreadable config (a folder in its place) is an error naming the file', async () => {
    const store = new ConfigStore({ file: dir, facts });
    const result = await store.reload();
    expect(result.ok).toBe(false);
    expect(!result.ok && result.errors[0]).toMatch(new RegExp(`^${dir}: cannot read the config file: EISDIR`));
  });
});
