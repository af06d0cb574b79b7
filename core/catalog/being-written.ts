// Discovered files still being written, named by the id each will get once it settles.
//
// Why: settling.ts holds a growing file back from the list (launched on half a file, it would
// fail and climb the recovery ladder for a fault that is no one's), but a client that asks for
// it by the name it will have (a download it just started, a copy it is waiting on) must hear
// that it is coming, not that it does not exist.
import type { DiscoveredFile } from './discovery.js';
import { assignUniqueIds } from './model-ids.js';

export interface FileBeingWritten {
  /** The id discovery will give it once it stops growing. */
  id: string;
  /** None: only a configured model has aliases. Here so that names find it as they find a model. */
  aliases: readonly string[];
  path: string;
  /** Its size so far (all its parts), bytes. */
  sizeBytes: number;
}

/**
 * The `growing` files that are not a configured model's, with the ids they will get: none of
 * `taken` (configured names and the ids already given, lowercase), a remembered one if free.
 * Pure.
 */
export function filesBeingWritten(
  growing: readonly DiscoveredFile[],
  configuredFiles: ReadonlySet<string>,
  taken: ReadonlySet<string>,
  remembered: ReadonlyMap<string, string>,
): FileBeingWritten[] {
  const files = growing.filter((f) => !configuredFiles.has(f.realPath) && !configuredFiles.has(f.path));
  const ids = assignUniqueIds(files, taken, remembered);
  return files.map((f) => ({ id: ids.get(f.path)!, aliases: [], path: f.path, sizeBytes: f.sizeBytes }));
}
