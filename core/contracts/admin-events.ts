// What the admin event stream carries (SSE `/api/events`, the Electron push channel).
// The first event on every connection is a full snapshot; after that, a fresh snapshot on
// every change (throttled by the service) plus the few discrete events a person should be
// told about even when no window is open (desktop notifications).
import type { PullView } from './hub/pulls.js';
import type { Snapshot } from './snapshot.js';
import type { RequestRecord } from './requests/request-record.js';

export type AdminEvent =
  | { type: 'SnapshotUpdated'; snapshot: Snapshot }
  | { type: 'ModelQuarantined'; modelId: string; reason: string; at: number }
  | { type: 'ModelFellBack'; modelId: string; fallbackId: string; reason: string; at: number }
  /**
   * A model server's newest log lines, batched (a few per second at most) and rate-limited per
   * model. `first` is the position of lines[0] in the model's log (see log-lines.ts): a batch
   * that does not start where the previous one ended says how many lines it left out.
   */
  | { type: 'LogAppended'; modelId: string; first: number; lines: string[] }
  /**
   * A pull from the Hugging Face Hub started, progressed or ended (core/pull): its state at once,
   * its bytes at most once a second. Every surface that shows a download follows these.
   */
  | { type: 'PullProgressed'; pull: PullView }
  /** A request to a model ended: its record, as `GET /api/activity` lists it (the dashboard's live Activity table, `llmtray activity -f`). */
  | { type: 'RequestRecorded'; record: RequestRecord };
