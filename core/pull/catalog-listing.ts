// When a finished pull is served: the catalog rescans until it lists the name. A file just
// renamed into the cache is one the catalog holds back until its size has held for a moment
// (core/catalog/settling.ts: a download still being written is no model), so one rescan is not
// enough: it says when to look again, and this looks again then.
import type { Catalog } from '../catalog/catalog.js';
import type { Clock } from '../common/clock.js';

/** How many rescans before giving up: each waits at most the settle time, so this is seconds. */
const MAX_RESCANS = 10;

/** Rescans until `name` resolves; resolves whether it does. Blocks on the catalog's reloads; never rejects. */
export async function whenListed(catalog: Pick<Catalog, 'reload' | 'resolve' | 'settleRecheckInMs'>, name: string, clock: Clock): Promise<boolean> {
  for (let rescan = 0; rescan < MAX_RESCANS; rescan++) {
    await catalog.reload();
    if (catalog.resolve(name) !== undefined) return true;
    const again = catalog.settleRecheckInMs();
    if (again === null) return false;
    await new Promise<void>((done) => clock.setTimeout(done, again));
  }
  return catalog.resolve(name) !== undefined;
}
