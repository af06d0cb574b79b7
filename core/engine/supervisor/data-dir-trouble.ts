// Why the data dir took no file, in the machine's terms, for a model's card and `llmtray
// status`: "the data dir's disk is full: 0 B free (/home/me/.local/share/llmtray)". Such a
// failure is the machine's, not the model's (FailureKind 'environment'): the model waits and
// comes back once there is room, where before five of them quarantined it for good.
import { statfs } from 'node:fs/promises';
import { formatBytes } from '../../contracts/format-bytes.js';

/** The condition behind a failed write into `dataDir`, or null when the error is no such condition. */
export async function dataDirTrouble(error: unknown, dataDir: string): Promise<string | null> {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    const free = await statfs(dataDir).then(
      (stats) => stats.bavail * stats.bsize,
      () => null,
    );
    const what = code === 'EDQUOT' ? "the data dir's disk quota is used up" : "the data dir's disk is full";
    return `${what}${free === null ? '' : `: ${formatBytes(free)} free`} (${dataDir})`;
  }
  if (code === 'EROFS') return `the data dir is read-only (${dataDir})`;
  if (code === 'EACCES' || code === 'EPERM') return `the data dir is not writable by llmtray (${dataDir})`;
  return null;
}
