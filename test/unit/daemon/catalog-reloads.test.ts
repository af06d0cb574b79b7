// The deleted-config warning names the models it unloads by whether they ran when the catalog
// dropped them — not when the reload that read the deletion was asked for (a reload queued
// behind another, before a load), nor when its result is read (the controller has begun their
// unload by then). Real file watches on a temp folder; the catalog is a stand-in whose reloads
// the test finishes, to put those moments in the order the suite once met under load.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Catalog, CatalogModel } from '../../../core/catalog/catalog.js';
import type { ReloadResult } from '../../../core/catalog/config/config-store.js';
import type { Log } from '../../../core/controller/effects.js';
import { Emitter } from '../../../core/common/emitter.js';
import { startCatalogReloads, type CatalogReloads } from '../../../core/daemon/catalog-reloads.js';
import { catalogModel } from '../../support/catalog-model.js';

/** A catalog whose reloads wait for the test: each `reload()` is one pending `finish`. */
function heldCatalog(initial: CatalogModel[]) {
  let models = initial;
  const changes = new Emitter<readonly CatalogModel[]>('the test catalog');
  const pending: Array<(next: CatalogModel[]) => void> = [];
  const catalog = {
    models: () => models,
    config: () => ({ modelDirs: [] as string[], models: [] as { path: string }[] }),
    settleRecheckInMs: () => null,
    onDidChange: changes.event,
    reload: () =>
      new Promise<ReloadResult>((resolve) => {
        pending.push((next) => {
          models = next;
          changes.fire(models);
          resolve({ ok: true });
        });
      }),
  };
  return { catalog: catalog as unknown as Catalog, pending };
}

function recordingLog(lines: string[]): Log {
  const record = (line: string): void => void lines.push(line);
  return { info: () => undefined, warn: record, error: record };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('the deleted-config warning', () => {
  let dir = '';
  let reloads: CatalogReloads | undefined;
  afterEach(async () => {
    reloads?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('names a model that ran when the catalog dropped it, though it was idle when that reload was asked for and stopping when its result came', async () => {
    dir = await mkdtemp(join(tmpdir(), 'llmtray-catalog-reloads-'));
    const configPath = join(dir, 'config.yaml');
    await writeFile(configPath, 'models: []\n');
    const { catalog, pending } = heldCatalog([catalogModel('doomed'), catalogModel('idle')]);
    const warnings: string[] = [];
    let running = false;
    reloads = startCatalogReloads({
      catalog,
      configPath,
      log: recordingLog(warnings),
      isRunning: (id) => running && id === 'doomed',
      onApplied: () => undefined,
    });

    // An edit's reload is asked for while doomed is idle, and has not run yet.
    await writeFile(configPath, 'models: []\n# edited\n');
    await until(() => pending.length === 1);
    running = true; // doomed is loaded
    await rm(configPath);
    // The held reload runs now and reads the file gone: the list drops both models while doomed runs…
    pending[0]!([]);
    running = false; // …and the controller's unload has begun before the result is read.
    await until(() => warnings.some((w) => w.includes('was deleted')));

    const line = warnings.find((w) => w.includes('was deleted'))!;
    expect(line).toContain('the models it defined are gone: doomed, idle');
    expect(line).toContain('unloading doomed, which was running');
    expect(line).not.toContain('idle, which');
  });

  it('names none when the models it dropped were not running', async () => {
    dir = await mkdtemp(join(tmpdir(), 'llmtray-catalog-reloads-'));
    const configPath = join(dir, 'config.yaml');
    await writeFile(configPath, 'models: []\n');
    const { catalog, pending } = heldCatalog([catalogModel('quiet')]);
    const warnings: string[] = [];
    reloads = startCatalogReloads({
      catalog,
      configPath,
      log: recordingLog(warnings),
      isRunning: () => false,
      onApplied: () => undefined,
    });
    await rm(configPath);
    await until(() => pending.length === 1);
    pending[0]!([]);
    await until(() => warnings.some((w) => w.includes('was deleted')));
    const line = warnings.find((w) => w.includes('was deleted'))!;
    expect(line).toContain('the models it defined are gone: quiet');
    expect(line).not.toContain('unloading');
  });
});
