// One daemon per data dir. Two daemons over the same dir would fight over the engine
// registry, the pins and the admin token, and each would think the other's engines orphans.
//
// The lock is a file created with O_EXCL holding our pid. A run that crashed leaves the file
// behind, so a lock whose pid is gone, or belongs to a process that is not llmtray (the pid
// was reused), is stale and taken over — a crash must never leave the user locked out.
import { openSync, writeSync, closeSync, readFileSync, unlinkSync } from 'node:fs';
import { isRunning, readCommandLine } from '../engine/supervisor/process-tree.js';
import { join } from 'node:path';
import { dataDirTakenMessage, type AdviceFace } from './startup-advice.js';

export interface InstanceLock {
  path: string;
  /** Removes the lock if it is still ours. Idempotent; never throws. */
  release(): void;
}

export interface LockProbe {
  /** True when a process with this pid exists (a zombie does not count). */
  alive(pid: number): Promise<boolean>;
  /** Its command line, or null when it cannot be read. */
  commandLine(pid: number): Promise<string | null>;
}

/** The supervisor's own process checks: /proc on Linux, `ps` on macOS and the BSDs. */
export const processProbe: LockProbe = {
  alive: (pid) => isRunning(pid),
  commandLine: (pid) => readCommandLine(pid),
};

export class InstanceLockedError extends Error {
  constructor(readonly lockPath: string, readonly pid: number, face: AdviceFace = 'cli') {
    super(dataDirTakenMessage(face, { pid, lockPath }));
    this.name = 'InstanceLockedError';
  }
}

/** Takes the lock for `dataDir`, or throws InstanceLockedError naming the running daemon, worded for `face`. */
export async function acquireInstanceLock(dataDir: string, probe: LockProbe = processProbe, pid = process.pid, face: AdviceFace = 'cli'): Promise<InstanceLock> {
  const path = join(dataDir, 'daemon.lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, `${pid}\n`);
      closeSync(fd);
      return {
        path,
        release() {
          try {
            if (readFileSync(path, 'utf8').trim() === String(pid)) unlinkSync(path);
          } catch {
            // Already gone: nothing to release.
          }
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    if (Number.isInteger(holder) && holder !== pid && (await probe.alive(holder)) && looksLikeLlmtray(await probe.commandLine(holder))) {
      throw new InstanceLockedError(path, holder, face);
    }
    // Stale: the holder is gone or is some other program that reused the pid.
    try {
      unlinkSync(path);
    } catch {
      // Another starter removed it first; the next attempt decides.
    }
  }
  throw new Error(`could not take the daemon lock ${path}: it keeps reappearing; is another llmtray starting right now?`);
}

/** A pid whose command line cannot be read (Windows) is assumed to be ours: refusing is the safe side. */
function looksLikeLlmtray(commandLine: string | null): boolean {
  return commandLine === null || /llmtray|cli\.js|electron/i.test(commandLine);
}
