// Follows the admin event stream (`/api/events`, SSE with the admin token) of the daemon that
// is alive, and keeps what the leak and pin checks need from its snapshots: every engine pid and
// port that ever served, each model's engine pids in the order they served per daemon life, and
// every recovery kind the dashboard showed. The servers' log lines on the same stream go to
// `onLogBatch` (the soak reads evictions from them: server-log.ts), so one connection serves both.
import type { Snapshot } from '../../core/contracts/snapshot.js';
import { readEventStream } from '../../core/admin-client/event-stream-reader.js';
import type { DaemonProcess } from '../support/daemon-process.js';
import type { LogBatch } from './server-log.js';

export interface RecoverySeen {
  at: number;
  life: number;
  modelId: string;
  kind: string;
  attempts: number;
}

export class SnapshotRecorder {
  readonly enginePids = new Set<number>();
  readonly enginePorts = new Set<number>();
  /** life → model → the pids of its engines in the order they served. */
  readonly servingPids = new Map<number, Map<string, number[]>>();
  readonly recoveries: RecoverySeen[] = [];
  snapshots = 0;
  private following: AbortController | null = null;
  private readonly lastRecovery = new Map<string, string>();

  /** `onLogBatch` hears every batch of server log lines of daemon number `life`, in stream order. */
  constructor(private readonly onLogBatch: (life: number, batch: LogBatch) => void = () => {}) {}

  /**
   * Follows `daemon` (number `life`) until `stop()`, the next `follow`, or its exit; reconnects
   * while it runs. Not after its exit: its successor listens on the same port, and its snapshots
   * counted as this life's would look like a pinned model restarted within one life.
   */
  follow(daemon: DaemonProcess, life: number): void {
    this.stop();
    const abort = new AbortController();
    this.following = abort;
    void daemon.exited.then(() => abort.abort());
    void (async () => {
      while (!abort.signal.aborted) {
        try {
          const res = await daemon.api('/api/events', { signal: abort.signal });
          if (!res.ok || res.body === null) throw new Error(`/api/events answered ${res.status}`);
          await readEventStream(res.body, (message) => {
            if (message.type === 'LogAppended') this.onLogBatch(life, JSON.parse(message.data) as LogBatch);
            if (message.type !== 'SnapshotUpdated') return;
            this.record(life, (JSON.parse(message.data) as { snapshot: Snapshot }).snapshot);
          });
        } catch {
          // The daemon went away (its kill) or the stream was stopped; try again while following.
        }
        if (!abort.signal.aborted) await new Promise((done) => setTimeout(done, 200));
      }
    })();
  }

  stop(): void {
    this.following?.abort();
    this.following = null;
  }

  /** Folds one snapshot in; public so a snapshot fetched from /api/state can be folded in too. */
  record(life: number, snapshot: Snapshot): void {
    this.snapshots++;
    let byModel = this.servingPids.get(life);
    if (byModel === undefined) this.servingPids.set(life, (byModel = new Map()));
    for (const model of snapshot.models) {
      if (model.upstream !== null) {
        this.enginePids.add(model.upstream.pid);
        this.enginePorts.add(Number(new URL(model.upstream.baseUrl).port));
        const pids = byModel.get(model.id) ?? [];
        if (pids.at(-1) !== model.upstream.pid) pids.push(model.upstream.pid);
        byModel.set(model.id, pids);
      }
      const { kind, attempts } = model.status.recovery;
      const key = `${life}/${model.id}`;
      if (kind !== 'none' && this.lastRecovery.get(key) !== `${kind}/${attempts}`) {
        this.recoveries.push({ at: Date.now(), life, modelId: model.id, kind, attempts });
      }
      this.lastRecovery.set(key, `${kind}/${attempts}`);
    }
  }
}
