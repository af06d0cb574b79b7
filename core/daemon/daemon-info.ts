// Where a running daemon can be reached, for the CLI: DATA_DIR/daemon.json. It holds no
// secret (the admin token has its own 0600 file); it is removed on a clean stop, and a stale
// one left by a crash is told apart by its pid (readDaemonInfo).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import { processProbe, type LockProbe } from './instance-lock.js';

export const DAEMON_INFO_FILE = 'daemon.json';

export interface DaemonInfo {
  pid: number;
  port: number;
  /** The OpenAI base URL, e.g. http://127.0.0.1:11435/v1. */
  endpoint: string;
  /** The admin API's origin, e.g. http://127.0.0.1:11435. */
  origin: string;
  startedAt: number;
}

export async function writeDaemonInfo(dataDir: string, info: DaemonInfo): Promise<void> {
  await writeFileAtomic(join(dataDir, DAEMON_INFO_FILE), `${JSON.stringify(info, null, 2)}\n`, { mode: 0o600 });
}

/** The running daemon's address, or an Error that says how to start one. */
export async function readDaemonInfo(dataDir: string, probe: Pick<LockProbe, 'alive'> = processProbe): Promise<DaemonInfo> {
  let text: string;
  try {
    text = await readFile(join(dataDir, DAEMON_INFO_FILE), 'utf8');
  } catch {
    throw new Error(`no llmtray daemon is running for ${dataDir} (start one with \`llmtray serve\`, or pass --data-dir)`);
  }
  const info = JSON.parse(text) as DaemonInfo;
  if (typeof info.origin !== 'string' || typeof info.port !== 'number') throw new Error(`${join(dataDir, DAEMON_INFO_FILE)} is not a daemon record; remove it and start the daemon again`);
  // A daemon that was killed (kill -9, a power cut) leaves its record behind. Its port may
  // since belong to another program, which would then be sent the admin token.
  if (typeof info.pid === 'number' && !(await probe.alive(info.pid))) {
    throw new Error(`no llmtray daemon is running for ${dataDir}: the one that wrote ${DAEMON_INFO_FILE} (pid ${info.pid}) has ended (start one with \`llmtray serve\`)`);
  }
  return info;
}
