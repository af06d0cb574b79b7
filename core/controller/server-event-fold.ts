// Folds one lifecycle event of the supervisor (core/contracts/server-events.ts) into the
// model's record: the one place a server's life is learned. What runs is what these events
// said, never a snapshot compared with the last one, so a failure is counted once however many
// passes look.
import type { ServerEvent } from '../contracts/server-events.js';
import { assertNever } from '../contracts/assert-never.js';
import type { Log } from './effects.js';
import type { RecordStore } from './record-store.js';
import type { RecoveryLadder } from './recovery-ladder.js';

export interface FoldDeps {
  store: RecordStore;
  ladder: RecoveryLadder;
  log: Log;
  /** Asks for a pass. */
  trigger: () => void;
}

export function foldServerEvent(event: ServerEvent, { store, ladder, log, trigger }: FoldDeps): void {
  const record = store.recordFor(event.modelId);
  switch (event.type) {
    case 'ServerSpawned':
      store.serverSpawned(record, event.level, event.pid);
      store.refresh(record);
      return;
    case 'ServerReady':
      store.serverReady(record, event.level, event.pid);
      if (record.op?.kind === 'loading') store.endOp(record);
      // Ready is not yet healthy (DEFAULT_HEALTHY_AFTER_MS): a failing model keeps its ladder
      // until its server answers a request or stays ready through its trial.
      if (record.recovery.attempts > 0) ladder.startTrial(record, event.pid);
      log.info(`${event.modelId} is ready at the ${event.level} level`);
      store.refresh(record);
      trigger();
      return;
    case 'ServerStopped':
      store.serverEnded(record, event.pid);
      ladder.endTrial(event.modelId);
      store.refresh(record);
      trigger();
      return;
    case 'ServerExited': {
      const served = record.server?.pid === event.pid && record.server.served === true;
      store.serverEnded(record, event.pid);
      // Ends the launch's op: its rejection, arriving later, is then not a second failure.
      if (record.op?.kind === 'loading') store.endOp(record);
      ladder.endTrial(event.modelId);
      ladder.failed(record, event.level, event.kind, event.reason, !event.wasReady ? 'loading' : served ? 'serving' : 'unproven');
      trigger();
      return;
    }
    default:
      assertNever(event);
  }
}
