// The record of running model servers on disk, so that the next run can end the ones a
// crashed run left behind.
//
// Why pid AND command line: pids are reused. After a reboot or a long uptime the pid of a
// dead llama-server may belong to the user's editor; killing by pid alone would end it. Each
// launch names its own randomly named API-key file in its argv, so a matching command line
// means "this very server" and nothing else. Only a hash of the command line is stored.
//
// Why an atomic rewrite of the whole file: a crash mid-write must leave either the old or
// the new list, never half of one — a torn file would hide exactly the orphans it exists for.
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../../common/atomic-file.js';

export interface EngineRecord {
  modelId: string;
  pid: number;
  /** sha256 of the argv joined by spaces (see commandLineHash). */
  commandHash: string;
  startedAt: number;
}

export interface OrphanSweep {
  /** Servers of an earlier run that were still running and were ended. */
  ended: EngineRecord[];
  /** Recorded pids now running something else (or unreadable): left alone. */
  leftAlone: EngineRecord[];
}

export interface OrphanSweepDeps {
  readCommandLine(pid: number): Promise<string | null>;
  isRunning(pid: number): Promise<boolean>;
  terminate(pid: number): Promise<unknown>;
}

/** The hash that identifies one launch's process: its command and arguments joined by spaces. */
export function commandLineHash(commandLine: string): string {
  return createHash('sha256').update(commandLine).digest('hex');
}

export class EngineRegistry {
  private records: EngineRecord[] = [];
  private writes: Promise<void> = Promise.resolve();

  constructor(readonly file: string) {}

  /** Records a running server. Resolves when the file holds it. */
  add(record: EngineRecord): Promise<void> {
    this.records = [...this.records.filter((r) => r.pid !== record.pid), record];
    return this.persist();
  }

  /** Forgets a server that has exited. Idempotent. Resolves when the file no longer holds it. */
  remove(pid: number): Promise<void> {
    this.records = this.records.filter((r) => r.pid !== pid);
    return this.persist();
  }

  /** Resolves when every change made so far is on disk (or failed to get there). */
  settled(): Promise<void> {
    return this.writes.catch(() => undefined);
  }

  /**
   * Ends the servers an earlier run recorded and left running, and starts this run's record
   * empty. A recorded pid is ended only when its live command line hashes to the recorded one.
   * Call once, before the first launch. Blocks until every orphan is gone (SIGTERM, then SIGKILL
   * after the grace `terminate` applies). A missing or unreadable file means there is nothing to sweep.
   */
  async sweepOrphans(deps: OrphanSweepDeps): Promise<OrphanSweep> {
    const earlier = await this.readFile();
    const sweep: OrphanSweep = { ended: [], leftAlone: [] };
    await Promise.all(
      earlier.map(async (record) => {
        if (!(await deps.isRunning(record.pid))) return;
        const commandLine = await deps.readCommandLine(record.pid);
        if (commandLine !== null && commandLineHash(commandLine) === record.commandHash) {
          await deps.terminate(record.pid);
          sweep.ended.push(record);
        } else {
          sweep.leftAlone.push(record);
        }
      }),
    );
    this.records = [];
    await this.persist();
    return sweep;
  }

  private async readFile(): Promise<EngineRecord[]> {
    const text = await readFile(this.file, 'utf8').catch(() => null);
    if (text === null) return [];
    try {
      const parsed: unknown = JSON.parse(text);
      const list = (parsed as { engines?: unknown }).engines;
      return Array.isArray(list) ? list.filter(isRecord) : [];
    } catch {
      return [];
    }
  }

  private persist(): Promise<void> {
    const snapshot = JSON.stringify({ engines: this.records }, null, 2);
    // Chained so that writes land in order; a failed write does not block the ones after it.
    this.writes = this.writes.catch(() => undefined).then(async () => {
      await mkdir(dirname(this.file), { recursive: true });
      await writeFileAtomic(this.file, snapshot);
    });
    return this.writes;
  }
}

function isRecord(value: unknown): value is EngineRecord {
  const r = value as Partial<EngineRecord> | null;
  return (
    typeof r === 'object' && r !== null &&
    typeof r.modelId === 'string' && Number.isInteger(r.pid) && (r.pid ?? 0) > 0 &&
    typeof r.commandHash === 'string' && typeof r.startedAt === 'number'
  );
}
