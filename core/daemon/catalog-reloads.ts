// The daemon's reloads of the catalog: on every change the watch sees in the config file and the
// model dirs, and again when a file still being written may have stopped growing. One path for
// all of them, so each reload says the same things: a config that is not applied and why, and a
// config file that was deleted, with the models that went with it.
import { existsSync } from 'node:fs';
import type { Catalog } from '../catalog/catalog.js';
import { watchCatalog, type CatalogWatcher } from '../catalog/watch-catalog.js';
import type { Log } from '../controller/effects.js';
import { errorMessage } from '../contracts/error-message.js';

export interface CatalogReloadsOptions {
  catalog: Catalog;
  configPath: string;
  log: Log;
  /** Whether a model's server runs now; asked as the catalog drops a model, so that a deleted config names the ones it unloads. */
  isRunning(modelId: string): boolean;
  /** After a reload that applied the config: `listen` or the budget may have changed with no model changing. */
  onApplied(): void;
}

export interface CatalogReloads {
  /** Stops the watch and a pending recheck. Idempotent; non-blocking. */
  close(): void;
}

/** Starts watching the config and the model dirs, and reloads the catalog on what they say. Non-blocking. */
export function startCatalogReloads(options: CatalogReloadsOptions): CatalogReloads {
  const { catalog, configPath, log } = options;
  let watcher: CatalogWatcher | null = null;
  let watchedPaths = '';
  let recheck: NodeJS.Timeout | undefined;
  let closed = false;
  let configPresent = existsSync(configPath);
  // The models the file defined when it was last seen: other paths reload the catalog too (a
  // learned CPU buffer re-prices it), and one of them may already have dropped the file's models
  // by the time this one notices the file is gone.
  const configuredIds = (): string[] => catalog.models().filter((m) => m.source === 'config').map((m) => m.id);
  let configuredWhilePresent = configuredIds();
  // Which dropped models were running at the moment the catalog dropped them: the controller
  // begins their unload on that change, so by the time a reload's result is read they may be
  // stopping already, and a reload's start (queued behind others) may predate their load.
  let listedIds = new Set(catalog.models().map((m) => m.id));
  const runningWhenDropped = new Set<string>();
  const unsubscribeChanges = catalog.onDidChange((models) => {
    const now = new Set(models.map((m) => m.id));
    for (const id of listedIds) if (!now.has(id) && options.isRunning(id)) runningWhenDropped.add(id);
    for (const id of now) runningWhenDropped.delete(id);
    listedIds = now;
  });

  // Re-armed only when the folders or the configured model files change: closing the watch drops the events it has pending,
  // and a config edit pending while a download's rescan changed the list would be lost.
  const watchDirs = (): void => {
    const dirs = catalog.config().modelDirs;
    const files = catalog.config().models.map((model) => model.path);
    if (closed || JSON.stringify([dirs, files]) === watchedPaths) return;
    watchedPaths = JSON.stringify([dirs, files]);
    watcher?.close();
    watcher = watchCatalog({
      configPath,
      modelDirs: dirs,
      modelFiles: files,
      onChange: () => reload(),
      onError: (error) => log.warn(`watching models and config: ${error.message}`),
    });
  };

  const reload = (): void => {
    const configuredBefore = configuredWhilePresent;
    // reload() resolves its failures; the catch is for a listener or a bug that throws anyway,
    // which must be a log line, not an unhandled rejection that ends the daemon.
    catalog
      .reload()
      .then((result) => {
        if (closed) return;
        const present = existsSync(configPath);
        if (configPresent && !present && result.ok) logDeletedConfig(configuredBefore);
        // A deleted file's config stays through its grace (a failed reload): the deletion is logged when it applies.
        if (result.ok || present) configPresent = present;
        if (present && result.ok) configuredWhilePresent = configuredIds();
        // "The last good one" only where one was read: after no file, or a deleted one, the defaults stay.
        const stays = catalog.configInForce() === 'file' ? 'the last good one stays' : 'the defaults stay (no good config was read from the file)';
        if (!result.ok) for (const error of result.errors) log.warn(`config not applied, ${stays}: ${error}`);
        else options.onApplied();
        watchDirs();
        scheduleRecheck(result.ok ? null : (result.recheckInMs ?? null));
      })
      .catch((error: unknown) => log.error(`reloading the catalog failed: ${errorMessage(error)}`));
  };

  // A file being written sends events until its last write, and nothing after: the rescan that
  // lists it once it has stopped growing is ours to schedule. So is the one that ends a deleted
  // config's grace (`configInMs`).
  const scheduleRecheck = (configInMs: number | null = null): void => {
    clearTimeout(recheck);
    recheck = undefined;
    const settleInMs = catalog.settleRecheckInMs();
    const inMs = settleInMs === null ? configInMs : configInMs === null ? settleInMs : Math.min(settleInMs, configInMs);
    if (inMs === null) return;
    recheck = setTimeout(reload, inMs);
    recheck.unref();
  };

  const logDeletedConfig = (configuredBefore: readonly string[]): void => {
    const still = new Set(catalog.models().map((m) => m.id));
    const gone = configuredBefore.filter((id) => !still.has(id));
    const unloaded = gone.filter((id) => runningWhenDropped.has(id));
    for (const id of gone) runningWhenDropped.delete(id);
    const models = gone.length === 0 ? 'it defined no model' : `the models it defined are gone: ${gone.join(', ')}`;
    const servers = unloaded.length === 0 ? '' : `; unloading ${unloaded.join(', ')}, which ${unloaded.length === 1 ? 'was' : 'were'} running`;
    log.warn(`${configPath} was deleted: running on the defaults (discovery only) now; ${models}${servers}. Restore the file to bring them back.`);
  };

  watchDirs();
  scheduleRecheck();
  return {
    close() {
      closed = true;
      unsubscribeChanges();
      clearTimeout(recheck);
      watcher?.close();
      watcher = null;
    },
  };
}
