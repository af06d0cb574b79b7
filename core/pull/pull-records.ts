// What llmtray's pulls wrote into the Hugging Face cache, kept in DATA_DIR/pulls.json: so that a
// daemon killed mid-pull continues it when it starts again, and so that deleting a pulled model
// removes what llmtray wrote and nothing else (a blob that was already in the cache, a file the
// Python tools fetched into the same repo folder, stay).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';

export const PULLS_FILE_NAME = 'pulls.json';

export interface PulledFile {
  /** The path in the repo. */
  path: string;
  sha256: string;
  sizeBytes: number;
  /** The snapshot link llmtray made for it. */
  link: string;
  /** Whether llmtray fetched the blob (false: it was in the cache already, and is never removed by a delete). */
  ownBlob: boolean;
}

export interface PullRecord {
  /** The name it is served under, which is the pull's id. */
  id: string;
  /** The name as the person typed it, to start it again after a restart. */
  name: string;
  repo: string;
  /** 'pulling' until every file is linked, and a record still 'pulling' at start is continued; 'stopped': cancelled or failed, left for a person. */
  state: 'pulling' | 'done' | 'stopped';
  files: PulledFile[];
}

/** The records, keyed by id; one reader and writer (the pull manager), each write whole and atomic. */
export class PullRecords {
  private constructor(
    private readonly file: string,
    private readonly records: Map<string, PullRecord>,
  ) {}

  /** Reads DATA_DIR/pulls.json; a missing or unreadable file is no records. Never rejects. */
  static async open(dataDir: string): Promise<PullRecords> {
    const file = join(dataDir, PULLS_FILE_NAME);
    const parsed = await readFile(file, 'utf8').then((text) => JSON.parse(text) as unknown, () => []);
    const list = Array.isArray(parsed) ? (parsed as PullRecord[]).filter((r) => typeof r?.id === 'string' && Array.isArray(r.files)) : [];
    return new PullRecords(file, new Map(list.map((r) => [r.id.toLowerCase(), r])));
  }

  all(): PullRecord[] {
    return [...this.records.values()];
  }

  get(id: string): PullRecord | undefined {
    return this.records.get(id.toLowerCase());
  }

  /** Stores the record (replacing one with its id) and writes the file. Rejects when it cannot be written. */
  async put(record: PullRecord): Promise<void> {
    this.records.set(record.id.toLowerCase(), record);
    await this.save();
  }

  async remove(id: string): Promise<void> {
    this.records.delete(id.toLowerCase());
    await this.save();
  }

  private save(): Promise<unknown> {
    return writeFileAtomic(this.file, `${JSON.stringify(this.all(), null, 2)}\n`);
  }
}
