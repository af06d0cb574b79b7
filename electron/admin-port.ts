// The slice of core/admin's AdminService that the Electron main process uses.
//
// Why a port and not the class: main is an adapter, and its tests drive it with plain fakes;
// declaring only what it calls keeps those fakes four methods long and lets the daemon hand
// over the real AdminService unchanged (it satisfies this interface structurally).
import type { AdminEvent } from '../core/contracts/admin-events.js';
import type { CommandResult, ModelCommand } from '../core/contracts/commands.js';
import type { LogTail } from '../core/contracts/log-lines.js';
import type { Snapshot } from '../core/contracts/snapshot.js';

/** What `logs` answers: the lines of a known model with the position after them, or the sentence naming the known ones. */
export type AdminLogsLookup = ({ found: true } & LogTail) | { found: false; message: string };

export interface AdminPort {
  /** The current snapshot. Never blocks; throws only on a bug in the snapshot builder. */
  snapshot(): Snapshot;
  /**
   * Runs a command for a model named by id or alias. Never rejects: an unknown model or a
   * failing action resolves `{ ok: false }` with a sentence. Idempotent where the command is
   * (pin, unpin).
   */
  run(command: ModelCommand, modelId: string): Promise<CommandResult>;
  /** A model's recent server log, oldest first, and where its LogAppended batches continue. Never blocks. */
  logs(modelId: string): AdminLogsLookup;
  /**
   * Delivers a SnapshotUpdated at once, then every event, synchronously, until the returned
   * function is called (idempotent). The listener must not block.
   */
  subscribe(listener: (event: AdminEvent) => void): () => void;
}
