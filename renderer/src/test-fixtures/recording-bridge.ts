// A DashboardBridge that records what the dashboard asks of it and lets a test play the
// daemon: push events, drop and restore the connection. Not a module mock: the store is
// handed this object exactly as main.tsx hands it a real transport.
import type { AdminEvent } from '../../../core/contracts/admin-events.js';
import type { DashboardBridge } from '../../../core/contracts/bridge.js';
import { AdminRefusal, type AdminParams } from '../../../core/contracts/admin-routes.js';
import type { HubModelHit, PullView, RepoOffer } from '../../../core/contracts/pulls.js';
import type { CommandResult, ModelCommand, ModelLogsResponse } from '../../../core/contracts/commands.js';
import type { Snapshot } from '../../../core/contracts/snapshot.js';

export class RecordingBridge implements DashboardBridge {
  readonly commands: { command: ModelCommand; modelId: string }[] = [];
  readonly logRequests: string[] = [];
  /** Each model's whole log from position 0: getLogs answers all of it, with `next` its length. */
  logs: Record<string, string[]> = {};
  /** What runCommand answers; a function to vary by call. */
  answer: (command: ModelCommand, modelId: string) => Promise<CommandResult> = async (command, modelId) => ({
    ok: true,
    message: `${command} ${modelId}: done`,
  });
  private listener: ((event: AdminEvent) => void) | null = null;
  private onConnection: ((connected: boolean) => void) | null = null;

  constructor(private current: Snapshot | null = null) {}

  async getSnapshot(): Promise<Snapshot> {
    if (this.current === null) throw new Error('no snapshot yet');
    return this.current;
  }

  runCommand({ id: modelId, command }: AdminParams<'runCommand'>): Promise<CommandResult> {
    this.commands.push({ command, modelId });
    return this.answer(command, modelId);
  }

  async getLogs({ id }: AdminParams<'getLogs'>): Promise<ModelLogsResponse> {
    this.logRequests.push(id);
    const lines = [...(this.logs[id] ?? [])];
    return { modelId: id, lines, next: lines.length };
  }

  // The dashboard offers no pulls yet (its Add model is the next step): these refuse as a daemon with no such pull would.
  async startPull({ name }: AdminParams<'startPull'>): Promise<PullView> {
    throw new AdminRefusal(409, 'no_pulls', `The recording bridge does not pull ${name}.`);
  }

  async listPulls(): Promise<PullView[]> {
    return [];
  }

  async cancelPull({ name }: AdminParams<'cancelPull'>): Promise<PullView> {
    throw new AdminRefusal(404, 'no_such_pull', `No pull of ${name} is running.`);
  }

  async deletePull({ name }: AdminParams<'deletePull'>): Promise<{ removed: string[] }> {
    throw new AdminRefusal(404, 'not_pulled', `llmtray pulled no model ${name}.`);
  }

  async searchHub(): Promise<HubModelHit[]> {
    return [];
  }

  async offerRepo({ repo }: AdminParams<'offerRepo'>): Promise<RepoOffer> {
    throw new AdminRefusal(409, 'no_pulls', `The recording bridge does not browse ${repo}.`);
  }

  subscribe(listener: (event: AdminEvent) => void, onConnection?: (connected: boolean) => void): () => void {
    this.listener = listener;
    this.onConnection = onConnection ?? null;
    if (this.current !== null) listener({ type: 'SnapshotUpdated', snapshot: this.current });
    return () => {
      this.listener = null;
      this.onConnection = null;
    };
  }

  /** Delivers an event as the daemon would; a SnapshotUpdated also becomes the current snapshot. */
  emit(event: AdminEvent): void {
    if (event.type === 'SnapshotUpdated') this.current = event.snapshot;
    this.listener?.(event);
  }

  setConnected(connected: boolean): void {
    this.onConnection?.(connected);
  }

  get subscribed(): boolean {
    return this.listener !== null;
  }
}
