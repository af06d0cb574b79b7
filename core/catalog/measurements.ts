// What models really took once they ran, remembered across restarts.
//
// The estimate is a formula; the driver's per-process number (or llama-server's "buffer size"
// log lines) is the truth. The next estimate for a model is the larger of the two (DESIGN.md:
// learn from measurement). A measurement belongs to one definition: after the person changes
// the context or the file, the old number says nothing and is ignored.
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from '../common/atomic-file.js';
import { footprintAt, type FootprintEstimate } from '../policy/levels.js';

export const MEASUREMENTS_FILE_NAME = 'measurements.json';

interface Measurement {
  bytes: number;
  definitionHash: string;
  measuredAt: number;
}

interface MeasurementsFile {
  version: 1;
  models: Record<string, Measurement>;
}

export class MeasurementStore {
  private writes: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string,
    private readonly models: Map<string, Measurement>,
    private readonly now: () => number,
  ) {}

  /**
   * Loads the store from `file`. Blocks on one read. A missing file is an empty store; so is
   * a corrupt one (measurements are an optimisation: losing them costs one over-tight estimate,
   * refusing to start would cost the app).
   */
  static async open(file: string, now: () => number = Date.now): Promise<MeasurementStore> {
    const models = new Map<string, Measurement>();
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as Partial<MeasurementsFile>;
      for (const [id, m] of Object.entries(parsed.models ?? {})) {
        if (m && typeof m.bytes === 'number' && m.bytes > 0 && typeof m.definitionHash === 'string') models.set(id, m);
      }
    } catch {
      // missing or corrupt: start empty
    }
    return new MeasurementStore(file, models, now);
  }

  /** The measured bytes for a model's current definition, or undefined. Non-blocking. */
  measuredBytes(modelId: string, definitionHash: string): number | undefined {
    const m = this.models.get(modelId);
    return m && m.definitionHash === definitionHash ? m.bytes : undefined;
  }

  /**
   * Records a measurement (keeping the larger one for the same definition) and persists the
   * file atomically. Resolves when written; rejects with the I/O error if it cannot be (the
   * in-memory value is kept either way). Idempotent for equal inputs.
   */
  record(modelId: string, definitionHash: string, bytes: number): Promise<void> {
    if (!(bytes > 0)) return this.writes;
    const previous = this.measuredBytes(modelId, definitionHash) ?? 0;
    this.models.set(modelId, { bytes: Math.max(previous, Math.ceil(bytes)), definitionHash, measuredAt: this.now() });
    const snapshot: MeasurementsFile = { version: 1, models: Object.fromEntries(this.models) };
    // Serialised so two quick measurements cannot interleave their renames.
    this.writes = this.writes.catch(() => undefined).then(async () => {
      await mkdir(dirname(this.file), { recursive: true });
      await writeFileAtomic(this.file, `${JSON.stringify(snapshot, null, 2)}\n`);
    });
    return this.writes;
  }
}

/**
 * The estimate raised to a measurement of the whole process (model, draft, projector): the
 * missing bytes go to the compute term, the part of the formula with the least certainty,
 * so weights and KV per token (which the smaller-context level scales) stay as computed.
 */
export function withMeasurement(estimate: FootprintEstimate, measuredBytes: number | undefined): FootprintEstimate {
  if (measuredBytes === undefined) return estimate;
  const deficit = measuredBytes - footprintAt('full', estimate).deviceBytes;
  return deficit > 0 ? { ...estimate, computeBytes: estimate.computeBytes + deficit } : estimate;
}
